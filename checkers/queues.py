"""The queue checker (Jepsen's total-queue, per key): after a final drain, every acknowledged
enqueue came out exactly once and nothing came out that went in nowhere.

Ops: `enqueue` (value: the element, unique) and `dequeue` (ok value: the element taken, or None
when the queue was empty), on `key` (None for a single queue).

  lost        an acknowledged enqueue no ok dequeue returned (the workload drains the queue after
              heal, so everything left in it is dequeued)
  duplicated  an element dequeued more than once
  unexpected  a dequeue returned an element no enqueue tried

Enqueues that ended info and were dequeued are counted as recovered. Order is not checked: queues
that promise FIFO order can add the linearizability checker with the fifo-queue model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.sets import MAX_ANOMALIES, hashable

from jepsen_py.history import OK, Op, pairs
from jepsen_py.protocols import Test


class QueueChecker:
    """Lost, duplicated and unexpected elements of a queue, per key."""

    def __init__(self, *, name: str = "queue", enqueue_f: str = "enqueue",
                 dequeue_f: str = "dequeue") -> None:
        self.name = name
        self.enqueue_f = enqueue_f
        self.dequeue_f = dequeue_f

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
        counts = {"acknowledged": 0, "dequeued": 0, "lost": 0, "duplicated": 0, "unexpected": 0,
                  "recovered": 0}
        for key in {*enqueued, *dequeued}:
            ins, outs = enqueued.get(key, {}), dequeued.get(key, {})
            counts["dequeued"] += sum(len(v) for v in outs.values())
            for v, (typ, ops) in ins.items():
                if typ == OK:
                    counts["acknowledged"] += 1
                    if v not in outs:
                        counts["lost"] += 1
                        anomalies.append({"kind": "lost", "key": key, "ops": ops,
                                          "explanation": f"enqueue of {v!r} was acknowledged "
                                                         f"but no dequeue returned it"})
                elif v in outs:
                    counts["recovered"] += 1
            for v, seen in outs.items():
                if v not in ins:
                    counts["unexpected"] += 1
                    anomalies.append({"kind": "unexpected", "key": key, "ops": seen[0],
                                      "explanation": f"dequeue returned {v!r}, which no enqueue tried"})
                if len(seen) > 1:
                    counts["duplicated"] += 1
                    anomalies.append({"kind": "duplicated", "key": key,
                                      "ops": [i for ops in seen for i in ops],
                                      "explanation": f"{v!r} was dequeued {len(seen)} times"})
        anomalies.sort(key=lambda a: a["ops"][0] if a["ops"] else -1)
        return {
            "valid": not anomalies,
            **counts,
            "anomalies": anomalies[:MAX_ANOMALIES],
            **({"anomalies_truncated": len(anomalies) - MAX_ANOMALIES}
               if len(anomalies) > MAX_ANOMALIES else {}),
        }
