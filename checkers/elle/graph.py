"""The dependency graph: transactions (and real-time points) as nodes, typed edges, and its
strongly connected components.

Edges are collected in flat lists while inference runs, then turned into numpy arrays once:
duplicate (from, to) pairs merge into one edge whose kind is a bit set. Components come from
scipy's iterative strong-connectivity labelling, so a history of millions of transactions never
recurses. Only components with more than one node can hold a cycle (there are no self-edges);
`components` returns those, each with its adjacency restricted to the component.
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
    """Edges as they are inferred. `why[(a, b, kind)]` keeps the first reason for a data edge:
    (key, value seen or written by a, value seen or written by b)."""

    nodes: int
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    why: dict[tuple[int, int, int], tuple[Any, Any, Any]] = field(default_factory=dict)

    def add(self, a: int, b: int, kind: int, key: Any = None, va: Any = None, vb: Any = None) -> None:
        if a == b:
            return
        self.src.append(a)
        self.dst.append(b)
        self.kind.append(kind)
        if kind & DATA:
            self.why.setdefault((a, b, kind), (key, va, vb))

    def new_node(self) -> int:
        self.nodes += 1
        return self.nodes - 1


@dataclass(slots=True)
class Component:
    """One strongly connected component: its nodes and, per node, (to, kind bits) edges inside it."""

    nodes: list[int]
    out: dict[int, list[tuple[int, int]]]


def edge_counts(edges: EdgeList) -> dict[str, int]:
    if not edges.kind:
        return {}
    k = np.asarray(edges.kind, dtype=np.int8)
    return {name: int((k == bit).sum()) for bit, name in KIND_NAMES.items() if (k == bit).any()}


def components(edges: EdgeList) -> list[Component]:
    """Strongly connected components with more than one node, largest first."""
    n = edges.nodes
    if not edges.src or n == 0:
        return []
    src = np.asarray(edges.src, dtype=np.int64)
    dst = np.asarray(edges.dst, dtype=np.int64)
    kind = np.asarray(edges.kind, dtype=np.int64)
    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    ncomp, labels = connected_components(m, directed=True, connection="strong")
    sizes = np.bincount(labels, minlength=ncomp)
    inside = (labels[src] == labels[dst]) & (sizes[labels[src]] > 1)
    if not inside.any():
        return []
    src, dst, kind = src[inside], dst[inside], kind[inside]
    pair = src * n + dst
    order = np.argsort(pair, kind="stable")
    pair, kind = pair[order], kind[order]
    starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
    merged = np.bitwise_or.reduceat(kind, starts)
    upair = pair[starts]
    us, vs = (upair // n).tolist(), (upair % n).tolist()
    by_label: dict[int, Component] = {}
    for u, v, k in zip(us, vs, merged.tolist(), strict=True):
        lab = int(labels[u])
        c = by_label.get(lab)
        if c is None:
            c = by_label[lab] = Component([], {})
        lst = c.out.get(u)
        if lst is None:
            lst = c.out[u] = []
            c.nodes.append(u)
        lst.append((v, k))
    return sorted(by_label.values(), key=lambda c: -len(c.nodes))
