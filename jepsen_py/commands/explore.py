"""`jepsen-py explore`: search workloads x fault schedules x seeds for a failing run, with no hint of
where the bug is, then shrink what fails to a small schedule that still fails.

In the simulator (the default) thousands of trials fit in a budget and a replay is exact. On docker,
ssh or local every trial is an ordinary short run of any DB (--db), its space drawn from what the DB
declares (workloads, read modes, capabilities, the values of its --db-options), and a shrinking step
is kept only when the failure comes back at the rate --reproduce asks, since a real replay repeats
the faults, not the answers.

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
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from jepsen_py.backends import BackendKind, add_backend_arguments, backend_kind, backend_options, simulator
from jepsen_py.bugs import check_bugs
from jepsen_py.errors import EXIT_FRAMEWORK, EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, BadInput
from jepsen_py.explore import corpus as corpusdir
from jepsen_py.explore import report as report_page
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.fanout import TASK_TRIALS, FanoutStats, ProcessRunner, Runner, run_fanout
from jepsen_py.explore.harden import Rate, harden, in_kind_key, kind_rates, steadier_kinds, timing_seeds
from jepsen_py.explore.realspace import (
    REAL_DRAWS,
    REAL_NODE_COUNTS,
    REAL_TIME_LIMITS,
    outside_families,
    real_space,
)
from jepsen_py.explore.search import Search, Trial, primary_kind
from jepsen_py.explore.shrink import FAULT_PASSES, PASSES, Shrinker
from jepsen_py.explore.space import DEFAULT_WORKLOADS, SAFE_READ_MODES, Space
from jepsen_py.explore.system import BackendSystem
from jepsen_py.files import DIR_MODE, make_dirs
from jepsen_py.flags import check_room, path_text
from jepsen_py.lifetime import signal_name, signals_raise
from jepsen_py.numbers import MAX_SECONDS, fraction, integer, number
from jepsen_py.numbers import seed as seed_type
from jepsen_py.plugins import builtin_workloads, declared_bugs, is_reference, load_object
from jepsen_py.postrun import CLI_POST_RUN
from jepsen_py.protocols import TestSpec
from jepsen_py.spark.explore import open_runner
from jepsen_py.spark.tasks import check_master
from jepsen_py.spec import DEFAULT_DB, READ_MODES, parse_db_options, parse_list
from jepsen_py.store import timestamp, write_text_atomic

NAME = "explore"
HELP = "search fault schedules (in simulation or on a real backend) for a failing run, with no hint where"

# Replays a shrinking step needs on a real backend unless --reproduce says otherwise: it is kept when
# one of two shows the failure again (a real replay repeats the faults, not the timing).
REAL_REPRODUCE = (1, 2)
MAX_REPRODUCE_TRIES = 20
# Shrinking on a real backend runs every candidate K to N times, each a run of tens of seconds.
SIM_SHRINK_BUDGET_S = 120.0
REAL_SHRINK_BUDGET_S = 300.0

FAMILY_NAMES = ("partition", "clock", "pause", "kill", "leader-clock")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "example: jepsen-py explore --bug zombie-leader --budget 60; on Docker: jepsen-py explore "
        "--backend docker --db MODULE:CLASS --budget 900. Exit codes: 1 a finding, 0 none within the "
        "budget, 2 no trial reached a verdict, 254 bad arguments, 255 no trial could run."
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
                        "ssh, local (ordinary runs of tens of seconds each, of any --db)")
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
                        f"{', '.join(f'{t:g}' for t in REAL_TIME_LIMITS)} on a real backend)")
    add_backend_arguments(parser)
    o = parser.add_argument_group("output")
    o.add_argument("--results-dir", type=path_text, default="results", metavar="DIR",
                   help="where the search's directory goes (default: ./results)")
    o.add_argument("--no-progress", action="store_true", help="no live progress display")


def _names(values: list[str] | None) -> list[str]:
    return parse_list(values)


def build_space(args: argparse.Namespace) -> Space:
    registry = builtin_workloads()
    workloads = _names(args.workload) or [w for w in DEFAULT_WORKLOADS if w in registry]
    for w in workloads:
        if w not in DEFAULT_WORKLOADS:
            raise BadInput(f"--workload: {w!r} cannot be explored "
                           f"(choose from {', '.join(DEFAULT_WORKLOADS)})")
    families = _names(args.nemesis)
    if families == ["none"]:
        families = []
    elif not families:
        families = list(FAMILY_NAMES)
    for f in families:
        if f not in FAMILY_NAMES:
            raise BadInput(f"--nemesis: {f!r} is not a fault family (choose from {', '.join(FAMILY_NAMES)}, "
                           "or none)")

    read_modes = _names(args.read_mode) or list(SAFE_READ_MODES)
    for m in read_modes:
        if m not in READ_MODES:
            raise BadInput(f"--read-mode: unknown read mode {m!r} (choose from {', '.join(READ_MODES)})")
    space = Space(workloads=tuple(workloads), families=tuple(families), read_modes=tuple(read_modes))
    if args.node_count:
        space = _replace(space, node_counts=tuple(sorted(set(args.node_count))))
    if args.time_limit:
        space = _replace(space, time_limits=tuple(sorted(set(args.time_limit))))
    return space


def _replace(space: Space, **kw: Any) -> Space:
    from dataclasses import replace

    return replace(space, **kw)


@dataclass
class FindingReport:
    kind: str
    kinds: dict[str, int]
    found_after_s: float
    schedules_tried: int
    # CPU seconds of this process until the finding: the search's cost on a machine others load too
    found_after_cpu_s: float
    config: str
    original: dict[str, Any]
    shrunk: dict[str, Any] | None = None
    shrink_attempts: int = 0
    shrink_s: float = 0.0
    reproduced: bool = True
    # in-kind replays in simulation under other timings that showed the kind ("5/8"), of the
    # schedule written: what a replay on a real backend may expect; and before its targets were
    # widened, when they were
    timing_rate: str | None = None
    hardened_from: str | None = None
    # the size of the smallest failing schedule, when it replays in kind too rarely and the one
    # written (`shrunk`) is a larger one from the shrink's path
    smallest: dict[str, Any] | None = None
    # whether the schedule written shows its kind in most (more than half) of its in-kind replays under
    # other timings (None: not hardened, e.g. a schedule without faults, whose client ops are replayed)
    replayable: bool | None = None
    schedule_file: str | None = None
    run_dir: str | None = None
    notes: list[str] = field(default_factory=list)
    # on a real backend: replays of the schedule written that showed the kind ("2/2")
    reproduction: str | None = None


def reproduces(system: Any, c: sched.Schedule, kind: str, reproduce: tuple[int, int]) -> int | None:
    """Replays `c` until K of N show `kind` (then the number of replays it took) or until K can no
    longer be reached (None): a real replay repeats the faults, not the timing, so one replay proves
    little either way."""
    k, n = reproduce
    hits = 0
    for i in range(n):
        if kind in system.replay(c).anomalies:
            hits += 1
            if hits >= k:
                return i + 1
        if hits + (n - i - 1) < k:
            return None
    return None


def still_fails(system: Any, c: sched.Schedule, kind: str, reproduce: tuple[int, int] = (1, 1)) -> bool:
    """Whether a shrinking candidate still shows `kind`, and shows it because of the build under test.

    A candidate with no client op left is never accepted: with nothing asked, "never served an ok
    op" is a statement about the schedule, not the system. When the build under test has bugs
    switched on, the same schedule on the build without them is the control: a kind the control
    shows too is what the shrunk schedule provokes by itself (an op in the first instant of the main
    phase, a run too short for any answer), so the candidate is refused. On a real backend (a replay
    in kind) it must show `kind` in K of N replays (`reproduce`), and there is no control: the
    faults alone are replayed, beside the workload's own clients."""
    if not c.client_events:
        return False
    if not getattr(system, "exact", True):
        return reproduces(system, c, kind, reproduce) is not None
    if kind not in system.replay(c).anomalies:
        return False
    if c.bugs:
        control = c.with_events(c.events, bugs=[])
        return kind not in system.replay(control).anomalies
    return True


class _View:
    """The live line: schedules tried, simulated (or run) time, findings."""

    def __init__(self, search: Search, budget: float, started: float, *, simulated: bool = True) -> None:
        self.search = search
        self.budget = budget
        self.started = started
        self.status = "searching"
        self.time_word = "simulated" if simulated else "run"

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


@dataclass
class Plan:
    """What the command line asks of a search, checked before anything runs."""

    backend: str
    simulated: bool
    db: str
    bugs: list[str]
    space: Space
    reproduce: tuple[int, int]
    shrink_budget: float
    outside: list[sched.OutsideFamily] = field(default_factory=list)
    # the hosts trials run on, when the backend's options name them (ssh): a trial of N nodes takes
    # the first N; None: the backend makes n1..nN
    hosts: list[str] | None = None


def plan(args: argparse.Namespace) -> Plan:
    """The search the flags describe; one BadInput line for anything the backend or DB cannot do."""
    kind = backend_kind(args.backend)
    kind.check_args(args)
    bugs = _names(args.bug)
    fixed = parse_db_options(args.db_option)
    if kind.simulated:
        if args.db != DEFAULT_DB:
            raise BadInput(f"--db: the simulator runs our cluster only; explore {args.db} on a real backend "
                           "(--backend docker, ssh or local)")
        if fixed:
            raise BadInput("--db-option: our cluster in the simulator takes none "
                           "(its settings are --read-mode)")
        if args.reproduce is not None and args.reproduce != (1, 1):
            raise BadInput("--reproduce: a simulated replay is exact (1/1); the rate is for real backends")
        check_bugs(bugs)
        space = build_space(args)
        return Plan(kind.name, True, args.db, bugs, space, (1, 1),
                    SIM_SHRINK_BUDGET_S if args.shrink_budget is None else args.shrink_budget)
    if not kind.provisions:
        raise BadInput(f"--backend {kind.name}: has no nodes to run a DB on "
                       "(choose docker, ssh, local or sim)")
    db_cls = load_object(args.db, option="--db")
    check_bugs(bugs, declared_bugs(args.db), db=args.db)
    names = _names(args.nemesis)
    refs = [n for n in names if n not in FAMILY_NAMES and n != "none" and is_reference(n, "--nemesis")]
    families = [n for n in names if n not in refs]
    workloads = _names(args.workload)
    outside = [f for ref in refs for f in outside_families(
        ref, db_cls, args.db, _probe_spec(args, kind.name, ref, workloads[0] if workloads else "register"))]
    hosts, node_counts = host_node_counts(kind, backend_options(args), args.node_count or [])
    space = real_space(db_cls, args.db, default_db=args.db == DEFAULT_DB, workloads=workloads,
                       families=[] if families == ["none"] or (refs and not families) else (families or None),
                       modes=_names(args.read_mode), node_counts=node_counts,
                       time_limits=args.time_limit or (), fixed=fixed, outside=outside)
    return Plan(kind.name, False, args.db, bugs, space, args.reproduce or REAL_REPRODUCE,
                REAL_SHRINK_BUDGET_S if args.shrink_budget is None else args.shrink_budget, outside, hosts)


def host_node_counts(kind: BackendKind, options: dict[str, Any],
                     asked: Sequence[int]) -> tuple[list[str] | None, tuple[int, ...]]:
    """On a backend whose nodes are the hosts its options name (ssh), those hosts and the node counts
    a search may draw: the ones asked for, each at most the hosts given, else the real backends'
    default counts that fit (all the hosts when none does). Elsewhere (None, the counts asked)."""
    if not kind.given_nodes:
        return None, tuple(asked)
    hosts = kind.hosts(options)
    if not hosts:
        raise BadInput(f"--backend {kind.name}: explore runs on the hosts you name, one {kind.hosts_flag} "
                       "per node")
    over = sorted({n for n in asked if n > len(hosts)})
    if over:
        raise BadInput(f"--node-count {over[-1]}: --backend {kind.name} has {len(hosts)} host(s) "
                       f"({', '.join(hosts)}); name more with {kind.hosts_flag} or ask for at most "
                       f"{len(hosts)}")
    counts = tuple(asked) or tuple(n for n in REAL_NODE_COUNTS if n <= len(hosts)) or (len(hosts),)
    return hosts, counts


def _probe_spec(args: argparse.Namespace, backend: str, ref: str, workload: str) -> TestSpec:
    """A spec to construct an outside nemesis with, to read what it declares (nothing runs)."""
    return TestSpec(name="explore", workload=workload, nemesis=[ref], nodes=["n1", "n2", "n3"],
                    time_limit=10.0, concurrency=3, rate=0.0, nemesis_interval=5.0, seed=0, backend=backend,
                    read_mode=None, bugs=[], db=args.db, results_dir=Path(args.results_dir))


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
                           backend_options={} if p.simulated else backend_options(args), outside=p.outside,
                           hosts=p.hosts)
    search = Search(system, space, seed=seed, draws=1 if p.simulated else REAL_DRAWS)
    keeper = _load_corpus(corpus, search, space, seed, bugs) if corpus is not None else None
    console = Console(stderr=True)
    live_ok = not args.no_progress and console.is_terminal
    print(f"explore: seed {seed}, budget {args.budget:g} s, backend {p.backend}, "
          f"bugs {', '.join(bugs) or 'none'}"
          f"{'' if p.simulated else f', reproduce {p.reproduce[0]}/{p.reproduce[1]}'}; in {out_dir}",
          file=sys.stderr)

    started, cpu0 = time.monotonic(), time.process_time()
    view = _View(search, args.budget, started, simulated=p.simulated)
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
                _fan_out(args, runner, fan, search, system, bugs, out_dir, started, view, findings,
                         trials_with_finding, keeper, live_ok, rows)
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
                rows.append(_row(trial, search, before, time.monotonic() - started - handled))
                if not live_ok and not args.no_progress and (time.monotonic() - last_line >= 10
                                                              or not p.simulated):
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
                findings.append(_handle_finding(trial, system, search, out_dir, len(findings) + 1,
                                                h0 - started - handled, hcpu0 - cpu0 - handled_cpu,
                                                p.shrink_budget, args.harden_budget if p.simulated else 0.0,
                                                reproduce=p.reproduce))
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


def _row(trial: Trial, search: Search, before: int, at_s: float) -> report_page.TrialRow:
    return report_page.TrialRow(n=search.stats.tried, at_s=at_s,
                                config=trial.config.label() if trial.config else "",
                                wall_s=trial.wall_seconds, features=search.stats.features,
                                new=search.stats.features - before, anomalies=dict(trial.anomalies),
                                error=trial.error, unknown=trial.unknown)


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
        "reproduce": None if p.simulated else f"{p.reproduce[0]}/{p.reproduce[1]}",
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
    word = "simulated" if p.simulated else "run"
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
    """Starts `search` from the corpus directory's entries; what it keeps from now on goes there too."""
    loaded = corpusdir.load(path, space)
    for w in loaded.warnings:
        print(f"explore: --corpus: {w}", file=sys.stderr)
    search.load((e.config, e.features) for e in loaded.entries)
    outside = f", {loaded.outside_space} outside this search's space" if loaded.outside_space else ""
    print(f"explore: corpus {path}: {len(loaded.entries)} entries loaded{outside}", file=sys.stderr)
    return corpusdir.Keeper(path, search.corpus, meta={"explore_seed": seed, "bugs": bugs})


def _runner(args: argparse.Namespace) -> Runner | None:
    """Where the search's slices run: Spark (--master), worker processes (--parallel), or None: here."""
    if args.master is not None:
        return open_runner(args.master, args.parallel)
    if args.parallel is not None:
        return ProcessRunner(args.parallel)
    return None


def _fan_out(args: argparse.Namespace, runner: Runner, fan: FanoutStats, search: Search, system: Any,
             bugs: list[str], out_dir: Path, started: float, view: _View, findings: list[FindingReport],
             trials_with_finding: list[Trial], keeper: corpusdir.Keeper | None, live_ok: bool,
             rows: list[report_page.TrialRow]) -> FanoutStats:
    """The search as slices on `runner` (jepsen_py.explore.fanout); findings are shrunk here, on the
    driver, while the other slices go on (with --keep-going or --until-replayable) or stop."""
    cpu0 = time.process_time()
    last_line = [started]
    features = [search.stats.features]  # before the trial the next on_trial reports

    def on_trial(trial: Trial) -> None:
        if not trial.cut:
            rows.append(_row(trial, search, features[0], time.monotonic() - started))
        features[0] = search.stats.features
        if keeper is not None:
            keeper.flush()
        if trial.error and search.stats.errors == 1:
            print(f"explore: a trial failed to run: {trial.error}", file=sys.stderr)
        if not live_ok and not args.no_progress and time.monotonic() - last_line[0] >= 10:
            last_line[0] = time.monotonic()
            st = search.stats
            print(f"[{last_line[0] - started:6.1f}s] schedules {st.tried}, "
                  f"simulated {st.sim_seconds:,.0f} s, findings {st.findings}, errors {st.errors}",
                  file=sys.stderr, flush=True)

    def on_finding(trial: Trial) -> bool:
        trials_with_finding.append(trial)
        view.status = "shrinking"
        now = time.monotonic()
        cpu = time.process_time() - cpu0 + fan.task_cpu_s
        findings.append(_handle_finding(trial, system, search, out_dir, len(findings) + 1, now - started,
                                        cpu, args.shrink_budget, args.harden_budget))
        view.status = "searching"
        return stops_search(findings[-1], keep_going=args.keep_going, until_replayable=args.until_replayable)

    return run_fanout(search, runner, bugs=bugs, budget_s=args.budget,
                      stop_at_first=not (args.keep_going or args.until_replayable),
                      on_trial=on_trial, on_finding=on_finding, stats=fan, round_size=args.round_size or 0)


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


def stops_search(finding: FindingReport, *, keep_going: bool, until_replayable: bool) -> bool:
    """Whether the search ends at `finding`: never with --keep-going; with --until-replayable, only
    at a finding a real backend can be expected to reproduce (or one not forecast at all)."""
    if keep_going:
        return False
    return not (until_replayable and finding.replayable is False)


def _harden(s: sched.Schedule, kind: str, system: Any, report: FindingReport, budget: float,
            path: list[sched.Schedule], fdir: Path) -> tuple[sched.Schedule, str]:
    """`s` made replayable on a real backend (harden.py), and the kind it is named by: the one its
    in-kind replays show most often of those its exact replay shows; a larger schedule from the
    shrink's `path` when `s` shows that kind under half the timings or fewer (`s` itself is kept
    beside it, in `fdir`, as schedule-smallest.json: the smallest failing schedule, for reading and
    exact replay), kill and pause targets widened where that helps; the rates go in the report."""
    shown: dict[tuple[str, int], frozenset[str]] = {}

    def replayed(c: sched.Schedule, timing: int) -> frozenset[str]:
        key = (in_kind_key(c), timing)
        if key not in shown:
            shown[key] = frozenset(system.replay_timed(c, timing))
        return shown[key]

    system.deadline = time.monotonic() + budget
    try:
        seeds = timing_seeds(s)
        rates = kind_rates(s, replayed, seeds)
        for steadier in steadier_kinds(rates, kind):
            if still_fails(system, s, steadier):
                own = rates.get(kind, Rate(0, len(seeds)))
                report.notes.append(
                    f"named {steadier}, not {kind}: in-kind replays under other timings show {steadier} "
                    f"in {rates[steadier]}, {kind} in {own} (its exact replay shows both)")
                kind = report.kind = steadier
                break
        result = harden(s, kind, shows=lambda c, timing: kind in replayed(c, timing),
                        still_fails=lambda c: still_fails(system, c, kind), path=path, budget_s=budget)
    finally:
        system.deadline = None
    report.timing_rate = str(result.after)
    report.replayable = result.replayable
    if result.stepped_back_from is not None:
        smallest = result.stepped_back_from
        small_file = sched.save(smallest.with_events(smallest.events, anomaly=kind),
                                fdir / "schedule-smallest.json")
        small = smallest.size()
        report.smallest = small
        report.notes.append(
            f"stepped back along the shrink's path: the smallest schedule ({small['faults']} fault(s), "
            f"{small['client_ops']} client op(s), {small['time_limit']:g} s; {small_file}) showed {kind} in "
            f"{result.before} in-kind replays under other timings; the schedule written is the smallest "
            "one before it that shows it in most")
    if result.widened:
        report.hardened_from = str(result.base)
        report.notes.append(f"hardened for a real backend: {'; '.join(result.widened)} (in-kind replays "
                            f"under other timings showing {kind}: {result.base} -> {result.after})")
    if result.exhausted:
        report.notes.append("the harden budget ended before every wider target was tried")
    return result.schedule, kind


def _handle_finding(trial: Trial, system: Any, search: Search, out_dir: Path, n: int, found_after: float,
                    found_after_cpu: float, shrink_budget: float, harden_budget: float, *,
                    reproduce: tuple[int, int] = (1, 1)) -> FindingReport:
    kind = primary_kind(trial.anomalies) or "anomaly"
    original = trial.schedule.with_events(trial.schedule.events, anomaly=kind)
    fdir = out_dir / f"finding-{n}"
    make_dirs(fdir)
    sched.save(original, fdir / "schedule-found.json")
    report = FindingReport(kind=kind, kinds=dict(trial.anomalies), found_after_s=round(found_after, 3),
                           schedules_tried=search.stats.tried, found_after_cpu_s=round(found_after_cpu, 3),
                           config=trial.config.label() if trial.config else "", original=original.size())
    if trial.run_dir is not None:
        report.notes.append(f"the run that found it: {trial.run_dir}")

    exact = getattr(system, "exact", True)

    def fails(c: sched.Schedule) -> bool:
        return still_fails(system, c, kind, reproduce)

    t0 = time.monotonic()
    best = original
    result = None
    if shrink_budget > 0:
        shrinker = Shrinker(fails, budget_s=shrink_budget, max_attempts=400,
                            passes=PASSES if exact else FAULT_PASSES)
        system.deadline = t0 + shrink_budget  # a candidate still running when it ends is cut short
        try:
            reproduced = shrinker.reproduces(original)
            result = shrinker.shrink(original) if reproduced else None
        finally:
            system.deadline = None
        report.reproduced = reproduced
        if result is not None:
            best = result.schedule
            report.shrink_attempts = result.attempts
            if result.exhausted:
                report.notes.append("the shrink budget ended before shrinking finished")
        else:
            report.notes.append("the recorded schedule did not show the anomaly on replay: not shrunk")
    report.shrink_s = round(time.monotonic() - t0, 3)
    if harden_budget > 0 and best.nemesis_events and report.reproduced and exact:
        best, kind = _harden(best, kind, system, report, harden_budget, result.path if result else [], fdir)
    best = best.with_events(best.events, anomaly=kind)

    final = system.replay(best, keep=fdir, post_run=CLI_POST_RUN, name="shrunk")
    if final.run_dir is not None:
        report.run_dir = str(final.run_dir)
        path = sched.save(best, Path(final.run_dir) / "schedule.json")
    else:
        path = sched.save(best, fdir / "schedule.json")
    report.schedule_file = str(path)
    report.shrunk = best.size()
    if not exact:  # how often the schedule written shows its kind again: N replays, the first kept
        hits = int(kind in final.anomalies) + sum(kind in system.replay(best).anomalies
                                                  for _ in range(reproduce[1] - 1))
        report.reproduction = f"{hits}/{reproduce[1]}"
        report.replayable = hits >= reproduce[0]
    if kind not in final.anomalies:
        report.notes.append(f"the final replay of the shrunk schedule did not show {kind}")
    return report
