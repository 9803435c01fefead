"""The unique-ids checker (Maelstrom's workloads.md, "Workload: Unique-ids", which checks with
Jepsen's unique-ids checker): no id is handed out twice.

Ops: `generate`, whose ok completion's value is the id (any JSON value; 1 and 1.0 and true are
told apart, as JSON tells them apart). Anomaly `duplicate` (fails): an id that more than one ok
generate returned, with every op that returned it. Counts as Jepsen's: attempted, acknowledged,
duplicated, and the range of ids (least and greatest, numbers before strings before anything else).
With no ok generate the verdict is unknown.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.anomalies import anomaly_report, hashable

from jepsen_py.history import INVOKE, OK, Op
from jepsen_py.protocols import Test

FAILING = frozenset({"duplicate"})


def _typed(v: Any) -> Hashable:
    """An id as a set member that keeps JSON's types apart (Python has 1 == 1.0 == True)."""
    return (type(v).__name__, hashable(v))


def _order(v: Any) -> tuple[int, Any]:
    """A total order over JSON values, for the range: numbers, then strings, then the rest as JSON."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    return (2, json.dumps(v, sort_keys=True, default=str))


class UniqueIdsChecker:
    """Every id an ok generate returned is unique."""

    def __init__(self, *, name: str = "unique-ids", f: str = "generate") -> None:
        self.name = name
        self.f = f

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        ops = [op for op in history if op.is_client and op.f == self.f]
        attempted = sum(1 for op in ops if op.type == INVOKE)
        seen: dict[Hashable, list[Op]] = defaultdict(list)
        for op in ops:
            if op.type == OK:
                seen[_typed(op.value)].append(op)
        acknowledged = sum(len(v) for v in seen.values())
        anomalies = []
        duplicated: list[dict[str, Any]] = []
        for returned in seen.values():
            if len(returned) > 1:
                v = returned[0].value
                duplicated.append({"id": v, "count": len(returned)})
                anomalies.append({"kind": "duplicate", "id": v, "count": len(returned),
                                  "ops": [op.index for op in returned],
                                  "explanation": f"id {v!r} was returned by {len(returned)} ok generates "
                                                 f"(ops {', '.join(str(op.index) for op in returned)})"})
        ids = [r[0].value for r in seen.values()]
        out: dict[str, Any] = {
            "valid": not anomalies,
            "attempted_count": attempted,
            "acknowledged_count": acknowledged,
            "duplicated_count": len(duplicated),
            "duplicated": sorted(duplicated, key=lambda d: -d["count"])[:100],
            "range": [min(ids, key=_order), max(ids, key=_order)] if ids else None,
            **anomaly_report(anomalies, FAILING),
        }
        if acknowledged == 0:
            out.update(valid="unknown", unknown_reason=f"no ok generate among {attempted}: no id to check")
        return out
