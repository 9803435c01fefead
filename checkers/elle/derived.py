"""Register version orders derived from the dependency graph (beyond Elle; sound under every model).

A register's read does not say which version came before it, so with Elle's defaults two writes
to a key are ordered only by the initial state. The dependency graph itself can order them: if
T2 (which wrote x=2) reaches T1 (which wrote x=1) through ww and wr edges, then x=2 precedes x=1.
Were it the other way round, T1 -ww-> T2 would close a cycle of ww and wr edges alone, a G0 or
G1c that every model from read committed up prohibits. So each transaction that read x=2 did not
see T1's write: an rw edge from each reader of x=2 to T1. A cycle found through such an edge
names an anomaly (G-single-item, G2-item, ...) whose every prohibiting model also prohibits G1c,
so the models it rules out are ruled out either way; the explanation says the order was derived.

Only ww and wr paths are used: a path through an rw edge orders T2 before T1 under serializability
but not under snapshot isolation, and its cycles would need a name that says so (exact checking,
checkers/elle/exact.py, decides those). The derived edges are rw, which no ww/wr path uses, so one
pass is the fixpoint. Of the writers of x that T2 reaches, only the earliest ones get an edge: a
later one is reached from an earlier one by ww/wr edges, and a cycle through the edge to it is a
cycle through the edge to the earlier one with the same kinds of edges.

Reachability is a bit set per strongly connected component of the ww/wr graph, over the writers
of keys that can have a derived order, numbered in topological order (so a set's lowest bit is its
earliest writer); histories too large for one pass are done in slices of writers.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.graph import RW, WR, WW, EdgeList
from jepsen_py.checkers.elle.rwregister import external
from jepsen_py.checkers.elle.txn import Txn
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from jepsen_py.history import FAIL

MAX_BITS = 1 << 31  # components x writers per slice: reachability sets of at most 256 MiB


def derive(txns: Sequence[Txn], edges: EdgeList, deadline: Deadline) -> int:
    """Adds the derived rw edges to `edges`; returns how many."""
    writers, readers = _versions(txns)
    keys = [k for k, ws in writers.items() if len(ws) > 1 and any(v in readers.get(k, {}) for v in ws)]
    if not keys:
        return 0
    src, dst, kind = edges.arrays()
    n = len(txns)
    keep = ((kind == WW) | (kind == WR)) & (src < n) & (dst < n)
    src, dst = src[keep], dst[keep]
    if len(src) == 0:
        return 0
    deadline.check("derived version orders")
    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    ncomp, label = connected_components(m, directed=True, connection="strong")
    cs, cd = label[src], label[dst]
    between = cs != cd
    succ = _successors(cs[between], cd[between], ncomp)
    topo = _topological(succ, ncomp)
    rank = np.empty(ncomp, dtype=np.int64)
    rank[topo] = np.arange(ncomp)
    cyclic = np.bincount(label, minlength=ncomp) > 1
    targets = sorted({w for k in keys for w in writers[k].values()}, key=lambda w: int(rank[label[w]]))
    step = max(1, MAX_BITS // max(ncomp, 1))
    added = 0
    for lo in range(0, len(targets), step):
        added += _slice(targets[lo:lo + step], keys, writers, readers, label, succ, topo, cyclic,
                        txns, edges, deadline)
    return added


def _slice(targets: list[int], keys: list[Hashable], writers: dict[Hashable, dict[Any, int]],
           readers: dict[Hashable, dict[Any, list[int]]], label: np.ndarray, succ: list[list[int]],
           topo: list[int], cyclic: np.ndarray, txns: Sequence[Txn], edges: EdgeList,
           deadline: Deadline) -> int:
    """Derived edges to the writers in `targets` (bit i is targets[i])."""
    lab = label.tolist()
    own = [0] * len(succ)  # component -> bits of its own targets
    for i, w in enumerate(targets):
        own[lab[w]] |= 1 << i
    reach = [0] * len(succ)  # component -> targets reachable by one or more ww/wr edges
    for n, c in enumerate(reversed(topo)):
        if n % 4096 == 0:
            deadline.check("derived version orders")
        r = own[c] if cyclic[c] else 0
        for s in succ[c]:
            r |= reach[s] | own[s]
        reach[c] = r
    bit = {w: 1 << i for i, w in enumerate(targets)}
    written = {k: {w: v for v, w in writers[k].items()} for k in keys}
    added = 0
    for k in keys:
        mask = 0
        for w in writers[k].values():
            mask |= bit.get(w, 0)
        if not mask:
            continue
        read = readers.get(k, {})
        for v2, w2 in writers[k].items():
            rs = read.get(v2)
            if not rs:
                continue
            later = reach[lab[w2]] & mask & ~bit.get(w2, 0)
            while later:
                low = later & -later
                w1 = targets[low.bit_length() - 1]
                why = (k, v2, written[k][w1], txns[w2].name())
                for r in rs:
                    if r != w1:
                        edges.src.append(r)
                        edges.dst.append(w1)
                        edges.kind.append(RW)
                        edges.why.append(why)
                        added += 1
                later &= ~(low | reach[lab[w1]])
    return added


def _versions(txns: Sequence[Txn]) -> tuple[dict[Hashable, dict[Any, int]],
                                            dict[Hashable, dict[Any, list[int]]]]:
    """Per key: each written version -> its writer; each version -> its ok readers.
    External values only (a transaction's last write of a key, its first read before writing it),
    as the register inference uses them; values are unique per key there."""
    writers: dict[Hashable, dict[Any, int]] = {}
    readers: dict[Hashable, dict[Any, list[int]]] = {}
    for t in txns:
        if t.type == FAIL:
            continue
        read, wrote = external(t)
        for k, v in wrote.items():
            writers.setdefault(k, {})[v] = t.id
        for k, v in read.items():
            if v is not None:
                readers.setdefault(k, {}).setdefault(v, []).append(t.id)
    return writers, readers


def _successors(a: np.ndarray, b: np.ndarray, n: int) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(n)]
    for x, y in set(zip(a.tolist(), b.tolist(), strict=True)):
        out[x].append(y)
    return out


def _topological(succ: list[list[int]], n: int) -> list[int]:
    """Kahn's order of the component graph (a DAG)."""
    indeg = [0] * n
    for ys in succ:
        for y in ys:
            indeg[y] += 1
    todo = [c for c in range(n) if indeg[c] == 0]
    out: list[int] = []
    while todo:
        c = todo.pop()
        out.append(c)
        for y in succ[c]:
            indeg[y] -= 1
            if indeg[y] == 0:
                todo.append(y)
    return out
