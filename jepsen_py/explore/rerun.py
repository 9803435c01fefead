"""`jepsen-py run --schedule FILE`: one run driven by a schedule file.

In simulation (--backend sim) every recorded op is replayed, the clients' too, at its offset: with the
schedule's seed the run is the one that was recorded. On Docker (or any real backend) the nemesis ops
land at the same offsets of the main phase, with the workload's own clients beside them at the
schedule's rate; the answers differ run to run, so the report says whether the schedule's anomaly
came back. A real cluster reacts more slowly than the simulated one, so its replay is stretched to
fit (replay.for_real_backend): a margin after the last fault, a client on every node, and fault
windows as long as recorded from the moment each fault took effect.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jepsen_py.errors import EXIT_BAD_INPUT, BadInput
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.replay import NemesisReplay, PhaseClock, for_real_backend
from jepsen_py.explore.schedule import Schedule
from jepsen_py.explore.system import Outcome, anomaly_kinds, replay_run, run_real, run_sim, spec_for
from jepsen_py.generator import rate
from jepsen_py.protocols import TestSpec

# `run` flags a schedule decides; given together with --schedule they are refused, not ignored.
_DEFINED_BY_SCHEDULE = (("nemesis", "--nemesis"), ("bug", "--bug"), ("nodes", "--nodes"),
                        ("node_count", "--node-count"), ("seed", "--seed"),
                        ("fault_targets", "--fault-targets"))


def run_schedule(args: argparse.Namespace) -> int:
    for attr, flag in _DEFINED_BY_SCHEDULE:
        if getattr(args, attr, None) is not None:
            raise BadInput(f"{flag}: the schedule file decides this (drop {flag} or --schedule)")
    if getattr(args, "test_count", 1) != 1:
        raise BadInput("--test-count: a schedule is one run (replay it again for another)")
    s = sched.load(args.schedule)
    from jepsen_py.backends import BACKENDS, default_backend

    backend = args.backend or default_backend()
    if backend not in BACKENDS and backend != "sim":
        raise BadInput(f"--backend: unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
    name = args.name or f"schedule-{s.workload}"
    simulated = backend == "sim"
    played = s if simulated else for_real_backend(s)
    spec = spec_for(played, backend=backend, results_dir=Path(args.results_dir), name=name, db=args.db)
    from jepsen_py.analysis import CLI_POST_RUN

    if simulated:
        outcome: Any = replay_run(s, spec, run_sim, CLI_POST_RUN)
    else:
        print(f"replaying on {backend}: main phase {played.time_limit:g} s (recorded {s.time_limit:g} s), "
              f"{played.concurrency} clients (recorded {s.concurrency}), "
              f"{len(s.nemesis_events)} fault ops at their offsets")
        outcome = replay_real(played, spec, CLI_POST_RUN)
    if outcome.exit_code == EXIT_BAD_INPUT:
        print(f"jepsen-py: {outcome.error} (run stored in {outcome.run_dir})", file=sys.stderr)
        return EXIT_BAD_INPUT
    from jepsen_py.progress import print_summary

    print_summary(valid=outcome.valid, invokes=outcome.invokes, oks=outcome.oks, anomalies=outcome.anomalies,
                  run_dir=outcome.run_dir, checkers=outcome.results.get("checkers"), error=outcome.error,
                  title=f"{name} (schedule {args.schedule}, seed {s.seed})")
    kinds = anomaly_kinds(outcome.results) if outcome.exit_code == 1 else {}
    if s.anomaly:
        verdict = "reproduced" if s.anomaly in kinds else "not reproduced"
        print(f"schedule anomaly {s.anomaly}: {verdict} ({', '.join(sorted(kinds)) or 'no anomalies'})")
    if args.junit_xml:
        from jepsen_py.commands.run import write_junit

        write_junit([outcome], Path(args.junit_xml))
    return int(outcome.exit_code)


def replay_real(s: Schedule, spec: TestSpec, post_run: Sequence[Any] = ()) -> Outcome:
    """`s` (already mapped by for_real_backend) on a real backend: its fault ops at their offsets,
    each window as long as recorded from when its fault took effect, and the workload's own clients
    at the schedule's rate (their answers differ from the recorded ones anyway)."""
    from jepsen_py.commands.run import workload_registry
    from jepsen_py.plugins import build_workload

    workload = build_workload(spec, workload_registry())
    if "rate" in s.options:
        workload.generator = rate(float(s.options["rate"]), workload.generator)
    return run_real(spec, workload, NemesisReplay(s, PhaseClock(), keep_gaps=True), post_run)
