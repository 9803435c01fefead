"""The analysis of a run: the history read back, every checker on it, results.json, the verdict and
the exit code, then the post-run steps the caller asked for (pictures, Parquet).

Kept apart from the phases so `jepsen-py analyze` and a run share one definition of what a verdict
is, and so the runner knows nothing of pictures or Spark: the CLI passes those in as post-run steps.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jepsen_py import store
from jepsen_py.bounded import Escaped, TimedOut, call_bounded, said
from jepsen_py.checkers.stats import StatsChecker
from jepsen_py.errors import EXIT_FRAMEWORK, BadInput, FrameworkFailure, JepsenError
from jepsen_py.history import INVOKE, OK, Op, read_history, validate
from jepsen_py.protocols import Checker, Test
from jepsen_py.verdict import Valid, exit_code, merge

log = logging.getLogger(__name__)

#: A step run after results.json is written, with the run directory. Its failure is logged, never
#: fatal: a plot must not change a verdict.
PostRun = Callable[[Path], None]


def unique_name(name: str, taken: dict[str, Any]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}-{i}" in taken:
        i += 1
    return f"{name}-{i}"


def with_stats(checkers: Sequence[Checker]) -> list[Checker]:
    """The checkers, plus the stats checker when none of them is one.

    Jepsen's stats rule is what fails a run that did nothing (no client op, or none ever ok); an
    outside workload with no checkers, or none that look at outcomes, would otherwise pass it."""
    if any(isinstance(c, StatsChecker) for c in checkers):
        return list(checkers)
    return [*checkers, StatsChecker()]


def nothing_checked(fs: frozenset[str] | None, history: Sequence[Op]) -> str | None:
    """Why the workload's checkers judged nothing, when the history has client ops but none of the
    `fs` they judge (Workload.fs); None when they judged something or `fs` is not declared.

    A history without client ops is the stats checker's to call unknown; this is the other case,
    ops that the workload does not check: every checker answers valid on the empty part it reads."""
    if fs is None:
        return None
    seen: dict[str, int] = {}
    for op in history:
        if isinstance(op.process, int) and op.type == INVOKE:
            seen[str(op.f)] = seen.get(str(op.f), 0) + 1
    if not seen or any(f in fs for f in seen):
        return None
    has = ", ".join(f"{n} {f}" for f, n in sorted(seen.items()))
    return (f"none of the client ops is one this workload checks ({', '.join(sorted(fs))}); "
            f"the history has {has}: nothing was checked")


#: How long a plugin's checker may take (spec.options["checker_time_s"] overrides it); our own
#: checkers keep their own budgets.
PLUGIN_CHECKER_TIME_S = 600.0


def run_checkers(checkers: Sequence[Checker], test: Test | None, history: Sequence[Op], *,
                 fs: frozenset[str] | None = None) -> dict[str, Any]:
    """Every checker on the history (with the stats checker added if missing); a checker that
    raises or answers nonsense counts as unknown, and so does the whole when the history has none
    of the ops `fs` the workload checks (an entry "workload" says why).

    A plugin's checker (one not of this package) is code the gate runs, so its mistakes stay its
    own: it gets a copy of the history (its edits reach no other checker), a deadline (a call that
    never returns is unknown), and it runs on a thread of its own (jepsen_py.bounded), so a
    KeyboardInterrupt or SystemExit it raises is unknown like any other exception, while a real
    Ctrl-C or SIGTERM still stops the run.

    Returns {"valid": merged, "checkers": {name: result}} (results.json's shape).
    """
    out: dict[str, Any] = {}
    for c in with_stats(checkers):
        name = unique_name(str(getattr(c, "name", type(c).__name__)), out)
        t0 = time.monotonic()
        try:
            plugin = is_plugin(c)
            if plugin:
                r = call_bounded(c.check, test, private_copy(history), timeout_s=_checker_time(test),
                                 name=f"checker {name}")
            else:
                r = c.check(test, history)
            r = well_formed(r, plugin)
        except Exception as e:  # what a plugin's thread raised, SystemExit too, arrives as Escaped
            r = _raised(name, e)
        log.info("checker %s: valid=%s (%.2fs)", name, r["valid"], time.monotonic() - t0)
        out[name] = r
    why = nothing_checked(fs, history)
    if why is not None:
        log.warning("%s", why)
        out[unique_name("workload", out)] = {"valid": "unknown", "reason": why}
    return {"valid": merge(r["valid"] for r in out.values()), "checkers": out}


def _raised(name: str, e: Exception) -> dict[str, Any]:
    """A broken checker is the checker's problem, not the run's: one line on the console (a
    traceback there reads as the framework crashing), the traceback in jepsen.log."""
    error = _one_line(str(e) if isinstance(e, TimedOut | Escaped) else said(e))
    log.warning("checker %s %s; its verdict is unknown",
                name, error if isinstance(e, TimedOut) else f"raised {error}")
    log.debug("checker %s traceback", name, exc_info=e)
    return {"valid": "unknown", "error": error}


def is_plugin(c: object) -> bool:
    return not type(c).__module__.startswith("jepsen_py.")


def _checker_time(test: Test | None) -> float:
    opts = getattr(getattr(test, "spec", None), "options", None) or {}
    v = opts.get("checker_time_s", PLUGIN_CHECKER_TIME_S) if isinstance(opts, dict) else None
    ok = isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < float("inf")
    return float(v) if ok else PLUGIN_CHECKER_TIME_S  # type: ignore[arg-type]


def private_copy(history: Sequence[Op]) -> list[Op]:
    """The history with every record and value copied: what a plugin's checker changes in it
    changes nothing any other checker reads."""
    return [Op(o.index, o.time, o.type, o.process, o.f, _copy(o.key), _copy(o.value), o.node,
               _copy(o.error), _copy(o.meta)) for o in history]


def _copy(v: Any) -> Any:
    if isinstance(v, list):
        return [_copy(x) for x in v]
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    return v


def well_formed(r: Any, plugin: bool = True) -> dict[str, Any]:
    """A checker's result as results.json and every summary can read it: a dict whose "valid" is
    exactly true, false or "unknown" (1, 1.0, "true" are no verdict: Python says 1 == True), whose
    lists and counts have the shapes the summaries read, and (a plugin's) which is JSON; else
    unknown, why."""
    if not isinstance(r, dict):
        return {"valid": "unknown", "error": _one_line(f"checker returned no result dict: {r!r}")}
    v = r.get("valid")
    if not (v is True or v is False or (type(v) is str and v == "unknown")):
        return {"valid": "unknown", "error": _one_line(f"checker returned no valid verdict: valid={v!r}")}
    why = _misshapen(r)
    if why is not None:
        return {"valid": "unknown", "error": _one_line(f"checker result {why}")}
    if plugin:
        try:
            json.dumps(r, default=str, allow_nan=True)
        except (TypeError, ValueError, RecursionError) as e:
            return {"valid": "unknown", "error": _one_line(f"checker result is not JSON ({e})")}
    return r


def _misshapen(r: dict[str, Any]) -> str | None:
    for key in ("anomalies", "other_anomalies", "failing_kinds"):
        if key in r and not isinstance(r[key], list):
            return f"has {key} that is not a list: {type(r[key]).__name__}"
    counts = r.get("anomaly_counts")
    if counts is not None and not (isinstance(counts, dict) and all(
            isinstance(k, str) and type(n) is int for k, n in counts.items())):
        return "has anomaly_counts that are not whole numbers by kind"
    if not all(isinstance(k, str) for k in r):
        return "has keys that are not strings"
    return None


@dataclass(frozen=True)
class AnomalyTally:
    """Anomalies over every checker, by kind: those that fail the run and those only reported (a
    stale read of a system run with linearizable=false), so a summary never prints a true verdict
    beside an unexplained anomaly count."""

    failing: dict[str, int] = field(default_factory=dict)
    reported: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.failing.values()) + sum(self.reported.values())


def checker_tally(result: dict[str, Any]) -> AnomalyTally:
    """One checker's anomalies. A checker that says which kinds fail it (`anomaly_counts` with
    `failing_kinds`, checkers/anomalies.py) is taken at its word, counts past the listed hundred
    included; for any other, its listed anomalies fail the run if its verdict is false and are
    reported only otherwise."""
    counts = result.get("anomaly_counts")
    if not isinstance(counts, dict) or "failing_kinds" not in result:
        counts = {}
        for a in result.get("anomalies") or []:
            kind = str(a.get("kind", "anomaly")) if isinstance(a, dict) else "anomaly"
            counts[kind] = counts.get(kind, 0) + 1
        failing_kinds = set(counts) if result.get("valid") is False else set()
    else:
        failing_kinds = set(result.get("failing_kinds") or [])
    failing: dict[str, int] = {}
    reported: dict[str, int] = {}
    for kind, n in counts.items():
        if isinstance(n, int) and n > 0:
            (failing if kind in failing_kinds else reported)[str(kind)] = n
    return AnomalyTally(failing, reported)


def tally_anomalies(results: dict[str, Any]) -> AnomalyTally:
    """Every checker's tally of a results.json, summed by kind."""
    failing: dict[str, int] = {}
    reported: dict[str, int] = {}
    for r in (results.get("checkers") or {}).values():
        if isinstance(r, dict):
            t = checker_tally(r)
            for src, dst in ((t.failing, failing), (t.reported, reported)):
                for kind, n in src.items():
                    dst[kind] = dst.get(kind, 0) + n
    return AnomalyTally(failing, reported)


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def count_anomalies(results: dict[str, Any]) -> int:
    """Every anomaly found, failing or reported only, also those past a checker's listed hundred."""
    return tally_anomalies(results).total


def client_stats(history: Sequence[Op]) -> tuple[int, int]:
    """(client invocations, ok completions)."""
    invokes = oks = 0
    for op in history:
        if isinstance(op.process, int):
            if op.type == INVOKE:
                invokes += 1
            elif op.type == OK:
                oks += 1
    return invokes, oks


def run_post_steps(steps: Iterable[PostRun], run_dir: Path) -> None:
    """Each step on the run directory; a failing step is logged and the next one still runs."""
    for step in steps:
        try:
            step(run_dir)
        except Exception:
            log.exception("post-run step %s failed", getattr(step, "__name__", step))


@dataclass
class Analysis:
    """What the analysis of one run concluded."""

    results: dict[str, Any]
    error: BaseException | None
    invokes: int = 0
    oks: int = 0
    history: list[Op] = field(default_factory=list)

    @property
    def valid(self) -> Valid:
        valid: Valid = self.results["valid"]
        return valid

    @property
    def exit_code(self) -> int:
        """A failure's own code (254 bad input, 255 framework), else the verdict's (0, 1, 2)."""
        if self.error is not None:
            return self.error.exit_code if isinstance(self.error, JepsenError) else EXIT_FRAMEWORK
        return exit_code(self.valid)


def analyse(history_path: Path, *, checkers: Sequence[Checker], test: Test | None, judge: bool,
            error: BaseException | None, interrupted: bool,
            on_check: Callable[[], None] | None = None, fs: frozenset[str] | None = None) -> Analysis:
    """Reads and validates the history; runs the checkers when `judge` (the main phase ran and
    nothing interrupted it); a run that failed or was interrupted is at best unknown. `fs`: the
    ops the workload checks (Workload.fs)."""
    history: list[Op] = []
    try:
        history = read_history(history_path)
        validate(history, source=str(history_path))
    except BadInput as e:
        error = error or FrameworkFailure(f"the runner wrote an invalid history: {e}")
    results: dict[str, Any]
    if judge and not interrupted:
        if on_check is not None:
            on_check()
        results = run_checkers(checkers, test, history, fs=fs)
    else:
        results = {"valid": "unknown", "checkers": {}}
    invokes, oks = client_stats(history)
    if error is not None or interrupted:
        results["valid"] = merge([results["valid"], "unknown"])
        results["error"] = "interrupted" if interrupted else f"{type(error).__name__}: {error}"
    return Analysis(results=results, error=error, invokes=invokes, oks=oks, history=history)


def write_results(run_dir: Path, results: dict[str, Any]) -> None:
    store.write_json(run_dir / store.RESULTS, results)
    log.info("verdict: valid=%s", results["valid"])
