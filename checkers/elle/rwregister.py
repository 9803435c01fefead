"""Read-write register inference, as Elle's elle.rw-register infers: version orders from what is
known, non-cycle anomalies, ww/wr/rw edges.

Every write to a key is unique, so a read names its writer. A register's read says nothing about
earlier versions, so a key's version order is assembled from facts, each source in turn (the
initial state, then what checkers/elle/inference.py's options allow):
  initial-state      the initial state (nil) precedes every version written or read
  transaction-order  the database's commit order: a key's writes in that order
  wfr-keys           a transaction that read v1 and then wrote v2 put v2 after v1
  sequential-keys    a process's successive transactions that touch a key: the version the
                     first one left precedes the one the next one first saw
  linearizable-keys  likewise for transactions one of which completed before the other began
                     (each to the next ones touching the key: the transitive reduction)
A source whose facts order a key's versions in a cycle is not used for that key, and the cycle is
reported as cyclic-versions, naming the sources (read uncommitted prohibits it: a version order is
total). Versions are a transaction's external ones: its first read of a key before writing it,
its last write of the key.
Edges, for each direct fact v1 < v2: ww from v1's writer to v2's, rw from each reader of v1 to
v2's writer; wr from a version's writer to its readers.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Sequence
from itertools import pairwise
from typing import Any

from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.explain import show
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import RW, WR, WW, EdgeList
from jepsen_py.checkers.elle.inference import NONE, Inference
from jepsen_py.checkers.elle.txn import INF_POS, WRITE, Txn, index_writes

from jepsen_py.history import FAIL, INFO, OK

Versions = dict[tuple[Hashable, Any], int]
Order = dict[Any, set[Any]]  # version -> the versions known to come right after it
_NONE = object()  # a transaction with no external value of the key


def infer(txns: Sequence[Txn], edges: EdgeList, found: Found, deadline: Deadline,
          inference: Inference = NONE) -> None:
    def refuse(t: Txn, k: Hashable, v: Any, other: int | None) -> str | None:
        if other is None and v is not None:
            return None
        where = ("(nil)" if v is None else "twice here" if other == t.id
                 else f"also in op {txns[other].index}" if other is not None else "")
        return (f"op {t.index}: write of {show(k)}={show(v)} {where}; rw-register needs unique, "
                "non-nil values per key")

    writer, failed, intermediate = index_writes(txns, WRITE, refuse)
    # per key, per transaction touching it: (txn id, first external value, last external value)
    touch: dict[Hashable, list[tuple[int, Any, Any]]] = {}
    ext_w: dict[Hashable, dict[Any, list[int]]] = {}  # key -> version -> external writers
    ext_r: dict[Hashable, dict[Any, list[int]]] = {}  # key -> version -> external readers (ok)
    wfr: dict[Hashable, list[tuple[Any, Any]]] = {}
    lost: dict[tuple[Hashable, Any], list[int]] = {}
    for n, t in enumerate(txns):
        if n % 8192 == 0:
            deadline.check("rw-register reads")
        if t.type == FAIL:
            continue
        reads, writes = external(t)
        if t.type == OK:
            _internal(t, txns, writer, failed, intermediate, lost, found)
            for k, v in reads.items():
                ext_r.setdefault(k, {}).setdefault(v, []).append(t.id)
        for k, v in writes.items():
            ext_w.setdefault(k, {}).setdefault(v, []).append(t.id)
        for k in reads.keys() | writes.keys():
            first = reads.get(k, writes.get(k, _NONE))
            last = writes.get(k, reads.get(k, _NONE))
            touch.setdefault(k, []).append((t.id, first, last))
            if inference.wfr_keys and k in reads and k in writes and reads[k] is not None:
                wfr.setdefault(k, []).append((reads[k], writes[k]))
    for (k, v), tids in lost.items():
        if len(tids) > 1:
            found.add("lost-update", {
                "key": k, "value": v, "txns": [txns[i].describe() for i in tids],
                "explanation": f"{', '.join(txns[i].name() for i in tids)} all read {show(k)}={show(v)} "
                               f"and wrote {show(k)}: each write was made without seeing the others"})
    for n, (k, ts) in enumerate(touch.items()):
        if n % 1024 == 0:
            deadline.check("rw-register version orders")
        order = _version_order(k, ts, txns, wfr.get(k, ()), inference, found)
        _edges(k, order, ext_w.get(k, {}), ext_r.get(k, {}), edges)


def external(t: Txn) -> tuple[dict[Hashable, Any], dict[Hashable, Any]]:
    """A transaction's external reads (the first read of a key, before it writes the key; an ok
    transaction's only) and external writes (its last write of each key)."""
    reads: dict[Hashable, Any] = {}
    writes: dict[Hashable, Any] = {}
    for f, k, v in t.mops:
        if f == WRITE:
            writes[k] = v
        elif t.type == OK and k not in reads and k not in writes:
            reads[k] = v
    return reads, writes


def _internal(t: Txn, txns: Sequence[Txn], writer: Versions, failed: Versions, intermediate: Versions,
              lost: dict[tuple[Hashable, Any], list[int]], found: Found) -> None:
    """One ok transaction's own anomalies: internal reads (Elle's INT: a read that disagrees with
    the transaction's earlier read or write of the key; the first per key), future reads, aborted
    (G1a), intermediate (G1b) and garbage reads (one case per read), and its lost-update key."""
    state: dict[Hashable, Any] = {}
    bad: set[Hashable] = set()
    first: dict[Hashable, Any] = {}  # key -> the first read's value, or _WROTE once written
    for i, (f, k, v) in enumerate(t.mops):
        if f == WRITE:
            state[k] = v
            r = first.get(k, _WROTE)
            if r is not _WROTE:
                lost.setdefault((k, r), []).append(t.id)
            first[k] = _WROTE
            continue
        first.setdefault(k, v)
        if k in state and k not in bad and state[k] != v:
            bad.add(k)
            found.add("internal", {"key": k, "txn": t.describe(), "expected": state[k], "read": v,
                                   "explanation": f"{t.name()} read {show(k)}={show(v)} after its own "
                                                  f"write or read of {show(state[k])}"})
        state[k] = v
        if v is None:
            continue
        if any(f2 == WRITE and k2 == k and v2 == v for f2, k2, v2 in t.mops[i + 1:]):
            found.add("future-read", {"key": k, "txn": t.describe(), "value": v,
                                      "explanation": f"{t.name()} read {show(k)}={show(v)}, a value it "
                                                     f"writes only later"})
            continue
        if (k, v) in failed:
            w = txns[failed[(k, v)]]
            _case(found, "G1a", lambda k=k, v=v, w=w: {
                "key": k, "value": v, "reader": t.describe(), "writer": w.describe(),
                "explanation": f"{t.name()} read {show(k)}={show(v)}, written by {w.name()}, which failed"})
        elif (k, v) not in writer:
            _case(found, "garbage-read", lambda k=k, v=v: {
                "key": k, "value": v, "txn": t.describe(),
                "explanation": f"{t.name()} read {show(k)}={show(v)}, which no transaction wrote"})
        elif (k, v) in intermediate and intermediate[(k, v)] != t.id:
            w = txns[intermediate[(k, v)]]
            _case(found, "G1b", lambda k=k, v=v, w=w: {
                "key": k, "value": v, "reader": t.describe(), "writer": w.describe(),
                "explanation": f"{t.name()} read {show(k)}={show(v)}, an intermediate write: {w.name()} "
                               f"wrote {show(k)} again afterwards"})


_WROTE = object()


def _case(found: Found, kind: str, detail: Callable[[], dict[str, Any]]) -> None:
    if found.full(kind):
        found.count(kind, 1)
    else:
        found.add(kind, detail())


def _version_order(k: Hashable, ts: list[tuple[int, Any, Any]], txns: Sequence[Txn],
                   wfr: Sequence[tuple[Any, Any]], inference: Inference, found: Found) -> Order:
    """The key's version order from each source in turn; a source that makes a cycle is left out
    (and the cycle reported)."""
    order: Order = {}
    used: list[str] = []
    for source in inference.sources():
        facts = _facts(source, k, ts, txns, wfr, inference)
        trial = {v: set(after) for v, after in order.items()}
        for a, b in facts:
            if a != b:
                trial.setdefault(a, set()).add(b)
        cycles = _cycles(trial)
        if cycles:
            for scc in cycles:
                found.add("cyclic-versions", {
                    "key": k, "scc": sorted(scc, key=_sort_key), "sources": [*used, source],
                    "explanation": f"the facts from {', '.join([*used, source])} order {show(k)}'s "
                                   f"versions {', '.join(show(x) for x in sorted(scc, key=_sort_key))} "
                                   f"in a cycle; {source} is not used for {show(k)}"})
            continue
        order = trial
        used.append(source)
    return order


def _sort_key(v: Any) -> tuple[int, str]:
    return (0, "") if v is None else (1, repr(v))


def _facts(source: str, k: Hashable, ts: list[tuple[int, Any, Any]], txns: Sequence[Txn],
           wfr: Sequence[tuple[Any, Any]], inference: Inference) -> list[tuple[Any, Any]]:
    """Pairs (v1, v2): v1 precedes v2, by `source`."""
    if source == "initial-state":
        return [(None, v) for _, first, last in ts for v in {first, last}
                if v is not None and v is not _NONE]
    if source == "wfr-keys":
        return list(wfr)
    if source == "transaction-order":
        pos = inference.transaction_order or {}
        ordered = sorted((pos[txns[tid].complete_index], last) for tid, first, last in ts
                         if txns[tid].complete_index in pos and _writes(txns[tid], k))
        return [(a[1], b[1]) for a, b in pairwise(ordered)]
    if source == "sequential-keys":
        return _successive(ts, txns)
    return _realtime(ts, txns)


def _writes(t: Txn, k: Hashable) -> bool:
    return any(f == WRITE and k2 == k for f, k2, _ in t.mops)


def _successive(ts: list[tuple[int, Any, Any]], txns: Sequence[Txn]) -> list[tuple[Any, Any]]:
    """Sequential keys: each ok transaction's last version of the key precedes the first version
    the process's next ok transaction touching the key sees."""
    last: dict[Any, Any] = {}
    out: list[tuple[Any, Any]] = []
    for tid, first, fin in ts:  # in invocation order, so each process's in its own order
        t = txns[tid]
        if t.type != OK:
            continue
        if t.process in last:
            out.append((last[t.process], first))
        last[t.process] = fin
    return out


def _realtime(ts: list[tuple[int, Any, Any]], txns: Sequence[Txn]) -> list[tuple[Any, Any]]:
    """Linearizable keys: each ok transaction's last version precedes the first version of each
    transaction touching the key that began after it completed and after no other ok transaction
    touching the key that did (the transitive reduction of real-time order among them). A crashed
    transaction is known by its write only; one that never began after anything follows nothing."""
    live = [(txns[tid].invoke_pos, tid, first, fin) for tid, first, fin in ts
            if txns[tid].type == OK or (txns[tid].type == INFO and fin is not _NONE)]
    live.sort()
    invokes = [x[0] for x in live]
    suffix_min = [INF_POS] * (len(live) + 1)  # min ok completion among live[i:]
    for i in range(len(live) - 1, -1, -1):
        t = txns[live[i][1]]
        c = t.complete_pos if t.type == OK else INF_POS
        suffix_min[i] = min(c, suffix_min[i + 1])
    out: list[tuple[Any, Any]] = []
    for _, tid, _, fin in live:
        a = txns[tid]
        if a.type != OK:
            continue
        i = bisect_right(invokes, a.complete_pos)
        m = suffix_min[i]
        j = bisect_right(invokes, m) if m != INF_POS else len(live)
        for _, b, first_b, _ in live[i:j]:
            if b != tid:
                out.append((fin, first_b))
    return out


def _cycles(order: Order) -> list[set[Any]]:
    """Strongly connected components of more than one version (iterative Tarjan)."""
    index: dict[Any, int] = {}
    low: dict[Any, int] = {}
    on: set[Any] = set()
    stack: list[Any] = []
    out: list[set[Any]] = []
    counter = 0
    for root in list(order):
        if root in index:
            continue
        work: list[tuple[Any, list[Any]]] = [(root, list(order.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop()
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, list(order.get(w, ()))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                scc: set[Any] = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    scc.add(w)
                    if w == v:
                        break
                if len(scc) > 1:
                    out.append(scc)
    return out


def _edges(k: Hashable, order: Order, writers: dict[Any, list[int]], readers: dict[Any, list[int]],
           edges: EdgeList) -> None:
    for v, ws in writers.items():
        for r in readers.get(v, ()):
            for w in ws:
                edges.add(w, r, WR, k, v, v)
    for v1, after in order.items():
        w1 = writers.get(v1, ())
        r1 = readers.get(v1, ())
        for v2 in after:
            for w2 in writers.get(v2, ()):
                for w in w1:
                    edges.add(w, w2, WW, k, v1, v2)
                for r in r1:
                    edges.add(r, w2, RW, k, v1, v2)

