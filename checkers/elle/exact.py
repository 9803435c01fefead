"""Exact isolation checking: is there an execution of the committed transactions that explains
every read? Decided, not only evidenced: where the Elle-style inference says "no cycle found", this
says "serializable" (or not) with a witness either way.

The approach of Cobra (OSDI 2020) and PolySI (VLDB 2023): the dependency edges that any execution
must have are known (every read names its writer); what is not known is the version order of
writes no read ordered, so each unordered pair of writes of a key is a choice between two bundles
of edges (a before b: ww a->b and rw from b's... readers of a to b; or the other way). A polygraph.
A SAT solver (python-sat) picks a choice for every pair; the graph with those edges is searched for
a forbidden cycle; a cycle found becomes a clause that forbids that combination of choices, and the
solver picks again (lazy, counterexample-guided), until a choice has no forbidden cycle (the
history is valid, and the choice is a version order that explains it) or none is left (invalid).

  serializable         no cycle of ww, wr and rw edges
  strict-serializable  the same with real-time order
  snapshot-isolation   no cycle in (ww | wr) followed by at most one rw (Cerone and Gotsman's
                       characterization, PolySI's encoding): no two rw edges in a row

Pruning before the solver, as Cobra does: a choice whose edges would close a cycle with the
edges already known is decided the other way, to a fixpoint (reachability as bit sets over the
known graph, which must itself be acyclic). List-append needs a solver only for snapshot
isolation and only among appends no read observed; its reads fix every other order.

Which transactions ran: every ok one; a failed one never; an info one exactly when a read saw one
of its writes (one no read saw may be taken as never run: running it last changes no read).
Reads that no execution gives (a value no committed transaction wrote, an intermediate one, a
list no order of appends gives, a transaction's own appends out of order) decide at once.
"""

from __future__ import annotations

import heapq
import time
from bisect import bisect_left
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from jepsen_py.checkers.elle.budget import Deadline, OutOfTime
from jepsen_py.checkers.elle.explain import edge as explain_edge
from jepsen_py.checkers.elle.explain import show
from jepsen_py.checkers.elle.graph import REALTIME, RW, WR, WW
from jepsen_py.checkers.elle.txn import APPEND, READ, WRITE, Txn
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from jepsen_py.history import FAIL, INFO, OK

MODELS = ("serializable", "strict-serializable", "snapshot-isolation")
KIND = {WW: "ww", WR: "wr", RW: "rw", REALTIME: "realtime"}

Edge = tuple[int, int, int, Any]  # (from txn id, to txn id, kind, why: (key, va, vb) or None)


@dataclass
class Decision:
    """An exact answer for one model: valid true or false, or "unknown" (the budget ran out, or
    the solver is missing), with what shows it."""

    model: str
    valid: bool | str
    reason: str | None = None  # a read no execution gives, when that decided it
    cycle: list[Edge] | None = None
    every_order: bool = False  # the cycle is one of those every version order makes
    stats: dict[str, Any] = field(default_factory=dict)

    def report(self, txns: Sequence[Txn], appends: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "valid": self.valid, "exact": True, **self.stats}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.cycle is not None:
            steps = [{"from": txns[a].index, "to": txns[b].index, "type": KIND[k],
                      **({"key": why[0]} if why is not None else {}),
                      "explanation": explain_edge(k, txns[a], txns[b], why, appends)}
                     for a, b, k, why in self.cycle]
            out["cycle"] = [txns[a].describe() for a, _, _, _ in self.cycle]
            out["steps"] = steps
            lead = ("every version order of the writes no read ordered makes such a cycle; under "
                    "the last one tried: " if self.every_order else "")
            out["explanation"] = (lead + "; ".join(s["explanation"] for s in steps)
                                  + f": a cycle, so {txns[self.cycle[0][0]].name()} would have to "
                                    "precede itself")
        return out


class _Invalid(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def decide(txns: Sequence[Txn], workload: str, model: str, deadline: Deadline) -> Decision:
    """The exact answer for `model` (one of MODELS)."""
    return decide_all(txns, workload, [model], deadline)[model]


def decide_all(txns: Sequence[Txn], workload: str, models: Sequence[str],
               deadline: Deadline) -> dict[str, Decision]:
    """The exact answer for each of `models` (of MODELS).

    Strict serializability implies serializability, which implies snapshot isolation (a cycle in
    snapshot isolation's graph is a closed walk in serializability's), and real-time order leaves
    the solver little to choose: so strict-serializable is decided first, once, and only when a
    history is not strict serializable are the others searched again without real time."""
    build = _list_append if workload == "list-append" else _rw_register
    out: dict[str, Decision] = {}
    strict: Decision | None = None
    for model in models:
        t0 = time.monotonic()
        try:
            if strict is None:
                strict = _solve(build(txns, "strict-serializable"), "strict-serializable", deadline)
            if model == "strict-serializable" or strict.valid is True:
                d = replace(strict, model=model, stats=dict(strict.stats))
                if model != "strict-serializable":
                    d.stats["by"] = "strict-serializable"
            else:
                d = _solve(build(txns, model), model, deadline)
        except _Invalid as e:  # a read no execution gives: the same under every model
            d = Decision(model, False, reason=e.reason)
        d.stats["seconds"] = round(time.monotonic() - t0, 3)
        out[model] = d
    return out


# ---- the problem: known edges and choices --------------------------------------------------------


@dataclass
class Problem:
    """Transactions 0..n-1 (the committed ones are `live`); edges every execution has; choices,
    each a pair of edge bundles one of which the execution has."""

    n: int
    live: list[int]
    known: list[Edge]
    choices: list[tuple[list[Edge], list[Edge]]]
    hints: list[bool] = field(default_factory=list)  # per choice: is the first the likelier?
    txns: Sequence[Txn] = ()


def _committed(txns: Sequence[Txn], observed: set[int]) -> list[int]:
    return [t.id for t in txns if t.type == OK or (t.type == INFO and t.id in observed)]


def _internal(t: Txn, workload: str) -> None:
    """A read inconsistent with the transaction's own earlier operations, or one of a value it
    writes only later: no execution gives it."""
    state: dict[Hashable, Any] = {}
    suffix: dict[Hashable, tuple[Any, ...]] = {}  # list-append: its own appends, prefix unknown
    for i, (f, k, v) in enumerate(t.mops):
        if f != READ:
            if workload == "list-append":
                if k in state:
                    state[k] = (*state[k], v)
                else:
                    suffix[k] = (*suffix.get(k, ()), v)
            else:
                state[k] = v
            continue
        if workload == "list-append":
            v = () if v is None else v
            own = suffix.pop(k, None)
            if (own is not None and v[len(v) - len(own):] != own) or (own and len(v) < len(own)):
                raise _Invalid(f"internal: {t.name()} read {show(k)}={show(v)} without its own appends")
            if k in state and state[k] != v:
                raise _Invalid(f"internal: {t.name()} read {show(k)}={show(v)}, not {show(state[k])}")
            later = {x for f2, k2, x in t.mops[i + 1:] if f2 != READ and k2 == k}
            if later & set(v):
                raise _Invalid(f"future-read: {t.name()} read {show(k)}={show(v)}, holding what it "
                               "appends only later")
        else:
            if k in state and state[k] != v:
                raise _Invalid(f"internal: {t.name()} read {show(k)}={show(v)}, not {show(state[k])}")
            if v is not None and any(f2 != READ and k2 == k and x == v for f2, k2, x in t.mops[i + 1:]):
                raise _Invalid(f"future-read: {t.name()} read {show(k)}={show(v)}, which it writes "
                               "only later")
        state[k] = v


def _realtime(txns: Sequence[Txn], live: list[int]) -> list[Edge]:
    """a -> b for ok a completed before b was invoked: the transitive reduction is enough (it
    keeps every path), so each transaction links from the latest completions before it."""
    done = sorted((txns[i].complete_pos, i) for i in live if txns[i].type == OK)
    out: list[Edge] = []
    pos = [p for p, _ in done]
    for b in live:
        j = bisect_left(pos, txns[b].invoke_pos)
        if j == 0:
            continue
        # every completion before b's invocation that no later such completion follows in real time
        frontier_start = txns[done[j - 1][1]].invoke_pos
        for p, a in reversed(done[:j]):
            if a != b:
                out.append((a, b, REALTIME, None))
            if p < frontier_start:
                break
    return out


def _list_append(txns: Sequence[Txn], model: str) -> Problem:
    writer: dict[tuple[Hashable, Any], int] = {}
    failed: set[tuple[Hashable, Any]] = set()
    own: dict[tuple[int, Hashable], list[Any]] = {}  # (txn, key) -> its appends in order
    for t in txns:
        for f, k, v in t.mops:
            if f == APPEND:
                if t.type == FAIL:
                    failed.add((k, v))
                else:
                    writer[(k, v)] = t.id
                    own.setdefault((t.id, k), []).append(v)
    # external part of every ok read: what others appended before it
    reads: list[tuple[int, Hashable, tuple[Any, ...]]] = []
    observed: set[int] = set()
    for t in txns:
        if t.type != OK:
            continue
        _internal(t, "list-append")
        mine: dict[Hashable, int] = {}
        for f, k, v in t.mops:
            if f == APPEND:
                mine[k] = mine.get(k, 0) + 1
                continue
            v = () if v is None else v
            ext = v[: len(v) - mine.get(k, 0)]
            for x in ext:
                w = writer.get((k, x))
                if w is None:
                    raise _Invalid(("G1a" if (k, x) in failed else "garbage-read")
                                   + f": {t.name()} read {show(k)}={show(v)}, with {show(x)}, which no "
                                   "committed transaction appended")
                if w == t.id:
                    raise _Invalid(f"future-read: {t.name()} read its own append {show(x)} to {show(k)}")
                observed.add(w)
            if len(set(ext)) != len(ext):
                raise _Invalid(f"duplicate-elements: {t.name()} read {show(k)}={show(v)}")
            reads.append((t.id, k, ext))
    live = _committed(txns, observed)
    alive = set(live)
    by_key: dict[Hashable, list[tuple[int, tuple[Any, ...]]]] = {}
    for tid, k, ext in reads:
        by_key.setdefault(k, []).append((tid, ext))
    known: list[Edge] = []
    choices: list[tuple[list[Edge], list[Edge]]] = []
    appenders: dict[Hashable, list[int]] = {}
    for (tid, k) in own:
        if tid in alive:
            appenders.setdefault(k, []).append(tid)
    for k in set(appenders) | set(by_key):
        rs = by_key.get(k, [])
        longest: tuple[Any, ...] = max((e for _, e in rs), key=len, default=())
        for _, ext in rs:
            if longest[: len(ext)] != ext:
                raise _Invalid(f"incompatible-order: {show(k)} read as {show(ext)} and {show(longest)}")
        # each writer's appends: all of them or none in a read, together and in its own order
        for tid, ext in rs:
            at = {x: i for i, x in enumerate(ext)}
            for w in appenders.get(k, []):
                seq = own[(w, k)]
                hits = [at[x] for x in seq if x in at]
                if hits and hits != list(range(hits[0], hits[0] + len(seq))):
                    partial = hits == list(range(hits[0], hits[0] + len(hits)))
                    raise _Invalid(f"{'G1b' if partial else 'reordered-appends'}: {txns[tid].name()} read "
                                   f"{show(k)}={show(ext)}, but {txns[w].name()} appended {show(tuple(seq))} "
                                   "in one transaction")
        order = [writer[(k, x)] for x in longest]
        seen_w = set(order)
        for a, b, x, y in zip(order, order[1:], longest, longest[1:], strict=False):
            if a != b:
                known.append((a, b, WW, (k, x, y)))
        unseen = [w for w in appenders.get(k, []) if w not in seen_w]
        if order:
            for w in unseen:
                known.append((order[-1], w, WW, (k, longest[-1], own[(w, k)][0])))
        for tid, ext in rs:
            present = {writer[(k, x)] for x in ext}
            for x in ext:
                w = writer[(k, x)]
                if x == own[(w, k)][-1]:
                    known.append((w, tid, WR, (k, x, x)))
            for w in appenders.get(k, []):
                if w not in present and w != tid:
                    known.append((tid, w, RW, (k, ext[-1] if ext else None, own[(w, k)][0])))
        if model == "snapshot-isolation":
            for i, a in enumerate(unseen):
                for b in unseen[i + 1:]:
                    why_ab = (k, own[(a, k)][-1], own[(b, k)][0])
                    why_ba = (k, own[(b, k)][-1], own[(a, k)][0])
                    choices.append(([(a, b, WW, why_ab)], [(b, a, WW, why_ba)]))
    if model == "strict-serializable":
        known += _realtime(txns, live)
    return Problem(len(txns), live, known, choices, _hints(txns, choices), txns)


def _hints(txns: Sequence[Txn], choices: list[tuple[list[Edge], list[Edge]]]) -> list[bool]:
    """For each choice between a before b and b before a: whether a completed first. A real
    execution mostly orders its writes as they completed, so the solver starts from that."""
    return [txns[first[0][0]].complete_pos <= txns[first[0][1]].complete_pos for first, _ in choices]


def _ranked_hints(p: Problem, known: Sequence[Edge]) -> list[bool]:
    """Better hints: each choice by the position of its two transactions in one order that keeps
    every `known` edge and, where they allow, completion order (a topological order of the known
    edges, ties broken by completion): a candidate serial order."""
    txns = p.txns
    succ: dict[int, list[int]] = {}
    indeg: dict[int, int] = dict.fromkeys(p.live, 0)
    for a, b, _, _ in known:
        succ.setdefault(a, []).append(b)
        indeg[b] = indeg.get(b, 0) + 1
    key = {i: (txns[i].complete_pos, i) for i in indeg}
    ready = [key[i] for i, d in indeg.items() if d == 0]
    heapq.heapify(ready)
    rank: dict[int, int] = {}
    while ready:
        _, i = heapq.heappop(ready)
        rank[i] = len(rank)
        for j in succ.get(i, ()):
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, key[j])
    if len(rank) < len(indeg):  # a known cycle: the hints do not matter
        return p.hints
    return [rank.get(first[0][0], 0) <= rank.get(first[0][1], 0) for first, _ in p.choices]


def _rw_register(txns: Sequence[Txn], model: str) -> Problem:
    ext_w: dict[tuple[Hashable, Any], int] = {}  # (key, value) -> the transaction it is the last write of
    inter: set[tuple[Hashable, Any]] = set()
    failed: set[tuple[Hashable, Any]] = set()
    for t in txns:
        last: dict[Hashable, Any] = {}
        for f, k, v in t.mops:
            if f == WRITE:
                if k in last:
                    inter.add((k, last[k]))
                last[k] = v
        for k, v in last.items():
            if t.type == FAIL:
                failed.add((k, v))
            else:
                ext_w[(k, v)] = t.id
    readers: dict[tuple[Hashable, Any], list[int]] = {}
    observed: set[int] = set()
    for t in txns:
        if t.type != OK:
            continue
        _internal(t, "rw-register")
        done: set[Hashable] = set()
        for f, k, v in t.mops:
            if k in done:
                continue
            done.add(k)
            if f == WRITE:
                continue
            if v is not None:
                w = ext_w.get((k, v))
                if w is None:
                    why = "G1a" if (k, v) in failed else "G1b" if (k, v) in inter else "garbage-read"
                    raise _Invalid(f"{why}: {t.name()} read {show(k)}={show(v)}, which no committed "
                                   "transaction left")
                observed.add(w)
            readers.setdefault((k, v), []).append(t.id)
    live = _committed(txns, observed)
    alive = set(live)
    writers: dict[Hashable, list[tuple[int, Any]]] = {}
    for (k, v), w in ext_w.items():
        if w in alive:
            writers.setdefault(k, []).append((w, v))
    known: list[Edge] = []
    for (k, v), rs in readers.items():
        if v is None:  # the initial state: before every write of the key
            for r in rs:
                known += [(r, w, RW, (k, None, v2)) for w, v2 in writers.get(k, []) if w != r]
        else:
            w = ext_w[(k, v)]
            known += [(w, r, WR, (k, v, v)) for r in rs if r != w]
    choices: list[tuple[list[Edge], list[Edge]]] = []
    for k, ws in writers.items():
        for i, (a, va) in enumerate(ws):
            for b, vb in ws[i + 1:]:
                a_first = [(a, b, WW, (k, va, vb))] + [(r, b, RW, (k, va, vb))
                                                         for r in readers.get((k, va), []) if r != b]
                b_first = [(b, a, WW, (k, vb, va))] + [(r, a, RW, (k, vb, va))
                                                         for r in readers.get((k, vb), []) if r != a]
                choices.append((a_first, b_first))
    if model == "strict-serializable":
        known += _realtime(txns, live)
    return Problem(len(txns), live, known, choices, _hints(txns, choices), txns)


# ---- solving -------------------------------------------------------------------------------------


def _forbidden_cycle(n: int, edges: Sequence[Edge], model: str) -> list[int] | None:
    """Indices into `edges` of a forbidden cycle, or None (the first of _forbidden_cycles)."""
    found = _forbidden_cycles(n, edges, model, most=1)
    return found[0] if found else None


def _forbidden_cycles(n: int, edges: Sequence[Edge], model: str, most: int = 64) -> list[list[int]]:
    """Indices into `edges` of distinct forbidden cycles, the shortest through each of several nodes
    of every strongly connected component that holds one, at most `most`. Snapshot isolation's cycles are
    those with no two rw edges in a row: searched in the graph of (node, came by rw?) states."""
    if not edges:
        return []
    si = model == "snapshot-isolation"
    src = np.fromiter((e[0] for e in edges), dtype=np.int64, count=len(edges))
    dst = np.fromiter((e[1] for e in edges), dtype=np.int64, count=len(edges))
    rw = np.fromiter((e[2] == RW for e in edges), dtype=bool, count=len(edges))
    if si:  # state u*2 + (came by rw)
        s = np.concatenate([src[~rw] * 2, src[~rw] * 2 + 1, src[rw] * 2])
        d = np.concatenate([dst[~rw] * 2, dst[~rw] * 2, dst[rw] * 2 + 1])
        idx = np.concatenate([np.flatnonzero(~rw), np.flatnonzero(~rw), np.flatnonzero(rw)])
        size = 2 * n
    else:
        s, d, idx, size = src, dst, np.arange(len(edges)), n
    m = csr_matrix((np.ones(len(s), dtype=np.int8), (s, d)), shape=(size, size))
    ncomp, labels = connected_components(m, directed=True, connection="strong")
    sizes = np.bincount(labels, minlength=ncomp)
    inside = (labels[s] == labels[d]) & (sizes[labels[s]] > 1)
    if not inside.any():
        return []
    out: dict[int, list[tuple[int, int]]] = {}
    for a, b, i in zip(s[inside].tolist(), d[inside].tolist(), idx[inside].tolist(), strict=True):
        out.setdefault(a, []).append((b, i))
    # several starts in each component (a history's one big component would otherwise give one
    # cycle, one clause, per round of the solver), spread evenly, at most `most` in all
    by_comp: dict[int, list[int]] = {}
    for a, lab in zip(s[inside].tolist(), labels[s[inside]].tolist(), strict=True):
        by_comp.setdefault(lab, []).append(a)
    per = max(1, most // len(by_comp))
    starts: list[int] = []
    for nodes in by_comp.values():
        distinct = list(dict.fromkeys(nodes))
        starts += distinct[:: max(1, len(distinct) // per)][:per]
    cycles: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    for start in starts[:most]:
        parent: dict[int, tuple[int, int]] = {}
        frontier = [start]
        found: list[int] | None = None
        while frontier and found is None:
            nxt: list[int] = []
            for u in frontier:
                for v, i in out.get(u, ()):
                    if v == start:
                        path = [i]
                        while u != start:
                            u, j = parent[u]
                            path.append(j)
                        found = path[::-1]
                        break
                    if v not in parent:
                        parent[v] = (u, i)
                        nxt.append(v)
                if found is not None:
                    break
            frontier = nxt
        if found is not None and (key := tuple(sorted(found))) not in seen:
            seen.add(key)
            cycles.append(found)
    return cycles


def _reach(n: int, edges: Sequence[Edge]) -> list[int] | None:
    """Each node's reachable set as a bit set (Python int), or None when the graph has a cycle."""
    if not edges:
        return [0] * n
    src = np.fromiter((e[0] for e in edges), dtype=np.int64, count=len(edges))
    dst = np.fromiter((e[1] for e in edges), dtype=np.int64, count=len(edges))
    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    ncomp, labels = connected_components(m, directed=True, connection="strong")
    if ncomp != n:
        return None
    # scipy numbers components so every edge goes to a label no greater than its source's
    if not bool((labels[dst] <= labels[src]).all()):
        return None
    order = np.argsort(labels, kind="stable").tolist()  # sinks first
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        succ[a].append(b)
    reach = [0] * n
    for u in order:
        r = 0
        for v in succ[u]:
            r |= reach[v] | (1 << v)
        reach[u] = r
    return reach


def _prune(p: Problem, model: str, deadline: Deadline) -> tuple[list[Edge], list[int]]:
    """Cobra's pruning, to a fixpoint: a choice one of whose bundles closes a cycle with the known
    edges (checked by reachability: an edge a -> b with b reaching a) is decided the other way.
    Snapshot isolation prunes by its ww and wr edges only (a cycle of those is forbidden there
    too). Returns the known edges (the decided choices' appended) and the undecided choices'
    indices; when the known edges close a cycle, every choice is left undecided and the caller
    finds that cycle."""
    known = list(p.known)
    open_ = list(range(len(p.choices)))
    while True:
        deadline.check("exact pruning")
        graph = [e for e in known if model != "snapshot-isolation" or e[2] != RW]
        reach = _reach(p.n, graph)
        if reach is None:
            return known, []  # a known cycle: the caller finds it
        added = False
        still: list[int] = []
        for c in open_:
            first, second = p.choices[c]
            bad1 = any(reach[b] >> a & 1 for a, b, k, _ in first
                       if model != "snapshot-isolation" or k != RW)
            bad2 = any(reach[b] >> a & 1 for a, b, k, _ in second
                       if model != "snapshot-isolation" or k != RW)
            if bad1 and bad2:
                known += first  # both close a cycle: keep one, the cycle shows it
                added = True
            elif bad1:
                known += second
                added = True
            elif bad2:
                known += first
                added = True
            else:
                still.append(c)
        open_ = still
        if not added:
            return known, open_


def new_solver() -> Any:
    """The SAT solver: CaDiCaL 1.9 through python-sat, chosen by measurement against z3
    (bench/bench_exact.py --solvers, docs/measurements.md): solving is under 2% of a decision with
    either; what counts is the rounds of graph search between its calls and their cost. CaDiCaL
    starts from the phase hints (z3 takes none per variable) and its model is read back at once,
    where z3's Python API makes each round several times slower."""
    from pysat.solvers import Solver

    return Solver(name="cd19")


def _solve(p: Problem, model: str, deadline: Deadline) -> Decision:
    stats: dict[str, Any] = {"transactions": len(p.live), "known_edges": len(p.known),
                             "choices": len(p.choices)}
    try:
        known, open_ = _prune(p, model, deadline)
        stats["choices_after_pruning"] = len(open_)
        cyc = _forbidden_cycle(p.n, known, model)
        if cyc is not None:  # edges past the first ones are choices pruning had to make
            return Decision(model, False, cycle=[known[i] for i in cyc],
                            every_order=any(i >= len(p.known) for i in cyc), stats=stats)
        if not open_:
            return Decision(model, True, stats=stats)
        try:
            solver_ = new_solver()
        except ImportError:  # pragma: no cover - a dependency of the package
            return Decision(model, "unknown", reason="python-sat is not installed", stats=stats)
        var = {c: i + 1 for i, c in enumerate(open_)}
        last: list[Edge] | None = None
        rounds = clauses = 0
        stats["solver_s"] = 0.0
        with solver_ as solver:
            # start from the order the writes completed in, which real executions mostly keep
            hints = _ranked_hints(p, known)
            solver.set_phases([var[c] if hints[c] else -var[c] for c in open_])
            while True:
                deadline.check("exact search")
                rounds += 1
                stats["rounds"], stats["clauses"] = rounds, clauses
                t0 = time.perf_counter()
                sat = solver.solve()
                stats["solver_s"] += time.perf_counter() - t0
                if not sat:
                    return Decision(model, False, cycle=last, every_order=True, stats=stats)
                model_ = set(solver.get_model() or [])
                edges = list(known)
                origin: list[int] = [0] * len(edges)  # the literal an edge came from, 0: known
                for c, x in var.items():
                    first, second = p.choices[c]
                    chosen, lit = (first, x) if x in model_ else (second, -x)
                    edges += chosen
                    origin += [lit] * len(chosen)
                cycles = _forbidden_cycles(p.n, edges, model)
                if not cycles:
                    return Decision(model, True, stats=stats)
                for cyc in cycles:  # a clause for each: that combination of choices is forbidden
                    last = [edges[i] for i in cyc]
                    lits = {origin[i] for i in cyc} - {0}
                    if not lits:
                        return Decision(model, False, cycle=last, stats=stats)
                    solver.add_clause([-lit for lit in lits])
                    clauses += 1
    except OutOfTime as e:
        stats["unknown_reason"] = f"time limit of {deadline.time_s:g} s reached during the {e.stage}"
        return Decision(model, "unknown", reason=stats["unknown_reason"], stats=stats)
