"""Transactional histories for the Elle checker's tests: a builder for hand-made timelines, a serial
reference execution (valid under every model) and the anomaly patterns injected into it."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jepsen_py.history import Op

Mops = list[list[Any]]


def _invoke_value(mops: Mops) -> Mops:
    return [[f, k, None] if f == "r" else [f, k, v] for f, k, v in mops]


@dataclass
class Hist:
    """Ops in the order they are added; `txn` is invoke + completion at once (serial)."""

    ops: list[Op] = field(default_factory=list)

    def invoke(self, p: int, mops: Mops) -> None:
        self.ops.append(Op(len(self.ops), len(self.ops), "invoke", p, "txn", None, _invoke_value(mops)))

    def complete(self, p: int, mops: Mops, kind: str = "ok") -> None:
        value = mops if kind == "ok" else _invoke_value(mops)
        self.ops.append(Op(len(self.ops), len(self.ops), kind, p, "txn", None, value))

    def txn(self, p: int, mops: Mops, kind: str = "ok") -> None:
        self.invoke(p, mops)
        self.complete(p, mops, kind)

    def concurrent(self, *txns: tuple[int, Mops] | tuple[int, Mops, str]) -> None:
        """All invoked, then all completed: no real-time order among them."""
        for t in txns:
            self.invoke(t[0], t[1])
        for t in txns:
            self.complete(t[0], t[1], t[2] if len(t) > 2 else "ok")


def serial_history(rng: random.Random, n: int, keys: int, workload: str, *, procs: int = 5,
                   p_fail: float = 0.05, p_info: float = 0.05, max_mops: int = 4,
                   max_writes_per_key: int = 0) -> list[Op]:
    """Transactions applied one at a time in a serial order, each inside its own [invoke,
    complete] interval, spread over processes with overlapping intervals: strict serializable,
    so valid under every model. Fail ones are not applied; info ones are applied or not.
    With `max_writes_per_key`, a key retires after that many appends (as Elle's generator does)."""
    state: dict[Any, Any] = {}
    counter = 0
    retired = 0
    writes: dict[Any, int] = {}
    events: list[tuple[float, int, str, int, Mops, str]] = []
    free_at: dict[int, float] = {}
    next_proc = 0
    for i in range(n):
        mops: Mops = []
        for _ in range(rng.randint(1, max_mops)):
            k = retired + rng.randrange(keys)
            if rng.random() < 0.5:
                mops.append(["r", k, None])
            else:
                counter += 1
                mops.append(["append" if workload == "list-append" else "w", k, counter])
        kind = "fail" if rng.random() < p_fail else "info" if rng.random() < p_info else "ok"
        applied = kind == "ok" or (kind == "info" and rng.random() < 0.5)
        done: Mops = []
        for f, k, v in mops:
            if f == "r":
                cur = state.get(k)
                done.append([f, k, list(cur) if workload == "list-append" and cur is not None
                             else [] if workload == "list-append" else cur])
            else:
                if applied:
                    if workload == "list-append":
                        state[k] = (*state.get(k, ()), v)
                        writes[k] = writes.get(k, 0) + 1
                    else:
                        state[k] = v
                done.append([f, k, v])
        if max_writes_per_key and any(c >= max_writes_per_key for k, c in writes.items() if k == retired):
            retired += 1
        commit = i * 10.0
        start, end = commit - rng.uniform(0, 40), commit + rng.uniform(0.1, 40)
        free = [p for p, t in free_at.items() if t < start]
        if free and (len(free_at) >= procs or rng.random() < 0.9):
            p = rng.choice(sorted(free))
        else:
            p = next_proc
            next_proc += 1
        free_at[p] = end if kind != "info" else float("inf")
        events.append((start, 0, "invoke", p, mops, kind))
        events.append((end, 1, kind, p, done, kind))
    events.sort(key=lambda e: (e[0], e[1]))
    ops: list[Op] = []
    for _, _, typ, p, value, kind in events:
        if typ != "invoke" and kind != "ok":
            value = _invoke_value(value)
        ops.append(Op(len(ops), len(ops), typ, p, "txn", None, value))
    return ops


# Anomaly patterns on fresh keys ("a:x", ...) and fresh processes, all transactions concurrent
# unless the kind is about real time or process order. Each is the smallest history showing it.

def pattern(kind: str, workload: str, tag: str = "a", p0: int = 1000) -> Hist:
    h = Hist()
    x, y, z, w = (f"{tag}:{n}" for n in "xyzw")
    ap = "append" if workload == "list-append" else "w"

    def rd(k: str, *vals: int) -> list[Any]:
        if workload == "list-append":
            return ["r", k, list(vals)]
        return ["r", k, vals[-1] if vals else None]

    p = [p0 + i for i in range(6)]
    if kind == "G0":
        h.concurrent((p[0], [[ap, x, 1], [ap, y, 2]]), (p[1], [[ap, x, 2], [ap, y, 1]]),
                     (p[2], [rd(x, 1, 2), rd(y, 1, 2)]))
    elif kind == "G1c":
        h.concurrent((p[0], [[ap, x, 1], rd(y, 1)]), (p[1], [[ap, y, 1], rd(x, 1)]))
    elif kind == "G-single-item":
        h.concurrent((p[0], [rd(x), rd(y, 1)]), (p[1], [[ap, x, 1], [ap, y, 1]]), (p[2], [rd(x, 1)]))
    elif kind == "G-nonadjacent-item":
        h.concurrent((p[0], [rd(x), rd(w, 1)]), (p[1], [[ap, x, 1], [ap, y, 1]]),
                     (p[2], [rd(y, 1), rd(z)]), (p[3], [[ap, z, 1], [ap, w, 1]]),
                     (p[4], [rd(x, 1), rd(z, 1)]))
    elif kind == "G2-item":
        h.concurrent((p[0], [rd(x), [ap, y, 1]]), (p[1], [rd(y), [ap, x, 1]]),
                     (p[2], [rd(x, 1), rd(y, 1)]))
    elif kind == "G0-realtime":
        h.txn(p[0], [[ap, x, 1]])
        h.txn(p[1], [[ap, x, 2]])
        h.txn(p[2], [rd(x, 2, 1)])
    elif kind == "G1c-realtime":
        h.txn(p[0], [[ap, x, 1], rd(y, 1)])
        h.txn(p[1], [[ap, y, 1]])
        h.txn(p[2], [rd(x, 1)])
    elif kind == "G-single-item-realtime":
        h.txn(p[0], [[ap, x, 1]])
        h.txn(p[1], [rd(x)])
        h.txn(p[2], [rd(x, 1)])
    elif kind == "G-single-item-process":
        h.txn(p[0], [[ap, x, 1]])
        h.txn(p[0], [rd(x)])
        h.txn(p[1], [rd(x, 1)])
    elif kind == "G0-process":
        h.txn(p[0], [[ap, x, 1]])
        h.txn(p[0], [[ap, x, 2]])
        h.txn(p[1], [rd(x, 2, 1)])
    elif kind == "G1c-process":
        h.txn(p[0], [[ap, x, 1], rd(y, 1)])
        h.txn(p[0], [[ap, y, 1]])
        h.txn(p[1], [rd(x, 1)])
    elif kind in ("G-nonadjacent-item-process", "G-nonadjacent-item-realtime"):
        # T1 -rw-> T2 -(process|realtime)-> T3 -rw-> T4 -wr-> T1; T1 and T4 overlap everything
        p3 = p[2] if kind == "G-nonadjacent-item-process" else p[3]
        t1, t4 = [rd(x), rd(z, 1)], [[ap, y, 1], [ap, z, 1]]
        h.invoke(p[0], t1)
        h.invoke(p[1], t4)
        h.txn(p[2], [[ap, x, 1]])
        h.txn(p3, [rd(y)])
        h.complete(p[0], t1)
        h.complete(p[1], t4)
        h.txn(p[4], [rd(x, 1), rd(y, 1)])
    elif kind in ("G2-item-process", "G2-item-realtime"):
        # T1 -rw-> T2 -rw-> T3 -(process|realtime)-> T1; T2 overlaps everything
        p1 = p[1] if kind == "G2-item-process" else p[2]
        t2 = [[ap, x, 1], rd(y)]
        h.invoke(p[0], t2)
        h.txn(p[1], [[ap, y, 1]])
        h.txn(p1, [rd(x)])
        h.complete(p[0], t2)
        h.txn(p[4], [rd(x, 1), rd(y, 1)])
    elif kind == "G1a":
        h.concurrent((p[0], [[ap, x, 1]], "fail"), (p[1], [rd(x, 1)]))
    elif kind == "G1b":
        h.concurrent((p[0], [[ap, x, 1], [ap, x, 2]]), (p[1], [rd(x, 1)]))
    elif kind == "dirty-update":
        h.concurrent((p[0], [[ap, x, 1]], "fail"), (p[1], [[ap, x, 2]]), (p[2], [rd(x, 1, 2)]))
    elif kind == "lost-update":
        h.concurrent((p[0], [rd(x), [ap, x, 1]]), (p[1], [rd(x), [ap, x, 2]]), (p[2], [rd(x, 1, 2)]))
    elif kind == "duplicate-elements":
        h.concurrent((p[0], [[ap, x, 1]]), (p[1], [rd(x, 1, 1)]))
    elif kind == "incompatible-order":
        h.concurrent((p[0], [[ap, x, 1]]), (p[1], [[ap, x, 2]]), (p[2], [rd(x, 1, 2)]),
                     (p[3], [rd(x, 2, 1)]))
    elif kind == "internal":
        h.concurrent((p[0], [[ap, x, 1]]), (p[1], [rd(x, 1), [ap, x, 2], rd(x, 1)]))
    elif kind == "garbage-read":
        h.concurrent((p[0], [[ap, x, 1]]), (p[1], [rd(x, 9)]))
    elif kind == "future-read":
        h.concurrent((p[0], [rd(x, 1), [ap, x, 1]]))
    else:
        raise ValueError(kind)
    return h


CYCLE_BASES = ("G0", "G1c", "G-single-item", "G-nonadjacent-item", "G2-item")
LIST_KINDS = (*CYCLE_BASES, *(b + "-process" for b in CYCLE_BASES), *(b + "-realtime" for b in CYCLE_BASES),
              "G1a", "G1b", "dirty-update", "lost-update",
              "duplicate-elements", "incompatible-order", "internal", "garbage-read", "future-read")


def inject(base: list[Op], extra: list[Op], rng: random.Random) -> list[Op]:
    """`extra`'s ops, in their order, spliced into `base` at one random point, renumbered."""
    at = rng.randrange(len(base) + 1)
    out = [*base[:at], *extra, *base[at:]]
    return [Op(i, i, o.type, o.process, o.f, o.key, o.value) for i, o in enumerate(out)]


def write_jsonl(path: Path, ops: list[Op]) -> Path:
    """The ops as a history.jsonl, for the command line's tests."""
    fields = ("index", "time", "type", "process", "f", "value")
    path.write_text("".join(json.dumps({k: getattr(o, k) for k in fields}) + "\n" for o in ops))
    return path
