"""The flags of one run and the TestSpec they make, parsed and checked in one place.

`jepsen-py run` puts these flags on its parser; test-all checks its matrix's cells with them; the
simulator's in-process matrix builds each cell's spec from them. All three go through
`spec_from_args`, so a flag means the same and is refused the same way wherever a run is described
by flags, and none of them needs the command line's modules to do it.
"""

from __future__ import annotations

import argparse
from typing import Any

from jepsen_py import spec as specmod
from jepsen_py.backends import add_backend_arguments, backend_kind, backend_options
from jepsen_py.bugs import check_bugs
from jepsen_py.dbversion import db_version
from jepsen_py.flags import Parser, path_text
from jepsen_py.plugins import (
    check_db_flags,
    check_nemesis_names,
    check_workload_name,
    declared_bugs,
    served_workloads,
)
from jepsen_py.protocols import TestSpec
from jepsen_py.workloads import add_workload_arguments, workload_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every flag a run takes: the spec's, --schedule, --db-version, and each backend's and
    workload's own options."""
    specmod.add_arguments(parser)
    parser.add_argument("--schedule", type=path_text, default=None, metavar="FILE",
                        help="replay a schedule file (from jepsen-py explore): in simulation exactly, "
                             "elsewhere its faults at the same offsets; says whether its anomaly reproduced")
    parser.add_argument("--db-version", default=None, metavar="VERSION",
                        help="the version of the system under test, recorded so runs of different "
                             "builds are aggregated apart (default: for our cluster the git describe "
                             "of the uploaded code, else unversioned)")
    add_backend_arguments(parser)
    add_workload_arguments(parser)


def parser() -> Parser:
    """A parser of run flags alone (what follows `jepsen-py run`), refusing as `run` refuses."""
    p = Parser(prog="jepsen-py run")
    add_arguments(p)
    return p


def collect_options(args: argparse.Namespace) -> dict[str, Any]:
    """Everything that goes into TestSpec.options: backend and workload flags."""
    options = backend_options(args)
    options.update(workload_options(args) or {})
    return options


def check_names(spec: TestSpec) -> None:
    """Unknown workload, nemesis or backend: one line naming it and the choices (the workloads the
    backend serves, when it names its own). Outside ones (MODULE:NAME or an entry point) are looked
    up by jepsen_py.plugins."""
    check_db_flags(spec)
    check_workload_name(spec.workload, served_workloads(backend_kind(spec.backend)))
    check_nemesis_names(list(spec.nemesis))
    backend_kind(spec.backend).backend_class()  # an unknown name, or an outside one that will not load
    check_db_bugs(spec)


def check_db_bugs(spec: TestSpec) -> None:
    """--bug names the DB does not know: refused before anything is provisioned. A DB declares its
    bugs with a `known_bugs()` static method; one that declares none takes no --bug at all."""
    if not spec.bugs:
        return

    check_bugs(spec.bugs, declared_bugs(spec.db), db=spec.db)


def spec_from_args(args: argparse.Namespace, *, versions: dict[str, str] | None = None,
                   versioned: bool = True) -> TestSpec:
    """The TestSpec parsed run flags describe, checked before anything is created: names, bugs and
    what the chosen backend refuses (BadInput, one line). `versioned` records the DB's version in
    the spec's options (for our cluster a `git describe`, asked once per DB when `versions` caches
    it across specs)."""
    spec = specmod.from_args(args, collect_options(args))
    if versioned:
        cache = versions if versions is not None else {}
        if spec.db not in cache:
            cache[spec.db] = db_version(spec.db, args.db_version)
        spec.options["db_version"] = cache[spec.db]
    check_names(spec)
    backend_kind(spec.backend).check_args(args)
    return spec
