"""Trials on any backend: a configuration or a schedule becomes a TestSpec, a workload whose
generators are recorded (or replayed), a nemesis that carries the schedule's fault ops out, and one
run; the run's results.json gives the anomaly kinds, its history and node logs the coverage.

One `BackendSystem` serves every backend; what differs is asked of the backend's kind (its run
function, how late its timers fire, whether its timings can be redrawn): in simulation thousands of
trials fit in a budget and a schedule replays op for op (`replay_run`); on docker, ssh or local a
trial is one ordinary run and a schedule replays in kind (`replay_in_kind`), its faults at their
offsets and the workload's own clients beside them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from jepsen_py import assembly
from jepsen_py.backends import KINDS, backend_kind, is_simulated, simulator
from jepsen_py.errors import BadInput
from jepsen_py.explore.coverage import anomaly_features, features, landed_features
from jepsen_py.explore.replay import (
    REAL_MARGIN_S,
    ClientReplay,
    FinalReplay,
    NemesisReplay,
    PhaseClock,
    Recorder,
    Tape,
    UntilPhaseEnd,
    for_real_backend,
    watch_after_heal,
    watch_after_heal_s,
)
from jepsen_py.explore.schedule import FAMILIES, OutsideFamily, Schedule
from jepsen_py.explore.search import Trial
from jepsen_py.explore.space import Config, nemesis_events
from jepsen_py.generator import Context, Generator, Step
from jepsen_py.generator import rate as limit_rate
from jepsen_py.history import Op
from jepsen_py.history import read_history as read_ops
from jepsen_py.matrix import anomaly_kinds
from jepsen_py.plugins import build_workload, served_workloads
from jepsen_py.protocols import TestSpec
from jepsen_py.seeds import recorder_rng
from jepsen_py.spec import DEFAULT_DB, DEFAULT_RATE
from jepsen_py.store import LATEST
from jepsen_py.workload import Workload


class Outcome(Protocol):
    run_dir: Path
    results: dict[str, Any]
    exit_code: int
    error: str | None


# (spec, workload, nemesis generator, post-run steps) -> the run's outcome
RunFn = Callable[[TestSpec, Workload, Generator, Sequence[Any]], Outcome]


def run_sim(spec: TestSpec, workload: Workload, nemesis_generator: Generator,
            post_run: Sequence[Any]) -> Outcome:
    """One run in the simulator, with our workload and nemesis schedule (a node caught in an endless
    loop is stopped by the simulator's livelock watchdog instead of hanging the run)."""
    parts = assembly.assemble(spec, workload=workload, nemesis_generator=nemesis_generator)
    return assembly.run(parts, post_run=post_run)  # type: ignore[no-any-return]


def run_real(spec: TestSpec, workload: Workload, nemesis_generator: Generator,
             post_run: Sequence[Any]) -> Outcome:
    """One run on a real backend (docker, ssh, local) through the ordinary runner."""
    schedule = nemesis_generator if spec.nemesis else None
    parts = assembly.assemble(spec, workload=workload, nemesis_generator=schedule)
    return assembly.run(parts, post_run=post_run, fsync_history=False)  # type: ignore[no-any-return]


def run_function(backend: str) -> RunFn:
    """How a spec runs on `backend`: its kind's own run function (the simulator builds its own
    world), else the ordinary runner."""
    return run_sim if backend_kind(backend).run_function() is not None else run_real


def spec_for(s: Schedule, *, backend: str, results_dir: Path, name: str, db: str = DEFAULT_DB,
             base: dict[str, Any] | None = None) -> TestSpec:
    """The TestSpec a schedule runs under: its nodes, seed, clients, read mode, bugs and faults."""
    extra = dict(base or {})
    options = dict(s.options)
    options.pop("rate", None)
    return TestSpec(
        name=name, workload=s.workload, nemesis=s.families(), nodes=list(s.nodes),
        time_limit=s.time_limit, concurrency=s.concurrency, rate=0.0,
        nemesis_interval=s.nemesis_interval, seed=s.seed, backend=backend, read_mode=s.read_mode,
        bugs=list(s.bugs), db=db, results_dir=results_dir, options={**options, **extra},
        fault_targets=s.fault_targets(), nemesis_schedule="random", db_options=dict(s.db_options),
    )


def _build_workload(spec: TestSpec) -> Workload:
    """The spec's workload as its backend serves it (maelstrom's world its own, else the built-ins)."""
    return build_workload(spec, served_workloads(backend_kind(spec.backend)))


def replay_run(s: Schedule, spec: TestSpec, run: RunFn, post_run: Sequence[Any] = (), *,
               clients: bool = True) -> Outcome:
    """Runs `spec` with the schedule's nemesis ops at their offsets and, with `clients`, its client ops
    and final reads too (without, the workload's own generators drive the clients: on Docker the
    answers differ from the recorded ones anyway)."""
    workload = _build_workload(spec)
    clock = PhaseClock(recorded_t0=s.t0 if clients else None)
    if clients:
        workload.generator = ClientReplay(s.events, clock, end=s.time_limit, early=_timer_slack(spec))
        workload.final_generator = FinalReplay(s.final) if s.final else None
    elif "rate" in s.options:
        workload.generator = limit_rate(float(s.options["rate"]), workload.generator)
    return run(spec, workload, NemesisReplay(s, clock), post_run)


def replay_in_kind(s: Schedule, spec: TestSpec, run: RunFn, post_run: Sequence[Any] = ()) -> Outcome:
    """`s` replayed as a real backend replays it, under `spec` (made from for_real_backend(s)): its
    fault ops at their offsets, each window as long as recorded from when its fault took effect, and
    the workload's own clients at the schedule's rate (their answers differ from the recorded ones
    anyway) until the margin after the last fault has passed; without faults, its recorded client ops
    and final reads. Either way the final phase lasts watch_after_heal_s(), so a node that never came
    back after the heal is seen down by the crash checker. `run` is run_real on Docker; run_sim with
    another timing seed tells, in seconds, how often that replay shows the anomaly again."""
    workload = _build_workload(spec)
    clock = PhaseClock()
    if s.nemesis_events:
        clients = workload.generator
        if "rate" in s.options:
            clients = limit_rate(float(s.options["rate"]), clients)
        workload.generator = UntilPhaseEnd(clients, clock)
    else:
        workload.generator = ClientReplay(s.events, clock, end=spec.time_limit)
        workload.final_generator = FinalReplay(s.final) if s.final else None
    workload.final_generator = watch_after_heal(workload.final_generator, watch_after_heal_s())
    return run(spec, workload, NemesisReplay(s, clock, margin=REAL_MARGIN_S), post_run)


def _timer_slack(spec: TestSpec) -> float:
    """How late the backend's timers fire (0 on a real backend: a replay there is not exact)."""
    return backend_kind(spec.backend).timer_slack_s()


def _discard(run_dir: Path) -> None:
    """Removes a run that is not kept: its own directory and the per-trial one around it
    (trials/trial-NNNNN/<stamp>)."""
    remove_run_tree(run_dir.parent if run_dir.parent.name.startswith("trial-") else run_dir)


def remove_run_tree(victim: Path) -> None:
    """Removes `victim` (a run or a test directory) and, first, the store's `latest` links that
    point into it: a link is gone before its target, so none is ever left dangling."""
    victim = Path(victim)
    for where in (victim.parent, victim.parent.parent):
        link = where / LATEST
        if not link.is_symlink():
            continue
        try:
            target = Path(os.path.normpath(where / os.readlink(link)))
        except OSError:
            continue
        if target == victim or victim in target.parents:
            with contextlib.suppress(OSError):
                link.unlink()
    shutil.rmtree(victim, ignore_errors=True)


def read_history(run_dir: Path) -> Iterator[dict[str, Any]]:
    try:
        with open(run_dir / "history.jsonl", encoding="utf-8") as f:
            for line in f:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue
    except OSError:
        return


def _history_ops(run_dir: Path) -> list[Op]:
    """The run's history as ops (nothing when it cannot be read: the features then lack its faults)."""
    try:
        return read_ops(run_dir / "history.jsonl")
    except (OSError, BadInput, ValueError):
        return []


def read_logs(run_dir: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    nodes = run_dir / "nodes"
    if nodes.is_dir():
        for d in sorted(nodes.iterdir()):
            lines: list[str] = []
            for f in sorted(d.glob("*.log")):
                try:
                    lines += f.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    continue
            out[d.name] = lines
    return out


def sim_seconds(results: dict[str, Any], fallback: float) -> float:
    stats = results.get("stats") or {}
    for k in ("sim_seconds", "simulated_s", "virtual_s"):
        v = stats.get(k)
        if isinstance(v, int | float):
            return float(v)
    return fallback


class TrialCut(Exception):
    """Raised by a generator when the wall-clock deadline has passed: the run stops where it is."""


class _HideCuts(logging.Filter):
    """A trial cut by the budget is expected, not an error to print: the loggers of the worker loop,
    the runner and each backend's own engine drop the lines that report it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "TrialCut" not in record.getMessage()


_HIDE_CUTS = _HideCuts()
for _name in ("jepsen_py.workers", "jepsen_py.runner", *(n for k in KINDS.values() for n in k.loggers)):
    logging.getLogger(_name).addFilter(_HIDE_CUTS)


class Deadline(Generator):
    """Passes `gen`'s ops through until the wall clock reaches `deadline` (time.monotonic()), then
    raises TrialCut, which ends the run as a failed one. A search's budget bounds its wall time this
    way even when one trial alone would outlast what is left of it."""

    def __init__(self, gen: Generator, deadline: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.gen = gen
        self.deadline = deadline
        self.clock = clock

    def op(self, ctx: Context) -> Step:
        if self.clock() >= self.deadline:
            raise TrialCut("the search's wall budget ended during this trial")
        return self.gen.op(ctx)

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(ctx, invoke, complete)


@dataclass
class BackendSystem:
    """The search's System on any backend (or any RunFn): trials in `work_dir`, clean ones removed.
    In simulation a replay is exact; elsewhere it is in kind (see replay_in_kind)."""

    work_dir: Path
    bugs: list[str] = field(default_factory=list)
    run: RunFn | None = None  # None: the backend's own (run_function)
    db: str = DEFAULT_DB
    rate: float = DEFAULT_RATE
    options: dict[str, Any] = field(default_factory=dict)
    keep_clean: bool = False
    count: int = 0
    # time.monotonic() at which a trial or replay still running is cut short (None: never)
    deadline: float | None = None
    # the test directory of the run going on now (None between runs)
    in_progress: Path | None = None
    backend: str = field(default_factory=simulator)
    # the backend's own options (--ssh-host, --docker-image, ...): into every spec, never a schedule
    backend_options: dict[str, Any] = field(default_factory=dict)
    # the outside nemeses' fault families the space may draw (registered in schedule.FAMILIES)
    outside: list[OutsideFamily] = field(default_factory=list)
    # the nodes trials run on when the backend's options name its hosts (ssh): a trial of N nodes
    # takes the first N, and the backend's options are narrowed to them; None: n1..nN
    hosts: list[str] | None = None

    def __post_init__(self) -> None:
        if self.run is None:
            self.run = run_function(self.backend)

    @property
    def exact(self) -> bool:
        """Whether a replay repeats the recorded run op for op (in simulation), or only in kind."""
        return is_simulated(self.backend)

    def _runner(self) -> RunFn:
        assert self.run is not None
        return self.run

    def _options(self, nodes: list[str]) -> dict[str, Any]:
        """The backend's options for a run on `nodes` (on ssh, only their --ssh-host entries)."""
        return backend_kind(self.backend).options_for(self.backend_options, nodes)

    def _name(self) -> str:
        self.count += 1
        return f"trial-{self.count:05d}"

    def trial(self, config: Config) -> Trial:
        nodes = list(self.hosts[:config.node_count]) if self.hosts else [f"n{i + 1}" for i in
                                                                          range(config.node_count)]
        rate = self.rate if config.rate is None else config.rate
        skeleton = Schedule(workload=config.workload, nodes=nodes, seed=config.seed,
                            time_limit=config.time_limit,
                            concurrency=config.node_count * config.clients_per_node,
                            events=nemesis_events(config), read_mode=config.read_mode, bugs=list(self.bugs),
                            nemesis_interval=config.interval,
                            options={**self.options, "rate": rate, **dict(config.backend_options)},
                            db_options=dict(config.db_options),
                            recorded_on=None if self.exact else self.backend,
                            outside=[f for f in self.outside if f.name in config.families])
        spec = spec_for(skeleton, backend=self.backend, results_dir=self.work_dir, name=self._name(),
                        db=self.db, base=self._options(nodes))
        if config.families:  # every family of the configuration, even one its timeline never started
            spec.nemesis = sorted({*spec.nemesis, *(FAMILIES[f][2] for f in config.families)})
            spec.fault_targets = list(config.targets)
        workload = _build_workload(spec)
        clock, tape, final = PhaseClock(), Tape(), Tape()
        private = recorder_rng(config.seed)
        workload.generator = Recorder(limit_rate(rate, workload.generator), clock, tape, rng=private)
        if workload.final_generator is not None:
            workload.final_generator = Recorder(workload.final_generator, PhaseClock(), final, timed=False,
                                                rng=private)
        started = time.monotonic()
        with self._running(spec):
            outcome = self._cut_short(self._runner())(spec, workload, NemesisReplay(skeleton, clock), ())
        wall = time.monotonic() - started
        recorded = skeleton.with_events([*skeleton.nemesis_events, *tape.events], final=list(final.events),
                                        t0=clock.t0)
        return self._trial(recorded, outcome, wall, config)

    def replay(self, schedule: Schedule, *, keep: Path | None = None,
               post_run: Sequence[Any] = (), name: str | None = None) -> Trial:
        stretch = not self.exact and schedule.recorded_on is None  # recorded in simulation
        played = for_real_backend(schedule) if stretch else schedule
        spec = spec_for(played, backend=self.backend, results_dir=keep or self.work_dir,
                        name=name or self._name(), db=self.db, base=self._options(list(played.nodes)))
        started = time.monotonic()
        with self._running(spec):
            run = self._cut_short(self._runner())
            if self.exact:
                outcome = replay_run(schedule, spec, run, post_run)
            elif stretch:
                outcome = replay_in_kind(schedule, spec, run, post_run)
            else:  # recorded here: its faults at their offsets, the workload's own clients, as the trial
                outcome = replay_run(schedule, spec, run, post_run, clients=False)
        return self._trial(schedule, outcome, time.monotonic() - started, None, keep=keep is not None)

    def replay_timed(self, schedule: Schedule, timing_seed: int) -> dict[str, int]:
        """The anomaly kinds of `schedule` replayed in kind (as a real backend replays it), under
        `timing_seed` (a backend whose timings can be redrawn: the simulator's); the run is not kept."""
        key = backend_kind(self.backend).timing_seed_key()
        if key is None:
            raise ValueError(f"the {self.backend} backend cannot redraw its timings")
        spec = spec_for(for_real_backend(schedule), backend=self.backend, results_dir=self.work_dir,
                        name=self._name(), db=self.db, base={key: timing_seed})
        with self._running(spec):
            outcome = replay_in_kind(schedule, spec, self._cut_short(self._runner()))
        _discard(Path(outcome.run_dir))
        return anomaly_kinds(outcome.results or {}) if outcome.exit_code == 1 else {}

    @contextlib.contextmanager
    def _running(self, spec: TestSpec) -> Iterator[None]:
        """Marks spec's test directory as the run in progress until the run returns: a run that
        raises instead (Ctrl-C, SIGTERM) leaves it to abandon()."""
        self.in_progress = Path(spec.results_dir) / spec.name
        yield
        self.in_progress = None

    def abandon(self) -> Path | None:
        """Removes the run an interruption cut off (its directory holds a partial history and
        no findings: nothing a reader of the search should take for a trial); returns it."""
        victim, self.in_progress = self.in_progress, None
        if victim is None or not victim.exists():
            return None
        remove_run_tree(victim)
        return victim

    def _cut_short(self, run: RunFn) -> RunFn:
        """`run` with the client and nemesis generators stopped at the deadline."""
        deadline = self.deadline
        if deadline is None:
            return run

        def cut(spec: TestSpec, workload: Workload, nemesis_generator: Generator,
                post_run: Sequence[Any]) -> Outcome:
            workload.generator = Deadline(workload.generator, deadline)
            return run(spec, workload, Deadline(nemesis_generator, deadline), post_run)

        return cut

    def _trial(self, s: Schedule, outcome: Outcome, wall: float, config: Config | None, *,
               keep: bool = False) -> Trial:
        run_dir = Path(outcome.run_dir)
        results = outcome.results or {}
        cut = self.deadline is not None and time.monotonic() >= self.deadline and outcome.exit_code >= 254
        if cut:  # stopped by the budget, not a finding and not a failure of the run: nothing to keep
            _discard(run_dir)
            return Trial(schedule=s, anomalies={}, coverage=frozenset(), sim_seconds=0.0, wall_seconds=wall,
                         config=config, run_dir=None, cut=True)
        kinds = anomaly_kinds(results) if outcome.exit_code == 1 else {}
        error = (outcome.error or f"exit {outcome.exit_code}") if outcome.exit_code >= 254 else None
        # the history as the run's analysis read it, else (it could not) every line that parses
        analysed: list[Op] = getattr(outcome, "history", None) or []
        cov = features(s.events, analysed or read_history(run_dir), read_logs(run_dir),
                       read_mode=s.read_mode, workload=s.workload)
        if not self.exact:  # what the faults did once they landed, and what the checkers saw
            cov = cov | landed_features(analysed or _history_ops(run_dir)) | anomaly_features(kinds)
        trial = Trial(schedule=s, anomalies=kinds, coverage=cov,
                      sim_seconds=sim_seconds(results, s.time_limit), wall_seconds=wall, config=config,
                      run_dir=run_dir, error=error, unknown=outcome.exit_code == 2)
        if not kinds and not keep and not self.keep_clean and not error:
            _discard(run_dir)
            trial.run_dir = None
        return trial
