"""A brute-force oracle for small transactional histories: is there an execution of the committed
transactions that gives every ok transaction exactly the reads it reported?

  serializable         some order of the ok transactions and of any subset of the info ones,
                       each run alone in turn; failed ones never run
  strict-serializable  the same, where a transaction that completed before another was invoked
                       runs first
  snapshot-isolation   each transaction reads the committed state at its start (and its own
                       writes) and applies its writes at its commit, after its start; two whose
                       [start, commit] overlap never write one key (first committer wins)

Every execution is tried (depth-first, states memoized), so this is exact and exponential: it is
for histories of a handful of transactions, where it judges the exact checker.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.elle.txn import READ, Txn

from jepsen_py.history import FAIL, OK

State = tuple[tuple[Hashable, Any], ...]  # key -> value, sorted by repr of the key


def _apply(state: dict[Hashable, Any], t: Txn, workload: str, check_reads: bool) -> bool:
    """Runs t on `state` (changed in place): its writes applied, and, when `check_reads`, whether
    every read saw what t reported."""
    for f, k, v in t.mops:
        if f == READ:
            if not check_reads:
                continue
            have = state.get(k, () if workload == "list-append" else None)
            want = (() if v is None else v) if workload == "list-append" else v
            if have != want:
                return False
        elif workload == "list-append":
            state[k] = (*state.get(k, ()), v)
        else:
            state[k] = v
    return True


def _frozen(state: dict[Hashable, Any]) -> State:
    return tuple(sorted(state.items(), key=lambda kv: repr(kv[0])))


def _before(txns: Sequence[Txn], realtime: bool) -> dict[int, set[int]]:
    """For each transaction, the ok ones that must run before it (real time)."""
    out: dict[int, set[int]] = {t.id: set() for t in txns}
    if realtime:
        for a in txns:
            if a.type != OK:
                continue
            for b in txns:
                if b.id != a.id and a.complete_pos < b.invoke_pos:
                    out[b.id].add(a.id)
    return out


def serializable(txns: Sequence[Txn], workload: str, *, realtime: bool = False) -> bool:
    live = [t for t in txns if t.type != FAIL]
    must = frozenset(t.id for t in live if t.type == OK)
    before = _before(live, realtime)
    seen: set[tuple[frozenset[int], State]] = set()

    def go(done: frozenset[int], state: dict[Hashable, Any]) -> bool:
        if must <= done:
            return True
        key = (done, _frozen(state))
        if key in seen:
            return False
        seen.add(key)
        for t in live:
            if t.id in done or not before[t.id] <= done:
                continue
            s = dict(state)
            if _apply(s, t, workload, t.type == OK) and go(done | {t.id}, s):
                return True
        return False

    return go(frozenset(), {})


def snapshot_isolation(txns: Sequence[Txn], workload: str) -> bool:
    live = [t for t in txns if t.type != FAIL]
    must = frozenset(t.id for t in live if t.type == OK)
    writes = {t.id: frozenset(k for f, k, _ in t.mops if f != READ) for t in live}
    by_id = {t.id: t for t in live}
    seen: set[Any] = set()

    def go(committed: frozenset[int], running: tuple[tuple[int, frozenset[Hashable]], ...],
           state: dict[Hashable, Any]) -> bool:
        """`running`: started transactions with the keys committed by others since each began."""
        if must <= committed and not running:
            return True
        key = (committed, running, _frozen(state))
        if key in seen:
            return False
        seen.add(key)
        started = {r for r, _ in running}
        # commit a running transaction: no one committed a key it writes since it began
        for i, (tid, since) in enumerate(running):
            if since & writes[tid]:
                continue
            s = dict(state)
            t = by_id[tid]
            _apply(s, t, workload, False)
            rest = tuple((r, ks | writes[tid]) for j, (r, ks) in enumerate(running) if j != i)
            if go(committed | {tid}, rest, s):
                return True
        # start one: its reads must be what the committed state and its own writes give
        for t in live:
            if t.id in committed or t.id in started:
                continue
            if t.type == OK and not _apply(dict(state), t, workload, True):
                continue
            if go(committed, tuple(sorted((*running, (t.id, frozenset())))), state):
                return True
        return False

    return go(frozenset(), (), {})


def decide(txns: Sequence[Txn], workload: str, model: str) -> bool:
    if model == "snapshot-isolation":
        return snapshot_isolation(txns, workload)
    return serializable(txns, workload, realtime=model == "strict-serializable")
