"""`jepsen-py run --schedule FILE`: one run driven by a schedule file.

In simulation (--backend sim) every recorded op is replayed, the clients' too, at its offset: with the
schedule's seed the run is the one that was recorded. On Docker (or any real backend) the nemesis ops
land at the same offsets of the main phase, with the workload's own clients beside them at the
schedule's rate; the answers differ run to run, so the report says whether the schedule's anomaly
came back.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from jepsen_py.errors import EXIT_BAD_INPUT, BadInput
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.system import anomaly_kinds, replay_run, run_real, run_sim, spec_for

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
    spec = spec_for(s, backend=backend, results_dir=Path(args.results_dir), name=name, db=args.db)
    from jepsen_py.analysis import CLI_POST_RUN

    simulated = backend == "sim"
    outcome: Any = replay_run(s, spec, run_sim if simulated else run_real, CLI_POST_RUN, clients=simulated)
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
