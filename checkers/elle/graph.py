"""The dependency graph: transactions (and real-time points) as nodes, typed edges, and its
strongly connected components.

Edges are collected in flat lists while inference runs, then turned into numpy arrays once:
duplicate (from, to) pairs merge into one edge whose kind is a bit set. Components come from
scipy's iterative strong-connectivity labelling, so a history of millions of transactions never
recurses. Only components with more than one node can hold a cycle (there are no self-edges);
`cyclic` returns those, each with its adjacency restricted to the component, and `restrict` the
components again when only some edge kinds count (a G0 cycle lies inside a component of ww
edges), computed once per set of kinds over the cyclic part of the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

WW, WR, RW, PROCESS, REALTIME = 1, 2, 4, 8, 16
DATA = WW | WR | RW
KIND_NAMES = {WW: "ww", WR: "wr", RW: "rw", PROCESS: "process", REALTIME: "realtime"}


@dataclass(slots=True)
class EdgeList:
    """Edges as they are inferred. Data edges carry why they exist in `why` (parallel to src):
    (key, value seen or written by the source, value seen or written by the target). Hot loops
    append to the four lists directly; `chunks` holds edges made in bulk as numpy arrays."""

    nodes: int
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    why: list[tuple[Any, Any, Any] | None] = field(default_factory=list)
    chunks: list[tuple[np.ndarray, np.ndarray, int]] = field(default_factory=list)
    _index: dict[tuple[int, int, int], int] | None = None

    def add(self, a: int, b: int, kind: int, key: Any = None, va: Any = None, vb: Any = None) -> None:
        if a == b:
            return
        self.src.append(a)
        self.dst.append(b)
        self.kind.append(kind)
        self.why.append((key, va, vb) if kind & DATA else None)

    def add_many(self, src: np.ndarray, dst: np.ndarray, kind: int) -> None:
        keep = src != dst
        self.chunks.append((src[keep].astype(np.int64), dst[keep].astype(np.int64), kind))

    def new_nodes(self, count: int) -> int:
        """Numbers `count` auxiliary nodes; returns the first."""
        first = self.nodes
        self.nodes += count
        return first

    def why_of(self, a: int, b: int, kind: int,
               among: np.ndarray | None = None) -> tuple[Any, Any, Any] | None:
        """The first reason recorded for a data edge a -kind-> b. An index is built on first use,
        over the edges whose source is in `among` (the nodes that can be on a cycle) if given."""
        if self._index is None:
            self._index = {}
            src = np.asarray(self.src, dtype=np.int64)
            rows = np.flatnonzero(np.isin(src, among)) if among is not None else np.arange(len(src))
            for i in rows[::-1].tolist():
                self._index[(self.src[i], self.dst[i], self.kind[i])] = i
        i = self._index.get((a, b, kind))
        return self.why[i] if i is not None else None

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src = [np.asarray(self.src, dtype=np.int64)] + [c[0] for c in self.chunks]
        dst = [np.asarray(self.dst, dtype=np.int64)] + [c[1] for c in self.chunks]
        kind = [np.asarray(self.kind, dtype=np.int64)] + [np.full(len(c[0]), c[2], dtype=np.int64)
                                                          for c in self.chunks]
        return np.concatenate(src), np.concatenate(dst), np.concatenate(kind)


@dataclass(slots=True)
class Component:
    """One strongly connected component: its nodes and, per node, (to, kind bits) edges inside it.
    `parent` is the label of the whole graph's component that holds it."""

    nodes: list[int]
    out: dict[int, list[tuple[int, int]]]
    parent: int = -1


@dataclass(slots=True)
class Cyclic:
    """The part of the graph that can hold cycles: the edges inside nontrivial strongly connected
    components (duplicates merged, kinds OR-ed), every node's component label, the components."""

    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    labels: np.ndarray
    comps: list[Component]


def edge_counts(edges: EdgeList) -> dict[str, int]:
    k = edges.arrays()[2]
    return {name: int((k == bit).sum()) for bit, name in KIND_NAMES.items() if (k == bit).any()}


def cyclic(edges: EdgeList) -> Cyclic:
    """Strongly connected components with more than one node (largest first), and their edges."""
    n = edges.nodes
    src, dst, kind = edges.arrays()
    empty = np.zeros(0, dtype=np.int64)
    if len(src) == 0 or n == 0:
        return Cyclic(empty, empty, empty, empty, [])
    labels, src, dst, kind = _inside(src, dst, kind, n)
    comps = _group(src, dst, kind, labels[src] if len(src) else empty)
    return Cyclic(src, dst, kind, labels, comps)


def restrict(cyc: Cyclic, allowed: int) -> dict[int, list[Component]]:
    """The components when only edges of the `allowed` kinds count (kinds masked to them), by the
    label of the whole graph's component they lie in: a cycle of those kinds lies inside one of
    these, so a search need not look elsewhere."""
    kind = cyc.kind & allowed
    keep = kind != 0
    if not keep.any():
        return {}
    src, dst, kind = cyc.src[keep], cyc.dst[keep], kind[keep]
    names, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
    s2, d2 = inverse[:len(src)], inverse[len(src):]
    labels, s2, d2, kind = _inside(s2, d2, kind, len(names))
    out: dict[int, list[Component]] = {}
    for c in _group(names[s2], names[d2], kind, labels[s2]):
        c.parent = int(cyc.labels[c.nodes[0]])
        out.setdefault(c.parent, []).append(c)
    return out


def _inside(src: np.ndarray, dst: np.ndarray, kind: np.ndarray,
            n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Component labels of nodes 0..n-1, and the edges inside components of two or more nodes,
    duplicates merged into one edge whose kind is the OR of theirs."""
    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    ncomp, labels = connected_components(m, directed=True, connection="strong")
    sizes = np.bincount(labels, minlength=ncomp)
    inside = (labels[src] == labels[dst]) & (sizes[labels[src]] > 1)
    src, dst, kind = src[inside], dst[inside], kind[inside]
    if len(src) == 0:
        return labels, src, dst, kind
    pair = src * n + dst
    order = np.argsort(pair, kind="stable")
    pair, kind = pair[order], kind[order]
    starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
    merged = np.bitwise_or.reduceat(kind, starts)
    upair = pair[starts]
    return labels, upair // n, upair % n, merged


def _group(src: np.ndarray, dst: np.ndarray, kind: np.ndarray, label: np.ndarray) -> list[Component]:
    """Edges (each labelled with its component) into Components, largest first."""
    by_label: dict[int, Component] = {}
    for lab, u, v, k in zip(label.tolist(), src.tolist(), dst.tolist(), kind.tolist(), strict=True):
        c = by_label.get(lab)
        if c is None:
            c = by_label[lab] = Component([], {}, lab)
        lst = c.out.get(u)
        if lst is None:
            lst = c.out[u] = []
            c.nodes.append(u)
        lst.append((v, k))
    return sorted(by_label.values(), key=lambda c: -len(c.nodes))
