"""The queue checker (Jepsen's total-queue, per key): after a final drain, every acknowledged
enqueue came out and nothing came out that went in nowhere; by default, each came out once.

Ops: `enqueue` (value: the element, unique) and `dequeue` (ok value: the element taken, or None
when the queue was empty), on `key` (None for a single queue).

  lost          fails: an acknowledged enqueue no ok dequeue returned (the workload drains the
                queue after heal, so everything left in it is dequeued)
  unexpected    fails: a dequeue returned an element no enqueue tried
  aborted-read  fails: a dequeue returned an element whose enqueue failed (certainly not done)
  duplicated    an element dequeued more than once: fails when `exactly_once` (the default),
                reported only with `exactly_once=False`

Jepsen's total-queue reports duplicates without failing, since at-least-once delivery is what
most queues promise; this checker fails them by default because the queue workload's contract is
exactly-once delivery, and `--workload-option exactly_once=false` gives Jepsen's verdict for a
system that redelivers. Lost data fails the run either way. Enqueues that ended info and were
dequeued are counted as recovered. Order is not checked: queues that promise FIFO order can add the
linearizability checker with the fifo-queue model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.anomalies import anomaly_report, hashable

from jepsen_py.history import FAIL, OK, Op, pairs
from jepsen_py.protocols import Test

ALWAYS_FAILING = frozenset({"lost", "unexpected", "aborted-read"})


class QueueChecker:
    """Lost, duplicated, aborted and unexpected elements of a queue, per key."""

    def __init__(self, *, name: str = "queue", enqueue_f: str = "enqueue",
                 dequeue_f: str = "dequeue", exactly_once: bool = True) -> None:
        self.name = name
        self.enqueue_f = enqueue_f
        self.dequeue_f = dequeue_f
        self.exactly_once = exactly_once

    def failing(self) -> frozenset[str]:
        return ALWAYS_FAILING | ({"duplicated"} if self.exactly_once else frozenset())

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        enqueued: dict[Hashable, dict[Hashable, tuple[str, list[int]]]] = defaultdict(dict)
        dequeued: dict[Hashable, dict[Hashable, list[list[int]]]] = defaultdict(lambda: defaultdict(list))
        for p in pairs(op for op in history if isinstance(op.process, int)):
            key = hashable(p.invoke.key)
            ops = [p.invoke.index] + ([p.complete.index] if p.complete is not None else [])
            if p.invoke.f == self.enqueue_f:
                enqueued[key][hashable(p.invoke.value)] = (p.type, ops)
            elif p.invoke.f == self.dequeue_f and p.type == OK and p.complete is not None \
                    and p.complete.value is not None:
                dequeued[key][hashable(p.complete.value)].append(ops)
        anomalies: list[dict[str, Any]] = []
        counts = {"acknowledged": 0, "dequeued": 0, "recovered": 0}
        for key in {*enqueued, *dequeued}:
            ins, outs = enqueued.get(key, {}), dequeued.get(key, {})
            counts["dequeued"] += sum(len(v) for v in outs.values())
            for v, (typ, ops) in ins.items():
                if typ == OK:
                    counts["acknowledged"] += 1
                    if v not in outs:
                        anomalies.append({"kind": "lost", "key": key, "element": v, "ops": ops,
                                          "explanation": f"enqueue of {v!r} was acknowledged "
                                                         f"but no dequeue returned it"})
                elif typ == FAIL and v in outs:
                    anomalies.append({"kind": "aborted-read", "key": key, "element": v,
                                      "ops": [*ops, *outs[v][0]],
                                      "explanation": f"enqueue of {v!r} failed (op {ops[-1]}), "
                                                     f"certainly not done, yet a dequeue returned it "
                                                     f"(op {outs[v][0][-1]})"})
                elif v in outs:
                    counts["recovered"] += 1
            for v, seen in outs.items():
                if v not in ins:
                    anomalies.append({"kind": "unexpected", "key": key, "element": v, "ops": seen[0],
                                      "explanation": f"dequeue returned {v!r}, which no enqueue tried"})
                if len(seen) > 1:
                    anomalies.append({"kind": "duplicated", "key": key, "element": v,
                                      "ops": [i for ops in seen for i in ops],
                                      "explanation": f"{v!r} was dequeued {len(seen)} times"})
        report = anomaly_report(anomalies, self.failing())
        kinds = report["anomaly_counts"]
        return {
            "valid": not report["failing_kinds"],
            "exactly_once": self.exactly_once,
            **counts,
            **{k: kinds.get(k, 0) for k in ("lost", "duplicated", "unexpected")},
            "aborted_reads": kinds.get("aborted-read", 0),
            **report,
        }
