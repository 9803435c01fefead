"""`jepsen-py run --schedule FILE`: one run driven by a schedule file.

In simulation (--backend sim) every recorded op is replayed, the clients' too, at its offset: with the
schedule's seed the run is the one that was recorded. On Docker (or any real backend) the nemesis ops
land at the same offsets of the main phase, with the workload's own clients beside them at the
schedule's rate; the answers differ run to run, so the report says whether the schedule's anomaly
came back. A real cluster reacts more slowly than the simulated one, so its replay is stretched to
fit (replay.for_real_backend): a margin after the last fault, four clients on every node, fault
windows as long as recorded from the moment each fault took effect, and the cluster watched for some
seconds after the heal (a node the simulator would have stopped in an endless loop just goes silent
on a real one). A schedule without faults replays its recorded client ops there too: they alone made
the anomaly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jepsen_py.analysis import PostRun
from jepsen_py.backends import (
    BackendKind,
    backend_kind,
    backend_options,
    default_backend,
    given_backend_dests,
)
from jepsen_py.bugs import check_bugs
from jepsen_py.errors import EXIT_BAD_INPUT, BadInput
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.replay import REAL_MARGIN_S, for_real_backend
from jepsen_py.explore.schedule import Schedule
from jepsen_py.explore.system import anomaly_kinds, replay_in_kind, replay_run, run_real, run_sim, spec_for
from jepsen_py.junit import write_junit_outcomes
from jepsen_py.matrix import DEFAULT_EXPECTATIONS, TUNED, load_expectations
from jepsen_py.plugins import check_db_flags, check_workload_name, declared_bugs, served_workloads
from jepsen_py.progress import print_summary
from jepsen_py.protocols import TestSpec
from jepsen_py.spec import TIME_LIMIT, check_size

# `run` flags a schedule decides; given together with --schedule they are refused, not ignored.
_DEFINED_BY_SCHEDULE = (("nemesis", "--nemesis"), ("bug", "--bug"), ("nodes", "--nodes"),
                        ("node_count", "--node-count"), ("seed", "--seed"),
                        ("fault_targets", "--fault-targets"), ("read_mode", "--read-mode"),
                        ("db_option", "--db-option"))


def run_schedule(args: argparse.Namespace, post_run: Sequence[PostRun] = ()) -> int:
    """`run --schedule`: the schedule replayed on the backend asked for; `post_run` as for a run."""
    for attr, flag in _DEFINED_BY_SCHEDULE:
        if getattr(args, attr, None) is not None:
            raise BadInput(f"{flag}: the schedule file decides this (drop {flag} or --schedule)")
    if getattr(args, "test_count", 1) != 1:
        raise BadInput("--test-count: a schedule is one run (replay it again for another)")
    s = sched.load(args.schedule)

    backend = args.backend or default_backend()
    kind = backend_kind(backend)
    kind.check_args(args)
    simulated = kind.simulated
    name = args.name or f"schedule-{s.workload}"
    # a schedule recorded on a real backend has a real cluster's offsets already: run as recorded
    as_recorded = simulated or s.recorded_on is not None
    played = s if as_recorded else for_real_backend(s)
    check_played(s, played, args.schedule, override=bool(getattr(args, "ignore_machine_limits", False)))
    # the backend settings explore drew (a Maelstrom network's latency) are the schedule's, as its seed is
    carried = {k for k in s.options if k != "rate"}
    for dest, flag in given_backend_dests(args).items():
        if dest in carried:
            raise BadInput(f"{flag}: the schedule file decides this (drop {flag} or --schedule)")
    base = {k: v for k, v in schedule_backend_options(kind, backend_options(args), s, args.schedule).items()
            if k not in carried}
    spec = spec_for(played, backend=backend, results_dir=Path(args.results_dir), name=name, db=args.db,
                    base=base)
    check_schedule_names(spec, args.schedule)
    if simulated:
        outcome: Any = replay_run(s, spec, run_sim, post_run)
    elif as_recorded:
        print(f"replaying on {backend} as recorded on {s.recorded_on}: {len(s.nemesis_events)} fault ops at "
              f"their offsets, the workload's own {s.concurrency} clients, {s.time_limit:g} s")
        outcome = replay_run(s, spec, run_real, post_run, clients=False)
    else:
        print(f"replaying on {backend}: {_plan(s, played)}")
        outcome = replay_in_kind(s, spec, run_real, post_run)
    if outcome.exit_code == EXIT_BAD_INPUT:
        print(f"jepsen-py: {outcome.error} (run stored in {outcome.run_dir})", file=sys.stderr)
        return EXIT_BAD_INPUT

    print_summary(valid=outcome.valid, invokes=outcome.invokes, oks=outcome.oks, anomalies=outcome.anomalies,
                  run_dir=outcome.run_dir, checkers=outcome.results.get("checkers"), error=outcome.error,
                  title=f"{name} (schedule {args.schedule}, seed {s.seed})")
    kinds = anomaly_kinds(outcome.results) if outcome.exit_code == 1 else {}
    if s.anomaly:
        print(replay_verdict(s, kinds, documented_kinds(s.bugs)))
    if args.junit_xml:
        write_junit_outcomes([outcome], Path(args.junit_xml))
    return int(outcome.exit_code)


def schedule_backend_options(kind: BackendKind, options: dict[str, Any], s: Schedule,
                             where: str) -> dict[str, Any]:
    """The backend's own options (--ssh-host, --docker-image, ...) for the replay: the schedule
    decides the nodes, so on hosts named by the options (ssh) each of its nodes must be one of them,
    and the options are narrowed to those nodes."""
    hosts = kind.hosts(options)
    if hosts is not None:
        missing = [n for n in s.nodes if n not in hosts]
        if missing:
            raise BadInput(f"--schedule: {where} runs on {', '.join(s.nodes)}; {kind.hosts_flag} names "
                           f"{', '.join(hosts)}, not {', '.join(missing)}")
    return kind.options_for(options, list(s.nodes))


# What `run` says of a flag, and the schedule file's field that set the same value instead.
_FIELDS = (("--db-option: ", "db_options: "), ("--read-mode: ", "read_mode: "), ("--bug: ", "bugs: "),
           ("--workload: ", "workload: "))


def check_schedule_names(spec: TestSpec, where: str) -> None:
    """The schedule's db_options, read mode, workload and bugs checked against the DB as `run` checks
    the same flags (plugins.check_db_flags: a key the DB does not declare is refused, whether it came
    from --db-option or from a file), before anything is provisioned: one line naming the file and
    its field. A DB with read modes gets its default for a schedule recorded without one, as `run`
    does."""
    try:
        check_db_flags(spec)
        check_workload_name(spec.workload, served_workloads(backend_kind(spec.backend)))
        if spec.bugs:
            check_bugs(spec.bugs, declared_bugs(spec.db), db=spec.db)
    except BadInput as e:
        msg = str(e)
        for flag, field in _FIELDS:
            if msg.startswith(flag):
                raise BadInput(f"--schedule: {where}: {field}{msg.removeprefix(flag)}") from None
        raise


def check_played(s: Schedule, played: Schedule, where: str, *, override: bool = False) -> None:
    """What the replay runs within what `run` allows from its flags: the machine's node and client
    limits (--ignore-machine-limits lifts them, as for a run), and a main phase no longer than
    --time-limit's bound once a real backend's replay has stretched it."""
    for x in (s, played):
        check_size(len(x.nodes), x.concurrency, override=override, where=where)
    if played is not s:
        TIME_LIMIT.check(f"{where}: the main phase stretched for a real backend", played.time_limit)


def documented_kinds(bugs: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each of `bugs`, the anomaly kinds test-all counts as detecting it (its own cell in the
    expectations file); empty when the file cannot be read: the replay then judges by kind alone."""
    wanted = set(bugs)
    try:
        cells = load_expectations(DEFAULT_EXPECTATIONS, quick=False)
    except BadInput:
        return {}
    return {c.bug: c.anomalies for c in cells if c.config == TUNED and c.bug in wanted}


def replay_verdict(s: Schedule, kinds: Mapping[str, int], documented: Mapping[str, Sequence[str]]) -> str:
    """One line: did the schedule's own anomaly kind come back? When it did not, but another kind that
    test-all counts as detecting one of the schedule's bugs did, the line says so apart: the bug was
    shown, in another form (a cluster in election churn may serve one read and be "unavailable" in
    no checker's sense, yet churn). The schedule's own kind alone makes "reproduced"."""
    seen = f"({', '.join(sorted(kinds)) or 'no anomalies'})"
    if s.anomaly in kinds:
        return f"schedule anomaly {s.anomaly}: reproduced {seen}"
    shown = sorted({k for bug in s.bugs for k in documented.get(bug, ()) if k in kinds})
    if shown:
        return (f"schedule anomaly {s.anomaly}: not reproduced {seen}; the bug showed as {', '.join(shown)} "
                f"(what test-all counts for {', '.join(b for b in s.bugs if b in documented)})")
    return f"schedule anomaly {s.anomaly}: not reproduced {seen}"


def _plan(s: Schedule, played: Schedule) -> str:
    """What a real-backend replay does with the schedule, in one line."""
    clients = f"{played.concurrency} clients (recorded {s.concurrency})"
    if not s.nemesis_events:
        return (f"no fault ops; the {len(s.client_events)} recorded client ops at their offsets, the main "
                f"phase until the last is handed out (recorded {s.time_limit:g} s, at most "
                f"{played.time_limit:g} s), {clients}")
    return (f"{len(s.nemesis_events)} fault ops at their offsets, the main phase until {REAL_MARGIN_S:g} s "
            f"after the last took effect (recorded {s.time_limit:g} s, at most {played.time_limit:g} s), "
            f"{clients}")
