"""`--backend maelstrom` as the backend registry sees it (jepsen_py.backends.BackendKind): its flags,
what it refuses, the workloads it serves and its run function. Nothing is provisioned: the nodes
are processes of the program --bin names, on this machine, and `run` (maelstrom_world/world.py)
builds them, their network and their clients, and runs them through the runner. The world and its
workloads load when a run asks for them, not whenever a parser lists this backend's flags."""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Callable
from typing import Any

from jepsen_py.backends import given_backend_options
from jepsen_py.backends.none import NoneBackend
from jepsen_py.errors import BadInput
from jepsen_py.flags import path_text
from jepsen_py.maelstrom.latency import DISTRIBUTIONS
from jepsen_py.numbers import number
from jepsen_py.protocols import TestSpec
from jepsen_py.references import canonical_db
from jepsen_py.spec import DEFAULT_DB
from jepsen_py.workload import Workload

#: Our flags, by the option string given_backend_options names them with.
FLAGS = ("--bin", "--bin-arg", "--latency", "--latency-dist")
#: The most latency a message may be given, in milliseconds (an hour).
MAX_LATENCY_MS = 3_600_000.0
#: The fault families of our nemeses this world carries out (`jepsen-py explore` draws among them):
#: the router's partitions, and kill and pause of the node processes.
FAULT_FAMILIES = ("partition", "kill", "pause")
#: What `jepsen-py explore` draws per trial when --latency or --latency-dist leaves it open: each
#: message's mean delay (ms) and its distribution; a finding's schedule carries the ones it ran with.
EXPLORE_OPTIONS = {"maelstrom_latency": (0.0, 5.0, 30.0), "maelstrom_latency_dist": DISTRIBUTIONS}


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The maelstrom backend's flags on `jepsen-py run` (values land in TestSpec.options)."""
    group.add_argument("--bin", dest="maelstrom_bin", type=path_text, default=None, metavar="PATH",
                       help="--backend maelstrom: the node program (any language; it reads Maelstrom "
                            "messages on stdin and writes them on stdout); required there")
    group.add_argument("--bin-arg", dest="maelstrom_bin_args", action="append", default=None,
                       metavar="ARG", help="--backend maelstrom: an argument for --bin, repeatable")
    group.add_argument("--latency", dest="maelstrom_latency", type=number(0, MAX_LATENCY_MS), default=0.0,
                       metavar="MS", help="--backend maelstrom: each message's mean delay (default 0)")
    group.add_argument("--latency-dist", dest="maelstrom_latency_dist", choices=DISTRIBUTIONS,
                       default="constant", help="--backend maelstrom: how delays are drawn around "
                                                "--latency (default constant)")


def check_args(args: argparse.Namespace) -> None:
    """One line (exit 254) for an option this backend could only ignore: another backend's, or one
    that configures our cluster (--db, --read-mode, --db-option, --bug)."""
    others = [flag for flag in given_backend_options(args) if flag not in FLAGS]
    if others:
        raise BadInput(f"{others[0]}: not an option of --backend maelstrom (its nodes are --bin's "
                       "processes on this machine)")
    for flag, dest in (("--read-mode", "read_mode"), ("--db-option", "db_option"), ("--bug", "bug")):
        if getattr(args, dest, None):
            raise BadInput(f"{flag}: not for --backend maelstrom (the system under test is --bin)")


def check_spec(spec: TestSpec) -> None:
    """One line (exit 254) for what this backend cannot honour, before anything is created."""
    from jepsen_py.maelstrom_world.world import MAELSTROM_DB  # the world loads when it is used

    if canonical_db(spec.db) not in (DEFAULT_DB, MAELSTROM_DB):
        raise BadInput(f"--db {spec.db}: --backend maelstrom tests the program --bin names, not a DB class")
    if spec.bugs:
        raise BadInput("--bug: the bugs are our cluster's; --backend maelstrom tests the program --bin names")
    if spec.db_options:
        raise BadInput("--db-option: not for --backend maelstrom (the system under test is --bin)")
    if spec.leave_db_running:
        raise BadInput("--leave-db-running: the nodes of --backend maelstrom are child processes of "
                       "this one and end with the run")
    check_bin(spec.options.get("maelstrom_bin"))
    check_latency(spec.options.get("maelstrom_latency"), spec.options.get("maelstrom_latency_dist"))


def check_latency(mean: object, dist: object) -> None:
    """The latency a run gets (from --latency and --latency-dist, or a schedule file's options)."""
    if mean is not None and (isinstance(mean, bool) or not isinstance(mean, int | float)
                             or not 0 <= mean <= MAX_LATENCY_MS):
        raise BadInput(f"--latency: {mean!r}: a number of milliseconds from 0 to {MAX_LATENCY_MS:g}")
    if dist is not None and dist not in DISTRIBUTIONS:
        raise BadInput(f"--latency-dist: {dist!r}: one of {', '.join(DISTRIBUTIONS)}")


def check_bin(path: object) -> None:
    """--bin given and something the kernel can run: an executable file, or a command on PATH."""
    if not path:
        raise BadInput("--bin: required with --backend maelstrom (the node program, e.g. --bin ./echo.py)")
    text = str(path)
    if os.sep not in text:
        if shutil.which(text) is None:
            raise BadInput(f"--bin: {text}: no such command on PATH (give a path, e.g. ./{text})")
        return
    if not os.path.exists(text):
        raise BadInput(f"--bin: {text}: no such file")
    if os.path.isdir(text):
        raise BadInput(f"--bin: {text}: is a directory")
    if not os.access(text, os.X_OK):
        raise BadInput(f"--bin: {text}: not executable (chmod +x it, or run it through its interpreter: "
                       f"--bin python3 --bin-arg {text})")


def workloads() -> dict[str, Callable[[TestSpec], Workload]]:
    """The workloads --workload names on this backend: Maelstrom's (maelstrom_world/workloads.py)."""
    from jepsen_py.maelstrom_world.workloads import factories

    return factories()


def run(spec: TestSpec, **kw: Any) -> Any:
    """Runs `spec` on nodes of the --bin program (jepsen_py.maelstrom_world.world.run_maelstrom);
    the assembly checked it (check_spec) before building its parts."""
    from jepsen_py.maelstrom_world.world import run_maelstrom

    return run_maelstrom(spec, **kw)


class MaelstromBackend(NoneBackend):
    """Nothing to provision: the nodes are processes on this machine, named as the nodes."""

    name = "maelstrom"
