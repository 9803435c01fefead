"""`jepsen-py explore`: search workloads x fault schedules x seeds for a failing run, with no hint of
where the bug is, then shrink what fails to a small schedule that still fails.

In the simulator (the default) thousands of trials fit in a budget and a replay is exact. On docker,
ssh or local every trial is an ordinary short run of any DB (--db), its space drawn from what the DB
declares (workloads, read modes, capabilities, the values of its --db-options), and a shrinking step
is kept only when the failure comes back at the rate --reproduce asks, since a real replay repeats
the faults, not the answers. On maelstrom every trial is a short run of the node program --bin
names, its space that world's own: Maelstrom's workloads, partitions, kill and pause of the node
processes, and the network's latency (--latency and --latency-dist fix it, else it is drawn).

Exit codes: 1 at the first finding (or, with --keep-going, when the budget ends with any), 0 when the
budget ends with none, 2 when no trial reached a verdict, 254 bad arguments, 255 when no trial could
run at all.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from jepsen_py.backends import (
    add_backend_arguments,
    backend_kind,
    backend_options,
    given_backend_dests,
    simulator,
)
from jepsen_py.errors import EXIT_FRAMEWORK, EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, BadInput
from jepsen_py.explore import corpus as corpusdir
from jepsen_py.explore import report as report_page
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.driver import FindingRules, fan_out
from jepsen_py.explore.fanout import TASK_TRIALS, FanoutStats, ProcessRunner, Runner
from jepsen_py.explore.finding import FindingReport, handle_finding, stops_search
from jepsen_py.explore.plan import (
    FAMILY_NAMES,
    REAL_REPRODUCE,
    REAL_SHRINK_BUDGET_S,
    SIM_SHRINK_BUDGET_S,
    WORLD_TIME_LIMITS,
    Plan,
    PlanRequest,
)
from jepsen_py.explore.plan import plan as plan_search
from jepsen_py.explore.realspace import REAL_NODE_COUNTS, REAL_TIME_LIMITS
from jepsen_py.explore.search import Search, Trial, primary_kind
from jepsen_py.explore.space import DEFAULT_WORKLOADS, Space
from jepsen_py.explore.system import BackendSystem
from jepsen_py.files import DIR_MODE, make_dirs
from jepsen_py.flags import check_room, path_text
from jepsen_py.lifetime import signal_name, signals_raise
from jepsen_py.numbers import MAX_SECONDS, fraction, integer, number
from jepsen_py.numbers import seed as seed_type
from jepsen_py.postrun import CLI_POST_RUN
from jepsen_py.spark.explore import open_runner
from jepsen_py.spark.tasks import check_master
from jepsen_py.spec import DEFAULT_DB
from jepsen_py.store import timestamp, write_text_atomic

NAME = "explore"
HELP = "search fault schedules (in simulation or on a real backend) for a failing run, with no hint where"

# the largest N --reproduce K/N takes
MAX_REPRODUCE_TRIES = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "example: jepsen-py explore --bug zombie-leader --budget 60; on Docker: jepsen-py explore "
        "--backend docker --db MODULE:CLASS --budget 900; a Maelstrom node: jepsen-py explore --backend "
        "maelstrom --bin ./node --workload broadcast --time-limit 5 --budget 120. Exit codes: 1 a "
        "finding, 0 none within the budget, 2 no trial reached a verdict, 254 bad arguments, 255 no "
        "trial could run."
    )
    g = parser.add_argument_group("search")
    g.add_argument("--budget", type=number(0, MAX_SECONDS, lo_open=True), default=60.0, metavar="S",
                   help="wall seconds to search (default: 60); shrinking a finding comes on top")
    g.add_argument("--shrink-budget", type=number(0, MAX_SECONDS), default=None, metavar="S",
                   help=f"wall seconds to shrink each finding, 0 = do not shrink (default: "
                        f"{SIM_SHRINK_BUDGET_S:g}; {REAL_SHRINK_BUDGET_S:g} on a real backend)")
    g.add_argument("--reproduce", type=fraction(MAX_REPRODUCE_TRIES), default=None, metavar="K/N",
                   help="on a real backend, keep a shrinking step only when K of N replays show the failure "
                        "again, and replay the schedule written N times to report its rate (default: "
                        f"{REAL_REPRODUCE[0]}/{REAL_REPRODUCE[1]}; a simulated replay is exact)")
    g.add_argument("--harden-budget", type=number(0, MAX_SECONDS), default=120.0, metavar="S",
                   help="wall seconds to forecast how often a real backend reproduces a shrunk schedule and "
                        "harden it (half or less, a larger schedule from the shrink's path; kill and pause "
                        "targets widened where that raises the forecast), 0 = do not (default: 120); in "
                        "simulation only: a real backend replays it --reproduce's N times instead")
    g.add_argument("--until-replayable", action="store_true",
                   help="do not stop at a finding that half or fewer of its in-kind replays under other "
                        "timings show (one a real backend would rarely reproduce): search on for one that "
                        "replays, until the budget ends")
    g.add_argument("--keep-going", action="store_true",
                   help="do not stop at the first finding: search the whole budget")
    g.add_argument("--seed", type=seed_type, default=None,
                   help="seed of the search itself (default: random, printed)")
    g.add_argument("--backend", default=simulator(),
                   help="where trials run: sim (default: thousands of trials, exact replays), or docker, "
                        "ssh, local (ordinary runs of tens of seconds each, of any --db), or maelstrom "
                        "(runs of seconds of the node program --bin names)")
    g.add_argument("--parallel", type=integer(1, 1024), default=None, metavar="N",
                   help="search in N worker processes on this machine, merging their coverage (default: in "
                        "this process); with --master, how many Spark tasks at once (default: its cores)")
    g.add_argument("--master", default=None, metavar="URL",
                   help="run the trials on Spark's executors: spark://HOST:PORT, local[N], yarn or "
                        "k8s://URL; findings are shrunk here")
    g.add_argument("--round-size", type=integer(1, 65536), default=None, metavar="N",
                   help="with --parallel or --master: search in rounds of N tasks of "
                        f"{TASK_TRIALS} trials each, merged in order, so that the same --seed and N try "
                        "the same schedules whatever the cores (default: each core's slices merged "
                        "as they come back, which keeps every core busy but is not repeatable)")
    g.add_argument("--corpus", type=path_text, default=None, metavar="DIR",
                   help="start from the configurations an earlier search with this DIR kept, and keep the "
                        "ones that reach new coverage there (one JSON file each; created if missing)")
    s = parser.add_argument_group("space (each narrows what the search may try)")
    s.add_argument("--bug", action="append", metavar="NAMES",
                   help="start the cluster with a known bug, comma separated or repeated")
    s.add_argument("--db", default=DEFAULT_DB, metavar="MODULE:CLASS",
                   help="the system under test on a real backend: our cluster (default), MODULE:CLASS or a "
                        "jepsen_py.db entry point; the space comes from what it declares")
    s.add_argument("--db-option", action="append", default=None, metavar="KEY=VALUE",
                   help="fix one of the DB's settings (else the search tries the values its "
                        "db_option_values() declares), repeatable")
    s.add_argument("--workload", action="append", metavar="NAMES",
                   help=f"workloads to try (default: {', '.join(DEFAULT_WORKLOADS)})")
    s.add_argument("--nemesis", action="append", metavar="NAMES",
                   help=f"fault families to mix (default: {', '.join(FAMILY_NAMES)}; none for no faults); "
                        "on a real backend also MODULE:NAME, an outside nemesis whose declared faults "
                        "join them")
    s.add_argument("--read-mode", action="append", metavar="MODES",
                   help="read modes to try (default: read-index,lease; local is stale by design)")
    s.add_argument("--node-count", action="append", type=integer(1, 9), metavar="N",
                   help="node counts to try, repeatable (default: "
                        f"{' and '.join(map(str, REAL_NODE_COUNTS))}, the smallest most often; on ssh "
                        "at most the hosts --ssh-host names, which are the nodes)")
    s.add_argument("--time-limit", action="append", type=number(1, 3600), metavar="S",
                   help="main-phase lengths to try, repeatable (default: 8, 15, 25 in simulation; "
                        f"{', '.join(f'{t:g}' for t in REAL_TIME_LIMITS)} on a real backend; "
                        f"{', '.join(f'{t:g}' for t in WORLD_TIME_LIMITS)} on maelstrom)")
    add_backend_arguments(parser)
    o = parser.add_argument_group("output")
    o.add_argument("--results-dir", type=path_text, default="results", metavar="DIR",
                   help="where the search's directory goes (default: ./results)")
    o.add_argument("--no-progress", action="store_true", help="no live progress display")


class _View:
    """The live line: schedules tried, simulated (or run) time, findings."""

    def __init__(self, search: Search, budget: float, started: float, *, time_word: str) -> None:
        self.search = search
        self.budget = budget
        self.started = started
        self.status = "searching"
        self.time_word = time_word

    def __rich__(self) -> Text:
        st = self.search.stats
        el = time.monotonic() - self.started
        t = Text()
        t.append("explore ", style="bold")
        t.append(f"[{self.status}] ", style="cyan")
        t.append(f"{el:6.1f}/{self.budget:g}s  schedules {st.tried}  "
                 f"{self.time_word} {st.sim_seconds:,.0f}s  features {st.features}  corpus {st.corpus}  ")
        t.append(f"findings {st.findings}", style="red" if st.findings else "green")
        if st.errors:
            t.append(f"  errors {st.errors}", style="yellow")
        t.append(f"\n  last: {st.last}", style="dim")
        return t


def request(args: argparse.Namespace) -> PlanRequest:
    """The search the flags ask for, as plain values (explore/plan.py decides what they mean)."""
    return PlanRequest(backend=args.backend, db=args.db, backend_options=backend_options(args),
                       results_dir=args.results_dir, bugs=args.bug, db_options=args.db_option,
                       workloads=args.workload, nemeses=args.nemesis, read_modes=args.read_mode,
                       node_counts=args.node_count, time_limits=args.time_limit, reproduce=args.reproduce,
                       shrink_budget=args.shrink_budget,
                       given_backend_options=tuple(given_backend_dests(args)))


def plan(args: argparse.Namespace) -> Plan:
    """The search the flags describe, checked (explore/plan.py) after the backend's own checks of
    them; one BadInput line for anything the backend or DB cannot do."""
    backend_kind(args.backend).check_args(args)
    return plan_search(request(args))


def run(args: argparse.Namespace) -> int:
    import secrets

    if (args.master is not None or args.parallel is not None) and not backend_kind(args.backend).simulated:
        flag = "--master" if args.master is not None else "--parallel"
        raise BadInput(f"{flag}: trials fan out in the simulator only (--backend sim), not --backend "
                       f"{args.backend}")
    if args.round_size is not None and args.master is None and args.parallel is None:
        raise BadInput("--round-size: rounds of tasks for --parallel or --master; a search in one "
                       "process is repeatable as it is")
    p = plan(args)
    bugs, space = p.bugs, p.space
    if args.master is not None:
        check_master(args.master)
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)

    check_room("--results-dir", args.results_dir)
    corpus = corpusdir.open_dir(Path(args.corpus)) if args.corpus is not None else None
    runner = _runner(args)  # Spark refuses a master it cannot reach before anything is written
    out_dir = Path(args.results_dir) / "explore" / timestamp()
    try:
        make_dirs(out_dir.parent)
        out_dir.mkdir(DIR_MODE)
    except OSError as e:
        raise BadInput(f"--results-dir: cannot create {out_dir}: {e.strerror or e}") from None
    system = BackendSystem(work_dir=out_dir / "trials", bugs=bugs, backend=p.backend, db=p.db,
                           backend_options=p.backend_options, outside=p.outside,
                           hosts=p.hosts)
    search = Search(system, space, seed=seed, draws=p.draws)
    keeper = _load_corpus(corpus, search, space, seed, bugs) if corpus is not None else None
    console = Console(stderr=True)
    live_ok = not args.no_progress and console.is_terminal
    print(f"explore: seed {seed}, budget {args.budget:g} s, backend {p.backend}, "
          f"bugs {', '.join(bugs) or 'none'}"
          f"{f', reproduce {p.reproduce_text}' if p.reproduce_text else ''}; in {out_dir}",
          file=sys.stderr)

    started, cpu0 = time.monotonic(), time.process_time()
    view = _View(search, args.budget, started, time_word=p.time_word)
    findings: list[FindingReport] = []
    trials_with_finding: list[Trial] = []
    rows: list[report_page.TrialRow] = []
    live = Live(view, console=console, refresh_per_second=4, transient=True) if live_ok else None
    last_line = started
    handled = handled_cpu = 0.0  # wall and CPU seconds spent shrinking and hardening findings
    interrupted: dict[str, Any] | None = None
    if live is not None:
        live.__enter__()
    # SIGTERM (and Ctrl-C) stop the search where it is, and explore.json still says what it did.
    catch = (signal.SIGTERM,) + ((signal.SIGINT,) if signal.getsignal(signal.SIGINT)
                                 is signal.default_int_handler else ())
    fan = FanoutStats() if runner is not None else None  # kept when a signal stops the fan-out
    with signals_raise(lambda signum: KeyboardInterrupt(signal_name(signum)), catch) as received:
        try:
            if runner is not None and fan is not None:  # --parallel, --master: slices on other cores
                _fan_out(args, p.shrink_budget, runner, fan, search, system, bugs, out_dir, started, view,
                         findings, trials_with_finding, keeper, live_ok, rows)
            deadline = started + args.budget
            while runner is None and time.monotonic() < deadline:
                system.deadline = deadline  # a trial still running when the budget ends is cut short
                before = search.stats.features
                trial = search.step()
                system.deadline = None
                if keeper is not None:
                    keeper.flush()
                if trial.cut:
                    break
                rows.append(report_page.trial_row(trial, search, before,
                                                  time.monotonic() - started - handled))
                if not live_ok and not args.no_progress and (time.monotonic() - last_line >= 10
                                                              or p.line_per_trial):
                    last_line = time.monotonic()
                    st = search.stats
                    print(f"[{last_line - started:6.1f}s] schedules {st.tried}, "
                          f"{view.time_word} {st.sim_seconds:,.0f} s, features {st.features}, "
                          f"findings {st.findings}, errors {st.errors}", file=sys.stderr, flush=True)
                if trial.error and search.stats.errors == 1:
                    print(f"explore: a trial failed to run: {trial.error}", file=sys.stderr)
                if not trial.failed:
                    continue
                trials_with_finding.append(trial)
                view.status = "shrinking"
                h0, hcpu0 = time.monotonic(), time.process_time()
                findings.append(handle_finding(trial, system, search, out_dir, len(findings) + 1,
                                               h0 - started - handled, hcpu0 - cpu0 - handled_cpu,
                                               p.shrink_budget, p.harden_budget(args.harden_budget),
                                               post_run=CLI_POST_RUN, reproduce=p.reproduce))
                # shrinking and hardening come on top of the search's budget (a later finding's time
                # counts search alone, and so does the live line)
                spent = time.monotonic() - h0
                handled += spent
                handled_cpu += time.process_time() - hcpu0
                deadline += spent
                view.started += spent
                view.status = "searching"
                if stops_search(findings[-1], keep_going=args.keep_going,
                                until_replayable=args.until_replayable):
                    break
        except KeyboardInterrupt:
            _ignore(catch)  # a second signal while the partial run is removed would leave it half done
            unfinished = trials_with_finding[len(findings):]
            interrupted = _interrupted(received, view.status, system,
                                       out_dir / f"finding-{len(findings) + 1}", unfinished)
        finally:
            if live is not None:
                live.__exit__(None, None, None)
        _ignore(catch)  # nor would one while the summary is written leave any
        if keeper is not None:
            keeper.flush()
        code = _summarize(args, seed, p, search, started, cpu0, findings, out_dir, interrupted, rows,
                          _fanout_summary(args, runner, fan, keeper))
    if interrupted is not None:
        raise KeyboardInterrupt(interrupted["signal"])
    return code


def _ignore(signals: tuple[int, ...]) -> None:
    for sig in signals:
        signal.signal(sig, signal.SIG_IGN)


def _interrupted(received: list[int], status: str, system: Any, fdir: Path,
                 unfinished: list[Trial]) -> dict[str, Any]:
    """What explore.json says of an interruption: the signal, what the search was doing, the partial
    run it removed (a cut-off history is no trial), and a finding it had not finished with."""
    removed = system.abandon()
    note: dict[str, Any] = {"signal": signal_name(received[-1]) if received else "SIGINT", "during": status,
                            "partial_run_removed": str(removed) if removed is not None else None}
    if unfinished:
        trial = unfinished[0]
        found = fdir / "schedule-found.json"
        note["unfinished_finding"] = {"kind": primary_kind(trial.anomalies), "kinds": dict(trial.anomalies),
                                      "run_dir": str(trial.run_dir) if trial.run_dir else None,
                                      "schedule_file": str(found) if found.is_file() else None}
    return note


def _summarize(args: argparse.Namespace, seed: int, p: Plan, search: Search,
               started: float, cpu0: float, findings: list[FindingReport], out_dir: Path,
               interrupted: dict[str, Any] | None, rows: list[report_page.TrialRow],
               fanout: dict[str, Any] | None = None) -> int:
    """Writes explore.json and report.html and prints the summary; returns the exit code the
    findings give."""
    st = search.stats
    wall = time.monotonic() - started
    cpu = time.process_time() - cpu0 + (fanout or {}).get("task_cpu_s", 0.0)
    summary: dict[str, Any] = {
        "seed": seed, "budget_s": args.budget, "backend": p.backend, "db": p.db, "bugs": p.bugs,
        "reproduce": p.reproduce_text,
        "space": asdict(p.space), "draws": search.draws, "trials_unknown": sum(1 for r in rows if r.unknown),
        "schedules_tried": st.tried, "trials_cut_by_budget": st.cut, "simulated_s": round(st.sim_seconds, 3),
        "errors": st.errors,
        "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
        "schedules_per_hour": round(st.tried * 3600 / wall, 1) if wall > 0 else None,
        "coverage_features": st.features,
        "corpus": st.corpus, "findings": [asdict(f) for f in findings],
    }
    if fanout is not None:
        summary["fanout"] = fanout
    if interrupted is not None:
        summary["interrupted"] = interrupted
    write_text_atomic(out_dir / "explore.json", json.dumps(summary, indent=1, default=str) + "\n")
    page = report_page.write(out_dir, {**summary, "findings": [
        {**asdict(f), "schedule_text": _schedule_text(f.schedule_file)} for f in findings]}, rows)
    if interrupted is not None:
        print(f"explore: interrupted by {interrupted['signal']} while {interrupted['during']}",
              file=sys.stderr)
    word = p.time_word
    where = ""
    if fanout is not None and fanout.get("slots"):
        where = f" on {fanout['where']} ({fanout['slots']} at once, {fanout['tasks']} slices)"
    print(f"explore: {st.tried} schedules, {st.sim_seconds:,.0f} {word} s in "
          f"{wall:.1f} wall s ({cpu:.1f} CPU s){where}, "
          f"{len(findings)} finding(s), {st.errors} error(s); "
          f"{out_dir / 'explore.json'}, {page}")
    if fanout is not None and fanout.get("task_errors"):
        print(f"explore: {fanout['task_errors']} slice(s) failed to run; first: {fanout['first_error']}",
              file=sys.stderr)
    for f in findings:
        size = f.shrunk or f.original
        print(f"finding: {f.kind} after {f.found_after_s:.1f} s, {f.found_after_cpu_s:.1f} CPU s "
              f"({f.schedules_tried} schedules): {f.config}; "
              f"shrunk to {size['faults']} fault(s), {size['client_ops']} client op(s), "
              f"{size['clients']} client(s), {size['keys']} key(s), {size['nodes']} node(s), "
              f"{size['time_limit']:g} s; schedule {f.schedule_file}")
        if f.timing_rate:
            print(f"  in-kind replays under other timings (what a real backend may expect): {f.timing_rate}")
        if f.reproduction:
            print(f"  replays of the schedule written on {p.backend} that showed {f.kind}: {f.reproduction}")
        for n in f.notes:
            print(f"  note: {n}")
    if findings:
        return EXIT_INVALID
    if st.tried and st.errors == st.tried:
        return EXIT_FRAMEWORK
    if rows and all(r.unknown or r.error for r in rows):  # not one trial reached a verdict
        return EXIT_UNKNOWN
    if fanout is not None and fanout.get("task_errors") and not st.tried:
        return EXIT_FRAMEWORK
    return EXIT_VALID


def _schedule_text(path: str | None) -> str:
    """The fault ops of a schedule file, one a line, for the report page."""
    if not path:
        return ""
    try:
        s = sched.load(path)
    except BadInput:
        return ""
    lines = [f"{e.at:8.3f}s  {e.f}" + (f" {e.value}" if e.value is not None else "")
             for e in s.nemesis_events]
    return "\n".join(lines) or "(no fault ops)"


def _load_corpus(path: Path, search: Search, space: Space, seed: int, bugs: list[str]) -> corpusdir.Keeper:
    """Starts `search` from the corpus directory's entries, saying what it loaded and skipped; what it
    keeps from now on goes there too."""
    keeper, loaded = corpusdir.resume(path, search, space, explore_seed=seed, bugs=bugs)
    for w in loaded.warnings:
        print(f"explore: --corpus: {w}", file=sys.stderr)
    outside = f", {loaded.outside_space} outside this search's space" if loaded.outside_space else ""
    print(f"explore: corpus {path}: {len(loaded.entries)} entries loaded{outside}", file=sys.stderr)
    return keeper


def _runner(args: argparse.Namespace) -> Runner | None:
    """Where the search's slices run: Spark (--master), worker processes (--parallel), or None: here."""
    if args.master is not None:
        return open_runner(args.master, args.parallel)
    if args.parallel is not None:
        return ProcessRunner(args.parallel)
    return None


def _fan_out(args: argparse.Namespace, shrink_budget: float, runner: Runner, fan: FanoutStats,
             search: Search, system: Any, bugs: list[str], out_dir: Path, started: float, view: _View,
             findings: list[FindingReport], trials_with_finding: list[Trial],
             keeper: corpusdir.Keeper | None, live_ok: bool, rows: list[report_page.TrialRow]) -> FanoutStats:
    """The search as slices on `runner` (explore/driver.py), with its lines printed as trials come
    back and the live line's status kept."""
    last_line = [started]

    def on_trial(trial: Trial) -> None:
        if trial.error and search.stats.errors == 1:
            print(f"explore: a trial failed to run: {trial.error}", file=sys.stderr)
        if not live_ok and not args.no_progress and time.monotonic() - last_line[0] >= 10:
            last_line[0] = time.monotonic()
            st = search.stats
            print(f"[{last_line[0] - started:6.1f}s] schedules {st.tried}, "
                  f"simulated {st.sim_seconds:,.0f} s, findings {st.findings}, errors {st.errors}",
                  file=sys.stderr, flush=True)

    def on_status(status: str) -> None:
        view.status = status

    rules = FindingRules(shrink_budget=shrink_budget, harden_budget=args.harden_budget,
                         post_run=CLI_POST_RUN, keep_going=args.keep_going,
                         until_replayable=args.until_replayable)
    return fan_out(runner, fan, search, system, bugs=bugs, out_dir=out_dir, started=started,
                   budget_s=args.budget, round_size=args.round_size or 0, rules=rules, findings=findings,
                   trials_with_finding=trials_with_finding, rows=rows, keeper=keeper, on_trial=on_trial,
                   on_status=on_status)


def _fanout_summary(args: argparse.Namespace, runner: Runner | None, fan: FanoutStats | None,
                    keeper: corpusdir.Keeper | None) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if runner is not None:
        where = f"Spark {args.master}" if args.master is not None else "worker processes"
        out.update(where=where, master=args.master, slots=runner.slots)
        if fan is not None:
            out.update(tasks=fan.tasks, task_errors=fan.task_errors, first_error=fan.first_error,
                       task_cpu_s=round(fan.task_cpu_s, 3), workers=fan.workers)
    if keeper is not None:
        out.update(corpus_dir=str(keeper.path), corpus_loaded=keeper.loaded, corpus_written=keeper.written)
    return out or None
