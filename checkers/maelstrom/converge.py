"""A grow-only set every node must converge on: Maelstrom's g-set and broadcast workloads
(workloads.md, "Workload: G-set" and "Workload: Broadcast"), which Maelstrom checks with Jepsen's
set-full, not linearizable.

Two judgements over one history:

- checkers.sets' set-full (`SetChecker(linearizable=False)`), as Maelstrom's: lost, unexpected,
  duplicate and aborted elements fail; stale reads are reported only (an eventually consistent set
  may serve an old view for a while).
- the final reads (after the test's quiet period, one on every node): each must hold every element
  that was acknowledged or seen by any read, whichever node served it. Anomaly `not-converged`
  (fails): a node whose final read misses one; set-full alone would miss it when a later final read
  on another node saw the element.

Final reads are the reads whose invocation carries meta `final: true` (the workloads' final
generators mark them); a history with none marked (an imported one) uses each node's last ok read
invoked after every add had completed, if any.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.anomalies import anomaly_report, hashable, shown
from jepsen_py.checkers.sets import ALWAYS_FAILING, SetChecker

from jepsen_py.history import FAIL, OK, Op, Pair, pairs
from jepsen_py.protocols import Test

FAILING = ALWAYS_FAILING | {"not-converged"}


class ConvergenceChecker:
    """set-full (not linearizable) plus: every node's final read holds every known element."""

    def __init__(self, *, name: str, add_f: str, read_f: str = "read") -> None:
        self.name = name
        self.add_f = add_f
        self.read_f = read_f

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        ours = [op for op in history if op.is_client and op.f in (self.add_f, self.read_f)]
        full = SetChecker(name=self.name, add_f=self.add_f, read_f=self.read_f,
                          linearizable=False).check(test, ours)
        ps = pairs(ours)
        finals = final_reads(ps, self.read_f, self.add_f)
        known, missing_by_node, anomalies = self._converged(ps, finals)
        counts = Counter(full["anomaly_counts"])
        counts.update(a["kind"] for a in anomalies)
        report = anomaly_report([*full["anomalies"], *anomalies], FAILING)
        report["anomaly_counts"] = dict(sorted(counts.items()))
        report["failing_kinds"] = sorted(k for k in counts if k in FAILING)
        report["reported_kinds"] = sorted(k for k in counts if k not in FAILING)
        valid: bool | str = full["valid"]
        if anomalies:
            valid = False
        out = {**full, **report, "valid": valid, "final_reads": len(finals),
               "final_nodes": sorted(finals), "known_elements": len(known),
               "not_converged": {n: len(m) for n, m in sorted(missing_by_node.items())}}
        if valid is not False and not finals:
            out.update(valid="unknown", unknown_reason="no final read on any node: convergence unverified")
        return out

    def _converged(self, ps: list[Pair], finals: dict[str, Pair]
                   ) -> tuple[set[Hashable], dict[str, list[Hashable]], list[dict[str, Any]]]:
        """The known elements (ok adds and tried elements any read saw, failed adds aside) and each
        final read that misses some."""
        known: set[Hashable] = set()
        failed: set[Hashable] = set()
        tried = {hashable(p.invoke.value) for p in ps if p.invoke.f == self.add_f}
        for p in ps:
            if p.complete is None:
                continue
            if p.invoke.f == self.add_f:
                if p.complete.type == OK:
                    known.add(hashable(p.invoke.value))
                elif p.complete.type == FAIL:
                    failed.add(hashable(p.invoke.value))
            elif p.complete.type == OK:
                known.update(hashable(x) for x in (p.complete.value or []))
        known = (known & tried) - failed  # unexpected and aborted elements: set-full judges those
        missing_by_node: dict[str, list[Hashable]] = {}
        anomalies: list[dict[str, Any]] = []
        for node, p in sorted(finals.items()):
            assert p.complete is not None
            seen = {hashable(x) for x in (p.complete.value or [])}
            missing = sorted(known - seen, key=repr)
            if not missing:
                continue
            missing_by_node[node] = missing
            anomalies.append({"kind": "not-converged", "node": node, "missing": missing[:20],
                              "missing_count": len(missing), "ops": [p.invoke.index, p.complete.index],
                              "explanation": f"the final read of {node} (op {p.invoke.index}) misses "
                                             f"{len(missing)} known element(s): {shown(missing)}"})
        return known, missing_by_node, anomalies


def _node(p: Pair) -> str:
    node = (p.complete.node if p.complete is not None else None) or p.invoke.node
    return node if node is not None else f"process {p.invoke.process}"


def final_reads(ps: list[Pair], read_f: str, add_f: str) -> dict[str, Pair]:
    """Each node's last ok final read (module docstring: marked, else after every add ended)."""
    reads = [p for p in ps if p.invoke.f == read_f and p.complete is not None and p.complete.type == OK]
    marked = [p for p in reads if p.invoke.meta.get("final") is True]
    if not marked:
        ends = [p.complete.index if p.complete is not None else None for p in ps if p.invoke.f == add_f]
        if any(e is None for e in ends):
            return {}
        quiet = max((e for e in ends if e is not None), default=-1)
        marked = [p for p in reads if p.invoke.index > quiet]
    out: dict[str, Pair] = {}
    for p in marked:
        out[_node(p)] = p
    return out


__all__ = ["FAILING", "ConvergenceChecker", "final_reads"]
