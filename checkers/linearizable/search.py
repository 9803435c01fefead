"""The general search: Wing & Gong's backtracking with Lowe's memo, as Porcupine runs it.

The history is a doubly linked list of call and return entries in event order. Walking from the
head, a call whose step the model accepts is linearized (lifted out of the list with its return)
unless the pair (set of linearized calls, new state) was seen before: that subtree was already
explored (Lowe's memo). Reaching a return entry means that op should have taken effect already:
backtrack. Calls whose completion is info have no return entry: they may be linearized anywhere
after their invocation or never, so success is "every completed op linearized".

One symmetry cut on top: two identical calls (same f, input, output and outcome) X and Y with
X.start <= Y.start and X.end <= Y.end can swap places in any linearization, so Y is only tried
once X is linearized. (Identical ops are interchangeable; assigning linearization points
earliest-deadline-first puts X first whenever any assignment works. An info call is optional, and
an earlier identical info call can take its place.) Etcd-style histories, with a handful of
values, are full of such twins.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jepsen_py.checkers.linearizable.budget import Budget, BudgetExceeded, rss_bytes
from jepsen_py.checkers.linearizable.model import INF, Call, Model

CHECK_EVERY = 4096


@dataclass(slots=True)
class SearchResult:
    """valid True with `order` (call ids in linearization order), False with the longest partial
    linearization found (`best`, `best_state`), or "unknown" with `reason`."""

    valid: Any
    order: list[int] = field(default_factory=list)
    best: list[int] = field(default_factory=list)
    best_state: Any = None
    reason: str | None = None
    steps: int = 0
    memo: int = 0


def search(
    calls: list[Call],
    model: Model,
    budget: Budget | None = None,
    cancel: Callable[[], bool] | None = None,
) -> SearchResult:
    """Is there a linearization of `calls` (one key, ids 0..n-1 in invocation order)?
    `cancel` is polled with the clock; when it answers True the search stops (BudgetExceeded)."""
    budget = (budget or Budget()).started()
    n = len(calls)
    init = model.init()
    finite_total = sum(1 for c in calls if c.end != INF)
    if finite_total == 0:
        return SearchResult(True, [], [], init)

    # Entries: 0 = head sentinel, 1..E, E+1 = tail sentinel.
    events: list[tuple[float, int, int]] = []  # (position, kind 0=call 1=return, call id)
    for c in calls:
        events.append((c.start, 0, c.id))
        if c.end != INF:
            events.append((c.end, 1, c.id))
    events.sort()
    e_count = len(events)
    tail = e_count + 1
    nxt = [*list(range(1, e_count + 2)), tail]
    prv = [0, *range(0, e_count + 1)]
    kind = [0] * (e_count + 2)
    cid = [0] * (e_count + 2)
    match = [0] * (e_count + 2)
    call_entry = [0] * n
    for i, (_, k, c) in enumerate(events, start=1):
        kind[i] = k
        cid[i] = c
        if k == 0:
            call_entry[c] = i
        else:
            match[call_entry[c]] = i
    kind[tail] = 2

    twin = _twins(calls)
    compiled = [model.compile(c) for c in calls]
    # Per-entry arrays, so the hot loop indexes once: ekind 0 = completed call, 1 = info call,
    # 2 = return entry or tail (the end of the candidates); a call may be tried once its twin's
    # bit is set (etwin 0: no twin).
    size = e_count + 2
    ekind = [2] * size
    ebit = [0] * size
    etwin = [0] * size
    efin = [0] * size
    estep: list[Any] = [None] * size
    for e in range(1, e_count + 1):
        if kind[e] == 0:
            c = calls[cid[e]]
            ekind[e] = 0 if c.end != INF else 1
            efin[e] = 1 - ekind[e]
            ebit[e] = 1 << c.id
            etwin[e] = (1 << twin[c.id]) if twin[c.id] >= 0 else 0
            estep[e] = compiled[c.id]

    cache: set[tuple[int, Any]] = set()
    stack: list[tuple[int, Any, int, list[int], int]] = []
    state = init
    bits = 0
    left = finite_total
    best_len = -1
    best: list[int] = []
    best_state = init
    best_dirty = False
    max_memo = budget.memo_entries(n)
    deadline = budget.deadline if budget.deadline is not None else time.time() + budget.time_s
    rss0 = rss_bytes()
    max_rss_growth = budget.memory_mb * 1024 * 1024
    steps = 0
    countdown = CHECK_EVERY
    # Candidates for the next place are the calls before the first return entry. Completed ops are
    # tried first (phase 0), info ops after (phase 1): an info op usually took effect late or not
    # at all, so valid histories are found sooner; the set of candidates is the same.
    phase = 0
    infos: list[int] = []  # info-call entries this level's phase-0 scan walked past
    idx = 0  # phase 1: the position in `infos`
    e = nxt[0]
    while True:
        if phase == 0:
            k = ekind[e]
            if k == 1:
                infos.append(e)
                e = nxt[e]
                continue
            if k == 0:
                cand = e
            else:  # completed candidates exhausted: now the info ones
                phase = 1
                idx = 0
                cand = infos[0] if infos else 0
        else:
            cand = infos[idx] if idx < len(infos) else 0
        if cand:
            # Every candidate tried counts towards the next look at the clock, rejected ones too: a
            # level with thousands of candidates the model or the memo turns down is where the time
            # goes, and counting only lifts let a 2 s budget run for half a minute.
            countdown -= 1
            if countdown == 0:
                countdown = CHECK_EVERY
                steps += CHECK_EVERY
                _check_budget(deadline, cancel, cache, max_memo, rss0, max_rss_growth,
                              budget.memory_mb, steps, n)
            tb = etwin[cand]
            if bits & tb == tb:
                ok, new_state = estep[cand](state)
                if ok:
                    nb = bits | ebit[cand]
                    key = (nb, new_state)
                    if key not in cache:
                        cache.add(key)
                        stack.append((cand, state, phase, infos, idx))
                        state = new_state
                        bits = nb
                        # lift the call and its return
                        a, b = prv[cand], nxt[cand]
                        nxt[a] = b
                        prv[b] = a
                        r = match[cand]
                        if r:
                            a, b = prv[r], nxt[r]
                            nxt[a] = b
                            prv[b] = a
                        left -= efin[cand]
                        if left == 0:
                            order = [cid[x[0]] for x in stack]
                            return SearchResult(True, order, steps=steps, memo=len(cache))
                        if len(stack) > best_len:  # copied lazily, at the next backtrack
                            best_len = len(stack)
                            best_dirty = True
                        phase = 0
                        infos = []
                        e = nxt[0]
                        continue
            if phase == 0:
                e = nxt[cand]
            else:
                idx += 1
            continue
        # Every candidate tried: backtrack.
        if best_dirty:  # the deepest prefix so far: keep it for the report
            best = [cid[x[0]] for x in stack]
            best_state = state
            best_dirty = False
        if not stack:
            return SearchResult(False, [], best, best_state, steps=steps, memo=len(cache))
        cand, state, phase, infos, idx = stack.pop()
        bits &= ~ebit[cand]
        left += efin[cand]
        r = match[cand]
        if r:
            nxt[prv[r]] = r
            prv[nxt[r]] = r
        nxt[prv[cand]] = cand
        prv[nxt[cand]] = cand
        if phase == 0:
            e = nxt[cand]
        else:
            idx += 1
        countdown -= 1
        if countdown == 0:
            countdown = CHECK_EVERY
            steps += CHECK_EVERY
            _check_budget(deadline, cancel, cache, max_memo, rss0, max_rss_growth, budget.memory_mb, steps, n)

def _check_budget(
    deadline: float,
    cancel: Callable[[], bool] | None,
    cache: set[tuple[int, Any]],
    max_memo: int,
    rss0: int | None,
    max_rss_growth: int,
    memory_mb: int,
    steps: int,
    n: int,
) -> None:
    if time.time() > deadline:
        raise BudgetExceeded(
            f"time limit reached after {steps} steps and {len(cache)} memo entries ({n} ops on this key)"
        )
    if cancel is not None and cancel():
        raise BudgetExceeded("cancelled: another key is already not linearizable")
    grown = 0 if rss0 is None else (rss_bytes() or rss0) - rss0
    if len(cache) > max_memo or grown > max_rss_growth:
        raise BudgetExceeded(
            f"memory limit ({memory_mb} MB) reached: {len(cache)} memo entries, "
            f"{grown // (1024 * 1024)} MB grown ({n} ops on this key)"
        )

def _twins(calls: list[Call]) -> list[int]:
    """For each call, the identical call that must be linearized before it, or -1."""
    twin = [-1] * len(calls)
    groups: dict[Any, list[Call]] = {}
    for c in calls:  # in start order
        try:
            sig = (c.f, c.input, c.output, c.known, c.outcome, c.error)
            group = groups.setdefault(sig, [])
        except TypeError:  # unhashable value: no symmetry for it
            continue
        for x in reversed(group):
            if x.end <= c.end:
                twin[c.id] = x.id
                break
        group.append(c)
    return twin
