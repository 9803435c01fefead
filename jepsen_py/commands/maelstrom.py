"""`jepsen-py maelstrom`: Maelstrom's `test` command, by Maelstrom's flag names, for a node in any
language. It only translates: the flags become `jepsen-py run --backend maelstrom`'s, and the run is
that command's (the same spec, assembly, runner, results and exit code)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from jepsen_py import runflags
from jepsen_py.commands import run as run_command
from jepsen_py.errors import BadInput
from jepsen_py.flags import path_text
from jepsen_py.maelstrom.latency import DISTRIBUTIONS
from jepsen_py.maelstrom_world.backend import MAX_LATENCY_MS
from jepsen_py.numbers import MAX_SECONDS, integer, number
from jepsen_py.spec import NEMESIS_INTERVAL, NODE_COUNT, RATE, SEED, TIME_LIMIT
from jepsen_py.workloads.knobs import KNOBS

NAME = "maelstrom"
HELP = "test a node program in any language through Maelstrom's protocol (Maelstrom's test flags)"

#: Maelstrom's fault names -> ours (Maelstrom's partitions split the nodes into random halves).
NEMESES = {"partition": "partition-random", "kill": "kill", "pause": "pause"}
#: Maelstrom's defaults, where they differ from jepsen-py run's.
DEFAULT_NODE_COUNT = 5
DEFAULT_RATE = 5.0
DEFAULT_CONCURRENCY = "1n"
#: Maelstrom heals the faults, then waits this long for the nodes to recover before the final reads
#: of the workloads that have them (its final-generator: broadcast, g-set, the counters, kafka); the
#: other workloads end with their main phase. Our own default for `run` is shorter.
RECOVERY_WAIT_S = 10.0
FINAL_READ_WORKLOADS = frozenset({"broadcast", "g-set", "g-counter", "pn-counter", "kafka"})
#: Maelstrom's transactional knobs -> the workload options txn-list-append and txn-rw-register read
#: (workloads/maelstrom/txn.py); given only when set, so Maelstrom's defaults (4 micro-ops, 16 writes
#: a key, strict-serializable) and the workloads' key counts hold otherwise.
TXN_KNOBS = {"key_count": "--key-count", "max_txn_length": "--max-txn-length",
             "max_writes_per_key": "--max-writes-per-key"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("example: jepsen-py maelstrom --bin ./echo.py --workload echo --node-count 1 "
                     "--time-limit 10. Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or "
                     "input (a node that does not answer its init too), 255 framework failure.")
    parser.add_argument("--bin", required=True, type=path_text, metavar="PATH",
                        help="the node program: reads Maelstrom messages on stdin, writes them on stdout")
    parser.add_argument("--bin-arg", action="append", default=None, metavar="ARG",
                        help="an argument for --bin, repeatable (e.g. --bin python3 --bin-arg node.py)")
    parser.add_argument("-w", "--workload", required=True, metavar="NAME",
                        help="what the clients ask of the nodes, by Maelstrom's name (docs/maelstrom.md; "
                             "a name not wired here is refused with the list, as run refuses it)")
    parser.add_argument("--node-count", type=NODE_COUNT.arg(), default=DEFAULT_NODE_COUNT, metavar="N",
                        help=f"nodes n1..nN (default {DEFAULT_NODE_COUNT})")
    parser.add_argument("--time-limit", type=TIME_LIMIT.arg(), default=60.0, metavar="S",
                        help="seconds of client ops (default 60)")
    parser.add_argument("--rate", type=RATE.arg(), default=DEFAULT_RATE, metavar="OPS",
                        help=f"ops per second over all clients (default {DEFAULT_RATE:g})")
    parser.add_argument("--concurrency", default=DEFAULT_CONCURRENCY, metavar="N|Kn",
                        help=f"clients; Kn means K per node (default {DEFAULT_CONCURRENCY})")
    parser.add_argument("--latency", type=number(0, MAX_LATENCY_MS), default=0.0, metavar="MS",
                        help="each message's mean delay in milliseconds (default 0)")
    parser.add_argument("--latency-dist", choices=DISTRIBUTIONS, default="constant",
                        help="how delays are drawn around --latency (default constant)")
    parser.add_argument("--nemesis", action="append", default=None, metavar="NAMES",
                        help=f"faults, comma separated or repeated: {', '.join(NEMESES)} (default none)")
    parser.add_argument("--nemesis-interval", type=NEMESIS_INTERVAL.arg(), default=10.0, metavar="S",
                        help="seconds between faults (default 10)")
    parser.add_argument("--availability", type=availability, default=None, metavar="total|F",
                        help="fail unless this fraction of client requests succeeded (total: all of them; "
                             "default: not judged), as Maelstrom's")
    parser.add_argument("--recovery-wait", type=number(0, MAX_SECONDS), default=RECOVERY_WAIT_S,
                        metavar="S", help=f"seconds between the heal and the final reads of "
                        f"{', '.join(sorted(FINAL_READ_WORKLOADS))} (default {RECOVERY_WAIT_S:g}, "
                        "Maelstrom's)")
    parser.add_argument("--topology", default=None, metavar="KIND",
                        help="broadcast's topology: grid, line, total, tree2, tree3, tree4 (default grid)")
    parser.add_argument("--key-count", type=_count("key_count"), default=None, metavar="N",
                        help="txn workloads: keys in use at once (default: txn-list-append 3, "
                             "txn-rw-register 4)")
    parser.add_argument("--max-txn-length", type=_count("max_txn_length"), default=None, metavar="N",
                        help="txn workloads: micro-ops in a transaction, at most (default 4)")
    parser.add_argument("--max-writes-per-key", type=_count("max_writes_per_key"), default=None,
                        metavar="N", help="txn workloads: writes before a key is retired (default 16)")
    parser.add_argument("--consistency-models", default=None, metavar="MODELS",
                        help="txn workloads: the models to check, comma separated, e.g. read-committed, "
                             "serializable, snapshot-isolation (default strict-serializable)")
    parser.add_argument("--seed", type=SEED.arg(), default=None,
                        help="random seed (default: random, recorded)")
    parser.add_argument("--results-dir", type=path_text, default="results", metavar="DIR",
                        help="where run directories go (default ./results)")
    parser.add_argument("--junit-xml", type=path_text, default=None, metavar="FILE",
                        help="also write the verdict as JUnit XML (for CI)")
    parser.add_argument("--no-progress", action="store_true", help="no live progress display")


def availability(given: str) -> float:
    """Maelstrom's --availability: `total` (every client request must succeed) or a fraction 0..1."""
    if given.strip() == "total":
        return 1.0
    try:
        value = float(given)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 1:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{given!r}: must be 'total' or a number from 0 to 1")
    return value


def _count(knob: str) -> Callable[[str], int]:
    """An argparse `type=` for a whole number in the range the workload option `knob` allows."""
    return integer(int(KNOBS[knob].lo), int(KNOBS[knob].hi))


def consistency_models(given: str) -> str:
    """Maelstrom's comma separated models, checked as the txn workloads' check reads them (one line
    naming --consistency-models for an unknown one), as that option's text."""
    from jepsen_py.checkers.elle.wanted import parse_wanted

    names = [n.strip() for n in given.split(",")]
    parse_wanted(names, None, labels=("--consistency-models", "--anomalies"))
    return ",".join(names)


def nemeses(given: Sequence[str] | None) -> str:
    """Maelstrom's fault names as ours, comma separated ("none" for none); BadInput for another."""
    out: list[str] = []
    for item in given or ():
        for name in (n.strip() for n in item.split(",")):
            if not name or name == "none":
                continue
            if name not in NEMESES:
                raise BadInput(f"--nemesis: unknown fault {name!r} (choose from {', '.join(NEMESES)}; "
                               "combine with commas)")
            if NEMESES[name] not in out:
                out.append(NEMESES[name])
    return ",".join(out) or "none"


def run_argv(args: argparse.Namespace) -> list[str]:
    """`jepsen-py run`'s flags for the same test."""
    argv = ["--backend", "maelstrom", "--bin", args.bin, "--workload", args.workload,
            "--node-count", str(args.node_count), "--time-limit", repr(args.time_limit),
            "--rate", repr(args.rate), "--concurrency", args.concurrency, "--latency", repr(args.latency),
            "--latency-dist", args.latency_dist, "--nemesis", nemeses(args.nemesis),
            "--nemesis-interval", repr(args.nemesis_interval), "--results-dir", args.results_dir]
    for arg in args.bin_arg or ():
        argv.append(f"--bin-arg={arg}")  # an argument may itself start with a dash
    if args.workload in FINAL_READ_WORKLOADS:
        argv += ["--workload-option", f"final_delay={args.recovery_wait!r}"]
    if args.topology is not None:
        argv += ["--workload-option", f"topology={args.topology}"]
    for knob in TXN_KNOBS:
        if getattr(args, knob) is not None:
            argv += ["--workload-option", f"{knob}={getattr(args, knob)}"]
    if args.consistency_models is not None:
        argv += ["--workload-option", f"consistency_models={consistency_models(args.consistency_models)}"]
    if args.availability is not None:
        argv += ["--availability-min-ok-fraction", repr(args.availability)]
    if args.seed is not None:
        argv += ["--seed", str(args.seed)]
    if args.junit_xml is not None:
        argv += ["--junit-xml", args.junit_xml]
    if args.no_progress:
        argv.append("--no-progress")
    return argv


def run(args: argparse.Namespace) -> int:
    """The same test as `jepsen-py run --backend maelstrom ...`; the exit code is its verdict."""
    return run_command.run(runflags.parser().parse_args(run_argv(args)))
