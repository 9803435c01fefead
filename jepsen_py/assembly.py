"""One test assembled from its spec, and run in the world its backend names.

A TestSpec holds names; `assemble` turns them into the live parts (DB, workload with its checkers
and generator, nemesis and its schedule, backend), each built from its name unless the caller hands
it over ready-made (the Python API's objects, explore's drawn workload and schedule). `run` hands
the parts to the runner, or to the backend kind's own run function when the backend builds its
own world (the simulator: virtual time, its own DB and clients on simulated nodes). `jepsen-py
run`, the Python API and explore's trials all come through here, so a test is put together one way
whichever door it comes in by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jepsen_py.backends import backend_kind, get_backend
from jepsen_py.errors import BadInput
from jepsen_py.generator import Generator
from jepsen_py.plugins import build_nemesis, build_workload, load_db, served_workloads
from jepsen_py.protocols import DB, Backend, Nemesis, TestSpec
from jepsen_py.runner import run_test
from jepsen_py.workload import Workload


@dataclass
class Parts:
    """The live parts of one test, built from its spec."""

    spec: TestSpec
    db: DB | None
    workload: Workload
    nemesis: Nemesis | None
    nemesis_generator: Generator | None
    backend: Backend | None


def assemble(spec: TestSpec, *, db: DB | None = None, workload: Workload | None = None,
             nemesis: Sequence[Any] | None = None, nemesis_generator: Generator | None = None) -> Parts:
    """The parts `spec` names; a part given here is used as it is. `nemesis` lists the faults
    (names or objects) when they are not the spec's own names; `nemesis_generator` replaces the
    schedule the faults would draw. On a backend that builds its own world the DB, backend, nemesis
    and schedule are that world's, made when it runs (None here, unless a schedule is given)."""
    kind = backend_kind(spec.backend)
    own_world = kind.run_function() is not None
    if own_world:
        kind.check_spec(spec)  # what that world cannot honour, before any part is built
        if db is not None:
            raise BadInput(f"--backend {spec.backend}: it builds its own DB; a DB object cannot be given")
    if workload is None:
        workload = build_workload(spec, served_workloads(kind))
    if own_world:  # its nemesis is built when it runs, from the spec's names
        return Parts(spec, None, workload, None, nemesis_generator, None)
    faults = list(spec.nemesis) if nemesis is None else [n for n in nemesis if n != "none"]
    built, schedule = build_nemesis(faults, spec)
    if db is None:
        db = load_db(spec.db, spec)
    return Parts(spec, db, workload, built, nemesis_generator or schedule, get_backend(spec.backend, spec))


def run(parts: Parts, *, post_run: Sequence[Any] = (), show_progress: bool = False,
        fsync_history: bool | None = None, **world: Any) -> Any:
    """Runs the assembled test once and returns its outcome (verdict, results, run directory).
    `world`: what a backend that builds its own world takes besides (the simulator's `status`)."""
    spec = parts.spec
    own_run = backend_kind(spec.backend).run_function()
    if own_run is not None:  # a backend that builds its own cluster (the simulator, in virtual time)
        return own_run(spec, workload=parts.workload, nemesis_generator=parts.nemesis_generator,
                       post_run=post_run, show_progress=show_progress, **world)
    if world:
        raise TypeError(f"--backend {spec.backend} runs on the runner, which takes none of {sorted(world)}")
    if fsync_history is None:
        fsync_history = bool(spec.options.get("fsync_history", False))
    return run_test(spec, db=parts.db, workload=parts.workload, nemesis=parts.nemesis,
                    nemesis_generator=parts.nemesis_generator, backend=parts.backend,
                    show_progress=show_progress, post_run=post_run, fsync_history=fsync_history)
