"""Command-line options -> TestSpec, and TestSpec <-> test.json.

Jepsen's habits: nodes n1..n5 by default, `--concurrency 3n` means three clients per node, a time
limit in seconds. Every value a user can get wrong is checked here and reported as one BadInput line
naming the option.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import secrets
from pathlib import Path
from typing import Any

from jepsen_py.backends import backend_kind, default_backend
from jepsen_py.cluster.readmodes import READ_MODES
from jepsen_py.errors import BadInput
from jepsen_py.flags import allow_empty, parse_pairs, path_text
from jepsen_py.nodenames import check_node_name
from jepsen_py.numbers import (
    MAX_CLIENTS,
    MAX_NODES,
    MAX_RUN_SECONDS,
    MAX_SECONDS,
    MAX_SEED,
    Bound,
    check_seeds,
    integer,
    number,
)
from jepsen_py.numbers import check as check_number
from jepsen_py.protocols import TestSpec
from jepsen_py.references import canonical_db, check_reference

DEFAULT_NODE_COUNT = 5
DEFAULT_CONCURRENCY = "2n"
DEFAULT_TIME_LIMIT = 60.0
DEFAULT_RATE = 100.0
DEFAULT_NEMESIS_INTERVAL = 10.0
DEFAULT_DB = "jepsen_py.raftdb:RaftMetadataDB"
DEFAULT_READ_MODE = "read-index"

# What each test parameter may be: the `run` flags take these, and so does a schedule file that
# carries the same values (run --schedule), so neither can ask for what the other refuses.
TIME_LIMIT = Bound("--time-limit", 0, MAX_RUN_SECONDS, lo_open=True)
NEMESIS_INTERVAL = Bound("--nemesis-interval", 0, MAX_SECONDS, lo_open=True)
RATE = Bound("--rate", 0, 1e9)
SEED = Bound("--seed", 0, MAX_SEED, integral=True)
NODE_COUNT = Bound("--node-count", 1, 100_000, integral=True)
CONCURRENCY = Bound("--concurrency", 1, 999_999_999, integral=True)  # parse_concurrency: nine digits


def parse_concurrency(text: str | int, node_count: int) -> int:
    """`10` -> 10, `3n` -> 3 x node_count (Jepsen's notation)."""
    s = str(text).strip().lower()
    m = re.fullmatch(r"(\d+)\s*(n?)", s)
    if not m:
        raise BadInput(
            f"--concurrency: expected a number or a multiple of the node count like 3n, got {text!r}"
        )
    if len(m.group(1)) > 9:
        raise BadInput(f"--concurrency: {text!r} is not a usable number of clients")
    n = int(m.group(1)) * (node_count if m.group(2) else 1)
    if n < 1:
        raise BadInput(f"--concurrency: needs at least one client, got {text!r}")
    return n


def parse_list(values: list[str] | str | None) -> list[str]:
    """Comma lists, possibly repeated: ["a,b", "c"] -> [a, b, c]; duplicates dropped, order kept."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for v in values:
        for part in v.split(","):
            part = part.strip()
            if part and part not in out:
                out.append(part)
    return out


def parse_nodes(nodes: str | None, node_count: int | None) -> list[str]:
    """`--nodes` as names (each once, none empty), else n1..n<node_count>."""
    if nodes is not None:
        raw = [p.strip(" ") for p in nodes.split(",")]  # spaces after commas only: no tab or newline
        if not any(raw):
            raise BadInput(f"--nodes: no node names given ({nodes!r}); leave the flag out for n1..n5")
        if "" in raw:
            raise BadInput(f"--nodes: empty node name in {nodes!r}")
        names = [check_node_name(n, "--nodes") for n in raw]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise BadInput(f"--nodes: {', '.join(dup)} named more than once in {nodes!r}")
        if node_count is not None and node_count != len(names):
            raise BadInput(f"--nodes names {len(names)} nodes but --node-count says {node_count}")
        return names
    count = DEFAULT_NODE_COUNT if node_count is None else node_count
    if count < 1:
        raise BadInput(f"--node-count: needs at least one node, got {count}")
    return [f"n{i}" for i in range(1, count + 1)]


def read_nodes_file(path: str) -> list[str]:
    """Jepsen's --nodes-file: one node name per line; blank lines and # comments are skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise BadInput(f"--nodes-file: {path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"--nodes-file: {path}: is a directory") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"--nodes-file: {path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    names = []
    for i, line in enumerate(lines, 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        names.append(check_node_name(name, f"{path}:{i}"))
    if not names:
        raise BadInput(f"--nodes-file: {path} names no nodes")
    return names


def node_names(args: argparse.Namespace) -> str | None:
    """--nodes-file, --nodes and every -n/--node together, as one --nodes list (None: none given)."""
    parts: list[str] = []
    if getattr(args, "nodes_file", None):
        parts.extend(read_nodes_file(args.nodes_file))
    if args.nodes is not None:
        parts.append(args.nodes)
    parts.extend(getattr(args, "node", None) or [])
    return ",".join(parts) if parts else None


def default_test_name(workload: str, nemesis: list[str], bugs: list[str],
                      db_options: dict[str, str] | None = None) -> str:
    """`<workload>-<nemesis>[-<bug>...][-<key>_<value>...]`, e.g.
    offsets-partition-leader-zombie-leader or register-partition-reads_replica: runs of a weak and
    a correct configuration of one DB land in different test directories."""
    parts = [workload, "+".join(nemesis) if nemesis else "none", *bugs,
             *(f"{k}={v}" for k, v in sorted((db_options or {}).items()))]
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", "-".join(parts))


def _positive(name: str, value: float, *, zero_ok: bool = False) -> float:
    return check_number(name, value, lo=0, hi=MAX_SECONDS, lo_open=not zero_ok)


def machine_limits() -> tuple[int, int]:
    """(nodes, clients) this machine can hold: every node is a process of a few tens of MB and every
    client a thread with its connection; past these a run measures the machine, not the system."""
    import os

    cpus = os.cpu_count() or 1
    try:
        mem_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        mem_mb = 4096
    nodes = max(9, min(8 * cpus, mem_mb // 128, 250))
    clients = max(64, min(200 * cpus, mem_mb // 8))
    return nodes, clients


def check_size(nodes: int, concurrency: int, *, override: bool = False, where: str | None = None) -> None:
    """Node count and client count within what the machine can hold (unless overridden), and
    within jepsen-py's own bounds (numbers.MAX_NODES, MAX_CLIENTS) either way; `where` names a file
    the counts came from instead of the flags."""
    nodes_label = f"{where}: nodes" if where else "--nodes/--node-count"
    clients_label = f"{where}: concurrency" if where else "--concurrency"
    if not override:
        max_nodes, max_clients = machine_limits()
        if nodes > max_nodes:
            raise BadInput(f"{nodes_label}: {nodes} nodes is more than this machine holds "
                           f"(at most {max_nodes}; --ignore-machine-limits to insist)")
        if concurrency > max_clients:
            raise BadInput(f"{clients_label}: {concurrency} clients is more than this machine drives "
                           f"(at most {max_clients}; --ignore-machine-limits to insist)")
    if nodes > MAX_NODES:
        raise BadInput(f"{nodes_label}: {nodes} nodes is more than one run holds "
                       f"(at most {MAX_NODES}, even with --ignore-machine-limits)")
    if concurrency > MAX_CLIENTS:
        raise BadInput(f"{clients_label}: {concurrency} clients is more than one run drives "
                       f"(at most {MAX_CLIENTS}, even with --ignore-machine-limits)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that define a test (the `run` command)."""
    g = parser.add_argument_group("test")
    g.add_argument("-w", "--workload", default="offsets",
                   help="what the clients do (default: offsets)")
    g.add_argument("--nemesis", action="append", metavar="NAMES",
                   help="faults to inject, comma separated or repeated; 'none' for none "
                        "(default: none)")
    g.add_argument("--nemesis-interval", type=NEMESIS_INTERVAL.arg(),
                   default=DEFAULT_NEMESIS_INTERVAL, metavar="S",
                   help=f"seconds between fault operations (default: {DEFAULT_NEMESIS_INTERVAL:g})")
    g.add_argument("--nemesis-schedule", choices=("random", "cycle"), default="random",
                   help="random: each interval toggles a random fault family, so faults overlap; "
                        "cycle: one fault at a time, the families taking turns (default: random)")
    g.add_argument("--fault-targets", default=None, metavar="KINDS",
                   help="nodes pause and kill may hit, comma separated, one picked per fault: leader, "
                        "one, minority, majority, all (default: leader,one,minority)")
    g.add_argument("--time-limit", type=TIME_LIMIT.arg(), default=DEFAULT_TIME_LIMIT,
                   metavar="S",
                   help=f"seconds of the main phase (default: {DEFAULT_TIME_LIMIT:g})")
    g.add_argument("--concurrency", default=DEFAULT_CONCURRENCY, metavar="N|Kn",
                   help="client threads; Kn means K per node (default: 2n)")
    g.add_argument("--rate", type=RATE.arg(), default=DEFAULT_RATE, metavar="OPS",
                   help=f"target ops/s over all clients, 0 = unlimited (default: {DEFAULT_RATE:g})")
    g.add_argument("--seed", type=SEED.arg(), default=None,
                   help="random seed for generators and fault choices (default: random, recorded)")
    g.add_argument("--test-count", type=integer(1, 100_000), default=1, metavar="N",
                   help="run the test N times, each in its own run directory (default: 1)")
    g.add_argument("--name", default=None,
                   help="test name in results/ (default: <workload>-<nemesis>[-<bugs>])")
    g.add_argument("--op-timeout", type=number(0, MAX_SECONDS, lo_open=True), default=10.0, metavar="S",
                   help="an op not completed within S seconds is recorded as info (default: 10)")
    g.add_argument("--recovery-timeout", type=number(0, MAX_SECONDS), default=30.0, metavar="S",
                   help="after heal, wait at most S seconds for a stable leader (default: 30)")

    c = parser.add_argument_group("cluster")
    # node names say themselves what is wrong with an empty one (parse_nodes)
    allow_empty(c.add_argument("--nodes", default=None, metavar="N1,N2,...",
                               help="node names (default: n1..n5)"))
    allow_empty(c.add_argument("-n", "--node", action="append", default=None, metavar="NAME",
                               help="a node name; repeat for more (Jepsen's -n); adds to --nodes"))
    c.add_argument("--nodes-file", type=path_text, default=None, metavar="FILE",
                   help="node names, one per line (# comments and blank lines skipped); adds to --nodes")
    c.add_argument("--node-count", type=NODE_COUNT.arg(), default=None, metavar="N",
                   help=f"number of nodes named n1..nN (default: {DEFAULT_NODE_COUNT})")
    c.add_argument("--backend", default=None,
                   help="where nodes run: docker, ssh, local, none, sim (simulated in this process, "
                        "in virtual time), maelstrom (--bin's processes, any language, through "
                        "Maelstrom's protocol), or MODULE:CLASS of your own (default: docker when a Docker "
                        "engine answers, else local)")
    c.add_argument("--db", default=DEFAULT_DB, metavar="MODULE:CLASS",
                   help=f"the system under test, constructed as CLASS(spec) (default: {DEFAULT_DB})")
    c.add_argument("--read-mode", default=None, choices=READ_MODES,
                   help="how our cluster's nodes serve reads (default: read-index, linearizable); only "
                        "for a DB that declares read modes, others take their settings as --db-option")
    c.add_argument("--db-option", action="append", default=None, metavar="KEY=VALUE",
                   help="a setting of the system under test, repeatable, passed to the DB in its spec "
                        "(spec.db_options) and recorded with the run; the keys are the DB's own "
                        "(jepsen-py db-check lists them)")
    c.add_argument("--bug", action="append", metavar="NAMES",
                   help="start the cluster with a known bug, comma separated or repeated")
    c.add_argument("--ignore-machine-limits", action="store_true",
                   help="allow more nodes or clients than this machine is judged to hold")
    c.add_argument("--leave-db-running", action="store_true",
                   help="do not tear the nodes down after the test (for inspection)")

    o = parser.add_argument_group("output")
    o.add_argument("--results-dir", type=path_text, default="results", metavar="DIR",
                   help="where run directories go (default: ./results)")
    o.add_argument("--junit-xml", type=path_text, default=None, metavar="FILE",
                   help="also write the verdict as JUnit XML (for CI)")
    o.add_argument("--no-progress", action="store_true", help="no live progress display")
    o.add_argument("--fsync-history", action=argparse.BooleanOptionalAction, default=False,
                   help="fsync history.jsonl after every record, so a crash of the machine loses no "
                        "op (default off: about 40x fewer records/s here, see bench/"
                        "bench_history_fsync.py; every record is flushed to the OS either way and the "
                        "file is fsync'd when the run ends)")


def from_args(args: argparse.Namespace, options: dict[str, Any] | None = None) -> TestSpec:
    """Builds and checks the spec from parsed `run` arguments."""
    backend = args.backend or default_backend()
    names = node_names(args)
    hosts = backend_kind(backend).hosts(options or {}) if names is None and args.node_count is None else None
    nodes = hosts or parse_nodes(names, args.node_count)
    nemesis = [n for n in parse_list(args.nemesis) if n != "none"]
    bugs = parse_list(args.bug)
    if args.test_count < 1 or args.test_count > 100_000:
        raise BadInput(f"--test-count: must be >= 1, got {args.test_count}")
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    check_seeds("--seed", seed, args.test_count)  # run i of --test-count has seed + i
    db_options = parse_db_options(getattr(args, "db_option", None))
    name = args.name or default_test_name(args.workload, nemesis, bugs, db_options)
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name) or name in {".", ".."}:
        raise BadInput(f"--name: {name!r} is not usable as a directory name")
    concurrency = parse_concurrency(args.concurrency, len(nodes))
    check_size(len(nodes), concurrency, override=bool(getattr(args, "ignore_machine_limits", False)))
    return TestSpec(
        name=name,
        workload=args.workload,
        nemesis=nemesis,
        nodes=nodes,
        time_limit=_positive("--time-limit", args.time_limit),
        concurrency=concurrency,
        rate=_positive("--rate", args.rate, zero_ok=True),
        nemesis_interval=_positive("--nemesis-interval", args.nemesis_interval),
        seed=seed,
        backend=backend,
        read_mode=default_read_mode(args.read_mode, canonical_db(args.db)),
        bugs=bugs,
        db=check_reference(canonical_db(args.db), "--db"),
        results_dir=Path(args.results_dir),
        leave_db_running=bool(args.leave_db_running),
        test_count=args.test_count,
        options={**(options or {}), "fsync_history": bool(getattr(args, "fsync_history", False))},
        op_timeout=_positive("--op-timeout", args.op_timeout),
        recovery_timeout=_positive("--recovery-timeout", args.recovery_timeout, zero_ok=True),
        fault_targets=parse_fault_targets(getattr(args, "fault_targets", None)),
        nemesis_schedule=getattr(args, "nemesis_schedule", "random"),
        db_options=db_options,
    )


def default_read_mode(given: str | None, db: str) -> str | None:
    """--read-mode as given; unset, our cluster's default for our cluster and None for any other DB
    (one that declares read modes gets its first from plugins.check_db_flags)."""
    if given is not None:
        return given
    return DEFAULT_READ_MODE if db == DEFAULT_DB else None


def parse_db_options(values: list[str] | None) -> dict[str, str]:
    """`--db-option KEY=VALUE`, repeated -> {KEY: VALUE}; a key given twice is a mistake, not an
    override."""
    return parse_pairs(values, "--db-option")


def db_options_text(options: dict[str, str] | None) -> str:
    """The DB options as one label, `k=v,k2=v2` sorted by key; "" when none were given."""
    return ",".join(f"{k}={v}" for k, v in sorted((options or {}).items()))


#: What --fault-targets may name: which nodes a fault hits (jepsen_py.nemeses.targets picks them).
TARGETS = ("leader", "one", "random", "minority", "majority", "all")


def parse_fault_targets(text: str | None) -> list[str]:
    kinds = parse_list([text]) if text else []
    unknown = [k for k in kinds if k not in TARGETS]
    if unknown:
        raise BadInput(f"--fault-targets: unknown target {', '.join(map(repr, unknown))} "
                       f"(choose from {', '.join(TARGETS)})")
    return kinds


# Options that are secrets: never written to test.json (which `serve` shows and CI uploads); the
# store keeps only that one was given.
SECRET_OPTIONS = frozenset({"ssh_password"})
REDACTED = "<redacted>"


def to_json(spec: TestSpec) -> dict[str, Any]:
    d = dataclasses.asdict(spec)
    d["results_dir"] = str(spec.results_dir)
    d["options"] = redact(d.get("options") or {})
    return d


def redact(options: dict[str, Any]) -> dict[str, Any]:
    """`options` with every secret replaced by a marker saying one was given (absent ones stay None)."""
    return {k: (REDACTED if k in SECRET_OPTIONS and v else v) for k, v in options.items()}


# What each test.json field must hold, so a hand-edited file fails here, naming the field, and not
# deep inside a checker.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,), "workload": (str,), "nemesis": (list,), "nodes": (list,),
    "time_limit": (int, float), "concurrency": (int,), "rate": (int, float),
    "nemesis_interval": (int, float), "seed": (int,), "backend": (str,), "read_mode": (str, type(None)),
    "bugs": (list,), "db": (str,), "results_dir": (str,), "leave_db_running": (bool,),
    "test_count": (int,), "options": (dict,), "op_timeout": (int, float),
    "recovery_timeout": (int, float), "fault_targets": (list,), "nemesis_schedule": (str,),
    "db_options": (dict,),
}
_STR_LISTS = ("nemesis", "nodes", "bugs", "fault_targets")


def from_json(d: dict[str, Any], *, where: str = "test.json") -> TestSpec:
    """A TestSpec from test.json; unknown keys are ignored (newer writers), missing ones BadInput."""
    if not isinstance(d, dict):
        raise BadInput(f"{where}: expected a JSON object")
    fields = {f.name: f for f in dataclasses.fields(TestSpec)}
    required = [n for n, f in fields.items()
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [n for n in required if n not in d]
    if missing:
        raise BadInput(f"{where}: missing {', '.join(missing)}")
    kwargs = {k: v for k, v in d.items() if k in fields}
    for k, v in kwargs.items():
        want = _FIELD_TYPES.get(k)
        if want is None:
            continue
        if not isinstance(v, want) or (isinstance(v, bool) and bool not in want):
            raise BadInput(f"{where}: {k} must be {' or '.join(t.__name__ for t in want)}, "
                           f"got {type(v).__name__}")
        if k in _STR_LISTS and not all(isinstance(x, str) for x in v):
            raise BadInput(f"{where}: {k} must be a list of names")
        if k == "db_options" and not all(isinstance(x, str) for x in (*v, *v.values())):
            raise BadInput(f"{where}: db_options must map names to text")
        if isinstance(v, float) and not math.isfinite(v):
            raise BadInput(f"{where}: {k} must be a finite number, got {v}")
    check_seeds(f"{where}: seed", kwargs["seed"])
    kwargs["results_dir"] = Path(kwargs["results_dir"])
    try:
        return TestSpec(**kwargs)
    except TypeError as e:
        raise BadInput(f"{where}: {e}") from None


def with_seed(spec: TestSpec, seed: int) -> TestSpec:
    return dataclasses.replace(spec, seed=seed, options=dict(spec.options))
