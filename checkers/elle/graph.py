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

import itertools
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
    why: list[tuple[Any, ...] | None] = field(default_factory=list)
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
               among: np.ndarray | None = None) -> tuple[Any, ...] | None:
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


class Component:
    """One strongly connected component: its nodes and its edges inside it (numpy arrays, kinds as
    bit sets). `parent` is the label of the whole graph's component that holds it. A node's out
    edges [(to, kind bits), ...] are built the first time a search asks for them: a search visits
    a part of a large component, and building every node's list up front cost more than it."""

    __slots__ = ("_adj", "_indptr", "_kinds", "_targets", "dst", "kind", "nodes", "parent", "src")

    def __init__(self, src: np.ndarray, dst: np.ndarray, kind: np.ndarray, parent: int = -1) -> None:
        order = np.argsort(src, kind="stable")
        self.src, self.dst, self.kind = src[order], dst[order], kind[order]
        self.nodes: list[int] = np.unique(self.src).tolist()
        self.parent = parent
        first = np.searchsorted(self.src, self.nodes)
        self._indptr = dict(zip(self.nodes, zip(first.tolist(), [*first[1:].tolist(), len(self.src)],
                                                 strict=True), strict=True))
        self._targets: list[int] | None = None
        self._kinds: list[int] | None = None
        self._adj: dict[int, list[tuple[int, int]]] = {}

    def out(self, node: int) -> list[tuple[int, int]]:
        """The node's out edges inside the component, as (to, kind bits)."""
        got = self._adj.get(node)
        if got is None:
            span = self._indptr.get(node)
            if span is None:
                got = []
            else:
                if self._targets is None:
                    self._targets, self._kinds = self.dst.tolist(), self.kind.tolist()
                a, b = span
                got = list(zip(self._targets[a:b], self._kinds[a:b], strict=True))  # type: ignore[index]
            self._adj[node] = got
        return got

    def edges_of(self, bits: int) -> tuple[np.ndarray, np.ndarray]:
        """(sources, targets) of the edges with any of the kinds in `bits`."""
        keep = (self.kind & bits) != 0
        return self.src[keep], self.dst[keep]


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
    if keep.all() and (kind == cyc.kind).all():  # every edge counts as it is: the components themselves
        return {c.parent: [c] for c in cyc.comps}
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


def labels_of(cyc: Cyclic, allowed: int) -> np.ndarray | None:
    """Every node's strongly connected component when only edges of the `allowed` kinds count,
    numbered in reverse topological order: every edge goes to a label no greater than its
    source's, so a node reaches only nodes of labels no greater than its own. scipy numbers them
    so (in the order its search completes them); this checks it on every edge, and says None if
    not."""
    keep = (cyc.kind & allowed) != 0
    n = len(cyc.labels)
    src, dst = cyc.src[keep], cyc.dst[keep]
    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    labels = connected_components(m, directed=True, connection="strong")[1]
    return labels if bool((labels[dst] <= labels[src]).all()) else None


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
    if len(src) == 0:
        return []
    order = np.argsort(label, kind="stable")
    label, src, dst, kind = label[order], src[order], dst[order], kind[order]
    cuts = [*np.flatnonzero(np.r_[True, label[1:] != label[:-1]]).tolist(), len(label)]
    comps = [Component(src[a:b], dst[a:b], kind[a:b], int(label[a]))
             for a, b in itertools.pairwise(cuts)]
    return sorted(comps, key=lambda c: -len(c.nodes))
