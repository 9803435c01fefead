"""Partition leadership as the nodes describe it: one leader per partition and epoch, agreed by all.

A describe_topic answer names, for every partition, its leader and leader epoch. Two answers that
give the same (topic, partition, epoch) different leaders are a split brain in the metadata (two
controllers assigning leadership independently). And epochs only grow: a describe that began after
another one finished must not show an older epoch for the same partition; if it does, the node that
answered served stale metadata (attributed to it, its role and term, as the staleness report does).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from jepsen_py.history import OK, Op, pairs
from jepsen_py.protocols import Test

MAX_LISTED = 200


class LeadersChecker:
    name = "leaders"

    def __init__(self, describe_f: str = "describe") -> None:
        self.describe_f = describe_f

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        # (topic, partition) -> [(invoke time, complete time, epoch, leader, pair)]
        seen: dict[tuple[str, int], list[tuple[int, int, int, Any, Any]]] = defaultdict(list)
        reads = 0
        for p in pairs(history):
            if p.invoke.f != self.describe_f or p.type != OK or p.complete is None:
                continue
            v = p.complete.value
            if not isinstance(v, dict):
                continue
            reads += 1
            for part in v.get("partitions") or []:
                if not isinstance(part, dict) or not isinstance(part.get("leader_epoch"), int):
                    continue
                k = (str(v.get("name", p.invoke.key)), int(part.get("partition", 0)))
                seen[k].append((p.invoke.time, p.complete.time, part["leader_epoch"], part.get("leader"), p))

        splits: list[dict[str, Any]] = []
        regressions: list[dict[str, Any]] = []
        for (topic, part), obs in seen.items():
            by_epoch: dict[int, dict[Any, list[int]]] = defaultdict(lambda: defaultdict(list))
            for _, _, epoch, leader, p in obs:
                by_epoch[epoch][leader].append(p.complete.index)
            for epoch, leaders in sorted(by_epoch.items()):
                if len(leaders) > 1:
                    splits.append({"topic": topic, "partition": part, "epoch": epoch,
                                   "leaders": {str(ldr): idx[:5] for ldr, idx in leaders.items()}})
            # Real-time order: the highest epoch seen by reads that completed before each read began.
            done = sorted(obs, key=lambda o: o[1])
            best_epoch = -1
            best_op: Any = None
            j = 0
            for inv_t, _, epoch, leader, p in sorted(obs, key=lambda o: o[0]):
                while j < len(done) and done[j][1] < inv_t:
                    if done[j][2] > best_epoch:
                        best_epoch, best_op = done[j][2], done[j][4]
                    j += 1
                if epoch < best_epoch:
                    c = p.complete
                    regressions.append({
                        "topic": topic, "partition": part, "epoch": epoch, "leader": leader,
                        "newer_epoch": best_epoch, "newer_seen_by": best_op.complete.index,
                        "read": [p.invoke.index, c.index], "node": c.node,
                        "role": c.meta.get("role"), "term": c.meta.get("term")})

        anomalies = [
            {"kind": "split-leader", "ops": [i for idx in s["leaders"].values() for i in idx][:10],
             "explanation": f"{s['topic']}/{s['partition']} epoch {s['epoch']} has leaders "
                            f"{', '.join(sorted(s['leaders']))}"}
            for s in splits[:MAX_LISTED]
        ] + [
            {"kind": "stale-read", "ops": [*r["read"], r["newer_seen_by"]],
             "explanation": f"{r['node']} ({r['role']}, term {r['term']}) described {r['topic']}/"
                            f"{r['partition']} at epoch {r['epoch']} after epoch {r['newer_epoch']} "
                            "had already been read"}
            for r in regressions[:MAX_LISTED]
        ]
        return {
            "valid": not splits and not regressions,
            "describes_checked": reads,
            "partitions_seen": len(seen),
            "split_leaders": splits[:MAX_LISTED],
            "split_leader_count": len(splits),
            "epoch_regressions": regressions[:MAX_LISTED],
            "epoch_regression_count": len(regressions),
            "epoch_regressions_by_node": _count_by_node(regressions),
            "anomalies": anomalies,
        }


def _count_by_node(regressions: list[dict[str, Any]]) -> dict[str, int]:
    """How many stale describes each node served (who to blame, as the staleness report says)."""
    out: dict[str, int] = defaultdict(int)
    for r in regressions:
        out[str(r["node"])] += 1
    return dict(out)
