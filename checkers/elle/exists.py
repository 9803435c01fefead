"""Cycle existence, Elle's fallback for a cycle search that gave up: a model whose subgraph of the
dependency graph has a strongly connected component (of two or more transactions, or one with an
edge to itself) is violated, whichever cycle shows it.

Each model's subgraph, as Elle defines them (item edges only; real-time points are nodes of the
paths they stand for):
  union of kinds   read uncommitted ww; read committed ww wr; repeatable read and serializable
                   ww wr rw; their strong-session and strong variants add process or real-time
                   order; strict serializable ww wr rw real-time
  extension        snapshot isolation and its strong-session and strong variants: an edge a -> b
                   for each ww/wr (plus process or real-time) edge, and for each such edge followed
                   by one rw edge (Adya's start-ordered serialization graph: a cycle here has no
                   two rw edges in a row)
Specs are tried weakest first, and a model already ruled out by one found is not tried again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from jepsen_py.checkers.elle import models
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import PROCESS, REALTIME, RW, WR, WW, Cyclic
from jepsen_py.checkers.elle.txn import Txn
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components


@dataclass(frozen=True, slots=True)
class ExistsSpec:
    model: str  # canonical
    base: int  # the kinds unioned (or the extension's first relation)
    extension: bool = False  # followed by at most one rw edge

    @property
    def kind(self) -> str:
        return f"{self.model}-cycle-exists"


SPECS = (
    ExistsSpec("PL-1", WW),
    ExistsSpec("PL-2", WW | WR),
    ExistsSpec("PL-SI", WW | WR, True),
    ExistsSpec("PL-2.99", WW | WR | RW),
    ExistsSpec("PL-3", WW | WR | RW),
    ExistsSpec("strong-session-PL-1", WW | PROCESS),
    ExistsSpec("strong-session-PL-2", WW | WR | PROCESS),
    ExistsSpec("strong-session-snapshot-isolation", WW | WR | PROCESS, True),
    ExistsSpec("strong-session-serializable", WW | WR | RW | PROCESS),
    ExistsSpec("strong-PL-1", WW | REALTIME),
    ExistsSpec("strong-PL-2", WW | WR | REALTIME),
    ExistsSpec("strong-snapshot-isolation", WW | WR | REALTIME, True),
    ExistsSpec("PL-SS", WW | WR | RW | REALTIME),
)


def cycle_exists(cyc: Cyclic, txns: Sequence[Txn], process: bool, realtime: bool, found: Found) -> None:
    """Adds a `<model>-cycle-exists` anomaly for each model whose subgraph holds a cycle, unless a
    weaker one's already rules the model out or the anomalies found already do (Elle's
    remove-redundant-cycle-exists)."""
    ruled_out = models.ruled_out(k for k in found.counts if not k.endswith("-cycle-exists"))
    by_exists: set[str] = set()
    n = int(cyc.labels.shape[0]) if len(cyc.labels) else 0
    for spec in SPECS:
        if spec.model in by_exists or spec.model in ruled_out:
            continue
        if (spec.base & PROCESS and not process) or (spec.base & REALTIME and not realtime):
            continue
        scc = _smallest_scc(cyc, spec, n, len(txns))
        if scc is None:
            continue
        by_exists |= models.ruled_out([spec.kind])
        found.add(spec.kind, {
            "not": models.friendly(spec.model), "scc_size": len(scc),
            "scc": [txns[i].index for i in scc],
            "explanation": f"the dependency graph restricted to what {models.friendly(spec.model)} allows "
                           f"holds a cycle among {len(scc)} transactions (the search for the "
                           f"cycle itself gave up)"})


def _smallest_scc(cyc: Cyclic, spec: ExistsSpec, n: int, is_txn: int) -> list[int] | None:
    """The transactions of the smallest nontrivial strongly connected component of the spec's
    subgraph, or None."""
    if n == 0:
        return None
    base = (cyc.kind & spec.base) != 0
    a = csr_matrix((np.ones(int(base.sum()), dtype=np.int8), (cyc.src[base], cyc.dst[base])), shape=(n, n))
    m = a
    if spec.extension:
        rw = (cyc.kind & RW) != 0
        r = csr_matrix((np.ones(int(rw.sum()), dtype=np.int8), (cyc.src[rw], cyc.dst[rw])), shape=(n, n))
        m = (a + a @ r).tocsr()
    m.data[:] = 1
    ncomp, labels = connected_components(m, directed=True, connection="strong")
    sizes = np.bincount(labels, minlength=ncomp)
    coo = m.tocoo()
    self_loop = np.zeros(ncomp, dtype=bool)
    loops = coo.row[coo.row == coo.col]
    self_loop[labels[loops]] = True
    nontrivial = np.flatnonzero((sizes > 1) | self_loop)
    best: list[int] | None = None
    for c in nontrivial.tolist():
        members = [int(i) for i in np.flatnonzero(labels == c) if i < is_txn]
        if members and (best is None or len(members) < len(best)):
            best = members
    return best
