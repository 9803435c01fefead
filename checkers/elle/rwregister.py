"""Read-write register inference: version orders from what is known, non-cycle anomalies, edges.

Every write to a key is unique, so a read names its writer. Unlike a list, a register's read says
nothing about earlier versions, so the version order of a key is assembled from facts:
  - the initial state (nil) comes before every written version;
  - writes follow reads: a transaction that read v1 and then wrote v2 put v2 after v1;
  - with `process_keys`, a process's successive transactions see versions in order (the last
    version a transaction read or wrote comes before the first one a later transaction of the same
    process reads or writes), which holds only under models with session guarantees.
Facts that order a key's versions in a cycle are reported as cyclic-versions (read uncommitted
prohibits it: a version order is total).
Edges: ww writer(v1) -> writer(v2), wr writer(v) -> reader of v, rw reader of v1 -> writer(v2),
for each known v1 < v2 (the order's direct facts, not their transitive closure).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.explain import show
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import RW, WR, WW, EdgeList
from jepsen_py.checkers.elle.txn import READ, WRITE, Txn, index_writes

from jepsen_py.history import FAIL, OK


def infer(txns: Sequence[Txn], edges: EdgeList, found: Found, deadline: Deadline,
          process_keys: bool = False) -> None:
    def refuse(t: Txn, k: Hashable, v: Any, other: int | None) -> str | None:
        if other is None and v is not None:
            return None
        return (f"op {t.index}: write of {show(k)}={show(v)} "
                + (f"also in op {txns[other].index}" if other is not None else "(nil)")
                + "; rw-register needs unique, non-nil values per key")

    writer, failed, intermediate = index_writes(txns, WRITE, refuse)
    # per key: version -> later versions (direct facts); readers of each version
    after: dict[Hashable, dict[Any, set[Any]]] = {}
    readers: dict[tuple[Hashable, Any], list[int]] = {}
    last_seen: dict[Any, dict[Hashable, Any]] = {}  # process -> key -> last version its txns saw
    for n, t in enumerate(txns):
        if n % 8192 == 0:
            deadline.check("rw-register reads")
        if t.type == FAIL:
            continue
        ext_read: dict[Hashable, Any] = {}
        known: dict[Hashable, Any] = {}
        final: dict[Hashable, Any] = {}
        first: dict[Hashable, Any] = {}
        for i, (f, k, v) in enumerate(t.mops):
            if f == WRITE:
                known[k] = final[k] = v
                first.setdefault(k, v)
                continue
            if t.type != OK:
                continue  # an indeterminate transaction's reads are unknown
            if k in known:
                if v != known[k]:
                    found.add("internal", {"key": k, "txn": t.describe(), "expected": known[k], "read": v,
                                           "explanation": f"{t.name()} read {show(k)}={show(v)} after its "
                                                          f"own write or read of {show(known[k])}"})
                continue
            known[k] = v
            first.setdefault(k, v)
            ext_read[k] = v
            if any(f2 == WRITE and k2 == k and v2 == v for f2, k2, v2 in t.mops[i + 1:]):
                found.add("future-read", {"key": k, "txn": t.describe(),
                                          "explanation": f"{t.name()} read {show(k)}={show(v)}, a value it "
                                                         f"writes only later"})
                continue
            if v is not None:
                readers.setdefault((k, v), []).append(t.id)
        for k, v in ext_read.items():
            if k in final:  # writes follow reads: what it read precedes what it left
                after.setdefault(k, {}).setdefault(v, set()).add(final[k])
        if process_keys and t.type == OK:
            seen = last_seen.setdefault(t.process, {})
            for k, v in first.items():
                if k in seen and seen[k] != v:
                    after.setdefault(k, {}).setdefault(seen[k], set()).add(v)
            for k, v in known.items():
                seen[k] = v
        for k in ext_read:
            if ext_read[k] is None:
                readers.setdefault((k, None), []).append(t.id)
    _nonversion_anomalies(txns, readers, writer, failed, intermediate, found)
    _lost_updates(txns, found)
    for k, order in after.items():
        _cyclic_versions(k, order, found)
    # the initial state precedes every written version
    for (k, v) in writer:
        after.setdefault(k, {}).setdefault(None, set()).add(v)
    for n, (k, order) in enumerate(after.items()):
        if n % 1024 == 0:
            deadline.check("rw-register version orders")
        for v1, later in order.items():
            w1 = writer.get((k, v1))
            rs = readers.get((k, v1), ())
            for v2 in later:
                w2 = writer.get((k, v2))
                if w2 is None or v1 == v2:
                    continue
                if w1 is not None:
                    edges.add(w1, w2, WW, k, v1, v2)
                for r in rs:
                    edges.add(r, w2, RW, k, v1, v2)
    for (k, v), rs in readers.items():
        w = writer.get((k, v))
        if w is not None:
            for r in rs:
                edges.add(w, r, WR, k, v, v)


def _nonversion_anomalies(txns: Sequence[Txn], readers: dict[tuple[Hashable, Any], list[int]],
                          writer: dict[tuple[Hashable, Any], int], failed: dict[tuple[Hashable, Any], int],
                          intermediate: dict[tuple[Hashable, Any], int], found: Found) -> None:
    for (k, v), rs in readers.items():
        if v is None:
            continue
        r = txns[rs[0]]
        if (k, v) in failed:
            w = txns[failed[(k, v)]]
            found.add("G1a", {"key": k, "value": v, "reader": r.describe(), "writer": w.describe(),
                              "explanation": f"{r.name()} read {show(k)}={show(v)}, written by {w.name()}, "
                                             f"which failed"})
        elif (k, v) not in writer:
            found.add("garbage-read", {"key": k, "value": v, "txn": r.describe(),
                                       "explanation": f"{r.name()} read {show(k)}={show(v)}, which no "
                                                      f"transaction wrote"})
        elif (k, v) in intermediate:
            w = txns[writer[(k, v)]]
            others = [x for x in rs if x != w.id]
            if others:
                r = txns[others[0]]
                found.add("G1b", {"key": k, "value": v, "reader": r.describe(), "writer": w.describe(),
                                  "explanation": f"{r.name()} read {show(k)}={show(v)}, an intermediate "
                                                 f"write: {w.name()} wrote {show(k)} again afterwards"})


def _cyclic_versions(k: Hashable, order: dict[Any, set[Any]], found: Found) -> None:
    """A version order with a cycle is no order: the facts that built it contradict each other.
    Iterative depth-first search; the first cycle found is reported."""
    state: dict[Any, int] = {}  # 1 on the stack, 2 done
    for root in order:
        if root in state:
            continue
        stack: list[tuple[Any, list[Any]]] = [(root, list(order.get(root, ())))]
        path = [root]
        state[root] = 1
        while stack:
            v, todo = stack[-1]
            if not todo:
                state[v] = 2
                stack.pop()
                path.pop()
                continue
            w = todo.pop()
            if state.get(w) == 1:
                cycle = [*path[path.index(w):], w]
                found.add("cyclic-versions", {
                    "key": k, "versions": cycle,
                    "explanation": f"the facts order {show(k)}'s versions in a cycle: "
                                   + " < ".join(show(x) for x in cycle)})
                return
            if w not in state:
                state[w] = 1
                path.append(w)
                stack.append((w, list(order.get(w, ()))))


def _lost_updates(txns: Sequence[Txn], found: Found) -> None:
    """Two committed transactions that read the same version of a key and both wrote it."""
    by_version: dict[tuple[Hashable, Any], int] = {}
    for t in txns:
        if t.type != OK:
            continue
        state: dict[Hashable, Any] = {}  # key -> the external read's value, or _WROTE once written
        for f, k, v in t.mops:
            if f == READ:
                state.setdefault(k, v)
                continue
            r = state.get(k, _WROTE)
            state[k] = _WROTE
            if r is _WROTE:
                continue
            other = by_version.setdefault((k, r), t.id)
            if other != t.id:
                o = txns[other]
                found.add("lost-update", {
                    "key": k, "value": r, "txns": [o.describe(), t.describe()],
                    "explanation": f"{o.name()} and {t.name()} both read {show(k)}={show(r)} "
                                   f"and both wrote {show(k)}"})


_WROTE = object()
