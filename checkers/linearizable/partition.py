"""Per-key checking (P-compositionality) and running keys in parallel on all cores.

A history of independent keys is linearizable iff each key's sub-history is, so each key is
checked on its own. `split_by_key`, `check_key` and `merge_key_results` are pure functions of
picklable data: the Spark engine runs check_key on executors and merges with the same function.
Locally, worker processes are forked after the keys are split, so the history is shared with them
copy-on-write instead of being pickled.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from jepsen_py.checkers.linearizable.budget import Budget, BudgetExceeded
from jepsen_py.checkers.linearizable.calls import build_calls
from jepsen_py.checkers.linearizable.fastpath import FastResult, check_unique_register
from jepsen_py.checkers.linearizable.model import Call, Model, thaw
from jepsen_py.checkers.linearizable.report import anomaly, explain
from jepsen_py.checkers.linearizable.search import search

from jepsen_py.history import INVOKE, NEMESIS, SAMPLE_PROCESSES, Op, validate
from jepsen_py.lifetime import die_with_parent
from jepsen_py.verdict import merge

# Below this many records in all, one process does everything (forking costs more than it saves).
PARALLEL_MIN_OPS = 4000
# An invalid fast-path verdict gets a search for the detailed report, with at most this many seconds.
REPORT_SEARCH_S = 10.0
MAX_FAILURES = 100


def split_by_key(ops: Sequence[Op], model: Model) -> dict[Hashable, list[Op]]:
    """Client ops grouped by the model's partition key, in history order. A completion goes with
    its invocation's key (completions may omit the key)."""
    out: dict[Hashable, list[Op]] = {}
    key_of: dict[Any, Hashable] = {}
    fs = model.fs
    for op in ops:
        p = op.process
        if p == NEMESIS or p in SAMPLE_PROCESSES or (fs is not None and op.f not in fs):
            continue
        if op.type == INVOKE:
            k = model.key(op)
            key_of[p] = k
        else:
            k = key_of.pop(p, None) if p in key_of else model.key(op)
        lst = out.get(k)
        if lst is None:
            out[k] = [op]
        else:
            lst.append(op)
    return out


def check_key(
    model: Model,
    key: Hashable,
    ops: Sequence[Op],
    budget: Budget | None = None,
    *,
    cancel: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """One key's verdict: the fast path when it applies, else (or to explain a violation) the search.
    `cancel` (polled during the search) stops early, e.g. once another key is invalid."""
    budget = (budget or Budget()).started()
    prep = build_calls(ops, model)
    calls = prep.calls
    res: dict[str, Any] = {
        "key": thaw(key),
        "model": model.name,
        "ops": len(calls),
        "dropped": {"fail": prep.failed_dropped, "noop": prep.noop_dropped},
    }
    fast = check_unique_register(calls, model)
    if fast is not None and fast.valid:
        res.update(valid=True, engine="fastpath")
        return res
    if cancel is not None and cancel():
        # The verdict is settled elsewhere: no search, but a cheap fast-path finding still counts.
        if fast is None:
            res.update(valid="unknown", engine="skipped",
                       unknown_reason="not checked: another key is already not linearizable")
        else:
            res.update(valid=False, engine="fastpath",
                       failure=_fast_failure(key, calls, fast, "detailed search skipped: another key "
                                             "is already not linearizable"))
        return res
    search_budget = budget
    if fast is not None:
        from dataclasses import replace

        search_budget = replace(budget, deadline=min(budget.deadline or 0, _now() + REPORT_SEARCH_S))
    try:
        sr = search(calls, model, search_budget, cancel)
    except BudgetExceeded as e:
        if fast is None:
            res.update(valid="unknown", engine="search", unknown_reason=e.reason)
            return res
        res.update(valid=False, engine="fastpath",
                   failure=_fast_failure(key, calls, fast, f"detailed search stopped: {e.reason}"))
        return res
    res.update(engine="search" if fast is None else "fastpath+search", steps=sr.steps, memo=sr.memo)
    if sr.valid is True:
        res["valid"] = True
        if fast is not None:  # the two disagree: the search is the definition; say so loudly
            res["fastpath_disagreed"] = fast.explanation
        return res
    res["valid"] = False
    res["failure"] = explain(key, calls, model, sr.best, sr.best_state)
    if fast is not None:
        res["failure"]["fastpath"] = fast.explanation
    return res


def _fast_failure(key: Hashable, calls: list[Call], fast: FastResult, note: str) -> dict[str, Any]:
    """The fast path's finding in the failure shape (no linearization prefix: it has none)."""
    involved = [calls[i] for i in fast.ops]
    blamed = max(involved, key=lambda c: c.start) if involved else None
    return {
        "key": thaw(key),
        "op": blamed.to_json() if blamed else None,
        "longest_linearization": [],
        "state_before": None,
        "candidates": [],
        "window": sorted(c.index for c in involved),
        "explanation": f"{fast.explanation} ({note})",
    }


def _now() -> float:
    import time

    return time.time()


def merge_key_results(results: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    """Per-key results into the checker's result (shape in the package docstring)."""
    valid = merge(r["valid"] for r in results.values())
    failures = [r["failure"] for r in results.values() if r.get("failure")]
    failures.sort(key=lambda f: (repr(f.get("key")),))
    unknown = {_key_str(r["key"]): r["unknown_reason"] for r in results.values() if r.get("unknown_reason")}
    engines: dict[str, int] = {}
    for r in results.values():
        engines[r.get("engine", "?")] = engines.get(r.get("engine", "?"), 0) + 1
    out: dict[str, Any] = {
        "valid": valid,
        "model": next((r["model"] for r in results.values()), None),
        "keys_checked": len(results),
        "ops": sum(r.get("ops", 0) for r in results.values()),
        "engines": engines,
        "unknown_reasons": unknown,
        "failures": failures[:MAX_FAILURES],
        "anomalies": [anomaly(f) for f in failures[:MAX_FAILURES]],
        # Every invalid key counted, also those past MAX_FAILURES (checkers/anomalies.py's keys).
        "anomaly_counts": {"nonlinearizable": len(failures)} if failures else {},
        "failing_kinds": ["nonlinearizable"] if failures else [],
        "reported_kinds": [],
    }
    if len(failures) > MAX_FAILURES:
        out["failures_truncated"] = len(failures)
    bad_keys = [_key_str(r["key"]) for r in results.values() if r["valid"] is False]
    if bad_keys:
        out["invalid_keys"] = bad_keys
    disagreed = {_key_str(r["key"]): r["fastpath_disagreed"] for r in results.values()
                 if r.get("fastpath_disagreed")}
    if disagreed:
        out["fastpath_disagreed"] = disagreed
    return out


def _key_str(k: Any) -> str:
    return k if isinstance(k, str) else repr(k)


_WORK: list[tuple[Hashable, list[Op]]] = []
_WORK_MODEL: list[Model] = []
_WORK_BUDGET: list[Budget] = []
_WORK_STOP: list[Any] = []  # a fork-inherited multiprocessing Event: set once a key is invalid


def _stopped() -> bool:
    return bool(_WORK_STOP) and _WORK_STOP[0].is_set()


def _work_on(i: int) -> tuple[int, dict[str, Any]]:
    key, ops = _WORK[i]
    r = check_key(_WORK_MODEL[0], key, ops, _WORK_BUDGET[0], cancel=_stopped)
    if r["valid"] is False:
        _WORK_STOP[0].set()
    return i, r


def _worker_signals(parent_pid: int) -> None:
    """Forked workers inherit the runner's SIGTERM/SIGINT handlers, which would keep them alive
    through Pool.terminate() (a hang at exit); give them the defaults: SIGTERM ends a worker, and
    Ctrl-C is the parent's to handle. A parent killed outright (SIGKILL) terminates nothing, so
    the kernel is asked to end the worker when its parent dies."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)


class _Never:
    def is_set(self) -> bool:
        return False

    def set(self) -> None:
        pass


def check(
    ops: Sequence[Op],
    model: Model,
    *,
    budget: Budget | None = None,
    workers: int | None = None,
    source: str = "history",
    stop_at_first_failure: bool = False,
) -> dict[str, Any]:
    """The whole history: Jepsen's rules validated (BadInput otherwise), split by key, keys checked
    in parallel when there is enough work, results merged. Every key is checked within the budget
    and each invalid one reported, as Jepsen's independent checker does: a failover that broke
    hundreds of keys must not read as one anomaly. `stop_at_first_failure` (Porcupine's early
    exit, for a caller that wants only the verdict) stops searching once a key is invalid: keys
    that need a search then end "unknown" with that reason; keys the fast path decides are still
    reported."""
    # Nemesis ops are not the model's business (old Jepsen logs them as lone infos).
    validate([op for op in ops if op.process != NEMESIS], source=source)
    budget = (budget or Budget()).started()
    groups = list(split_by_key(ops, model).items())
    total = sum(len(o) for _, o in groups)
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    n_workers = max(1, min(n_workers, len(groups)))
    results: dict[Any, dict[str, Any]] = {}
    if (n_workers == 1 or total < PARALLEL_MIN_OPS or "fork" not in mp.get_all_start_methods()
            or mp.current_process().daemon):  # a daemonic process may not have children
        failed = [False]
        stop = (lambda: failed[0]) if stop_at_first_failure else None
        for key, kops in groups:
            results[key] = check_key(model, key, kops, budget, cancel=stop)
            failed[0] = failed[0] or results[key]["valid"] is False
    else:
        _WORK[:] = groups
        _WORK_MODEL[:] = [model]
        _WORK_BUDGET[:] = [budget.split_memory(n_workers)]
        ctx = mp.get_context("fork")
        stop = ctx.Event()
        _WORK_STOP[:] = [stop] if stop_at_first_failure else [_Never()]
        try:
            # Largest keys first, so one big key does not start last.
            order = sorted(range(len(groups)), key=lambda i: -len(groups[i][1]))
            chunk = max(1, len(groups) // (n_workers * 8))
            # Leaving the block by an exception (Ctrl-C, SIGTERM made one) terminates the workers.
            with ctx.Pool(n_workers, initializer=_worker_signals, initargs=(os.getpid(),)) as pool:
                for i, r in pool.imap_unordered(_work_on, order, chunksize=chunk):
                    results[groups[i][0]] = r
        finally:
            _WORK.clear()
            _WORK_MODEL.clear()
            _WORK_BUDGET.clear()
            _WORK_STOP.clear()
    out = merge_key_results(results)
    if out["model"] is None:
        out["model"] = model.name
    if model.fs is not None:
        ignored: dict[str, int] = {}
        for op in ops:
            if op.type == INVOKE and op.f not in model.fs and op.process != NEMESIS \
                    and op.process not in SAMPLE_PROCESSES:
                ignored[str(op.f)] = ignored.get(str(op.f), 0) + 1
        if ignored:
            out["ignored"] = ignored
    return out
