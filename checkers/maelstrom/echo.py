"""The echo checker (Maelstrom's workloads.md, "Workload: Echo"): every ok echo returned exactly
what it sent.

Ops: `echo`, the invoke's value the payload sent, the ok completion's value the payload the reply
carried. Anomaly `mismatch` (fails): an ok reply whose payload differs. With no ok echo at all the
verdict is unknown: nothing was verified.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jepsen_py.checkers.anomalies import anomaly_report

from jepsen_py.history import OK, Op, pairs
from jepsen_py.protocols import Test

FAILING = frozenset({"mismatch"})


class EchoChecker:
    """Every ok echo's reply equals its request."""

    def __init__(self, *, name: str = "echo", f: str = "echo") -> None:
        self.name = name
        self.f = f

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        anomalies: list[dict[str, Any]] = []
        oks = attempted = 0
        for p in pairs(op for op in history if op.is_client and op.f == self.f):
            attempted += 1
            if p.complete is None or p.complete.type != OK:
                continue
            oks += 1
            sent, got = p.invoke.value, p.complete.value
            if got != sent or type(got) is not type(sent):
                anomalies.append({"kind": "mismatch", "ops": [p.invoke.index, p.complete.index],
                                  "sent": sent, "received": got,
                                  "explanation": f"echo op {p.invoke.index} sent {sent!r} and its ok "
                                                 f"reply (op {p.complete.index}) carried {got!r}"})
        report = anomaly_report(anomalies, FAILING)
        out: dict[str, Any] = {"valid": not anomalies, "attempted": attempted, "ok": oks,
                               "mismatched": len(anomalies), **report}
        if oks == 0:
            out.update(valid="unknown", unknown_reason=f"no ok echo among {attempted}: nothing verified")
        return out
