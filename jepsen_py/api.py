"""A test built in code, as Jepsen's test map, and run: the Python face of `jepsen-py run`.

    from jepsen_py.api import JepsenTest, run

    outcome = run(JepsenTest(db=MyDB, workload="register", nemesis=["partition-leader"],
                             time_limit=30))
    assert outcome.valid is True, outcome.anomalies

Only `db` is required; everything else has the command line's defaults (three nodes here, a
single-machine sized test), and pictures are drawn by default. Every part may be given as a name
(built-in or entry point), a `module:name` reference, or the object itself:

  db         reference, DB class / factory(spec), or a DB instance
  workload   name or reference, a Workload, or factory(spec) -> Workload
  nemesis    names / references / Nemesis objects (an object's schedule is its generator(spec), or
             its start*/stop* pair every nemesis_interval)
  checkers   extra checkers beside the workload's: references or Checker objects
  generator  replaces the workload's main generator: a reference, a Generator or a template

`outcome` is the runner's RunOutcome: valid (True / False / "unknown"), results (results.json),
run_dir, exit_code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jepsen_py import assembly
from jepsen_py.backends import backend_kind, default_backend
from jepsen_py.errors import BadInput
from jepsen_py.generator import checked
from jepsen_py.nodenames import check_node_names
from jepsen_py.numbers import check_seeds
from jepsen_py.plugins import (
    build_workload,
    check_db_flags,
    load_checker,
    load_db,
    load_generator,
    plugin_call,
)
from jepsen_py.postrun import export_parquet, render_pictures
from jepsen_py.protocols import TestSpec
from jepsen_py.runner import RunOutcome
from jepsen_py.spec import check_size, default_test_name, parse_concurrency
from jepsen_py.workload import Workload

DEFAULT_NODES = 3


@dataclasses.dataclass(kw_only=True)
class JepsenTest:
    """Jepsen's test map: what to test, with which faults, for how long, and how to judge it."""

    db: Any
    workload: Any = "register"
    nemesis: Sequence[Any] = ()
    checkers: Sequence[Any] = ()
    generator: Any = None
    nodes: int | Sequence[str] = DEFAULT_NODES
    concurrency: int | str = "2n"
    time_limit: float = 30.0
    rate: float = 100.0
    nemesis_interval: float = 10.0
    nemesis_schedule: str = "random"
    fault_targets: Sequence[str] = ()
    seed: int | None = None
    backend: str | None = None
    # Our cluster's read mode (None: the DB's default); only for a DB that declares read modes.
    read_mode: str | None = None
    # The DB's own settings, as --db-option gives them (keys the DB declares in db_options()).
    db_options: dict[str, str] = dataclasses.field(default_factory=dict)
    name: str | None = None
    results_dir: str | Path = "results"
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    op_timeout: float = 10.0
    recovery_timeout: float = 30.0
    leave_db_running: bool = False
    pictures: bool = True
    parquet: bool = False
    show_progress: bool = False

    def spec(self) -> TestSpec:
        """The TestSpec this map stands for (what test.json records)."""
        import secrets


        if isinstance(self.nodes, int):
            if self.nodes < 1:
                raise BadInput(f"nodes: needs at least one node, got {self.nodes}")
            nodes = [f"n{i}" for i in range(1, self.nodes + 1)]
        else:
            nodes = check_node_names([str(n) for n in self.nodes], "nodes")
        for field, value in (("time_limit", self.time_limit), ("nemesis_interval", self.nemesis_interval),
                             ("op_timeout", self.op_timeout)):
            if not value > 0:
                raise BadInput(f"{field}: must be > 0, got {value}")
        nemesis_names = [_label(n) for n in self.nemesis if not (isinstance(n, str) and n == "none")]
        workload = _label(self.workload)
        options = dict(self.options)
        refs = [c for c in self.checkers if isinstance(c, str)]
        if refs:
            options["checkers"] = refs
        if isinstance(self.generator, str):
            options["generator"] = self.generator
        concurrency = parse_concurrency(self.concurrency, len(nodes))
        check_size(len(nodes), concurrency, override=True)  # jepsen-py's own bounds, not the machine's
        spec = TestSpec(
            name=self.name or default_test_name(workload, nemesis_names, [], self.db_options),
            workload=workload,
            nemesis=nemesis_names,
            nodes=nodes,
            time_limit=float(self.time_limit),
            concurrency=concurrency,
            rate=float(self.rate),
            nemesis_interval=float(self.nemesis_interval),
            seed=check_seeds("seed", self.seed) if self.seed is not None else secrets.randbelow(2**31),
            backend=self.backend or default_backend(),
            read_mode=self.read_mode,
            bugs=[],
            db=_label(self.db),
            results_dir=Path(self.results_dir),
            leave_db_running=self.leave_db_running,
            options=options,
            op_timeout=float(self.op_timeout),
            recovery_timeout=float(self.recovery_timeout),
            fault_targets=list(self.fault_targets),
            nemesis_schedule=self.nemesis_schedule,
            db_options={str(k): str(v) for k, v in self.db_options.items()},
        )
        check_db_flags(spec, None if isinstance(self.db, str) else self.db)
        return spec


def _label(x: Any) -> str:
    """How test.json names a part given as an object: its name, or module:qualname."""
    if isinstance(x, str):
        return x
    if isinstance(x, Workload):
        return x.name
    named = x if hasattr(x, "__qualname__") else type(x)  # a class or function, else an instance
    return f"{named.__module__}:{named.__qualname__}"


def _db(test: JepsenTest, spec: TestSpec) -> Any:
    db = test.db
    if isinstance(db, str):
        return load_db(db, spec)
    if isinstance(db, type) or (callable(db) and not callable(getattr(db, "setup", None))):
        return plugin_call("db", _label(db), f"{_label(db)}(spec)", db, spec)  # a class or a factory
    return db


def _workload(test: JepsenTest, spec: TestSpec) -> Workload:
    if isinstance(test.workload, str):
        w = build_workload(spec)  # also adds the referenced checkers and generator
    else:
        w = test.workload if isinstance(test.workload, Workload) else test.workload(spec)
        if not isinstance(w, Workload):
            raise BadInput(f"workload: {_label(test.workload)} gave {type(w).__name__}, not a Workload")
        w = dataclasses.replace(w, checkers=list(w.checkers))
        if spec.options.get("checkers") or spec.options.get("generator"):
            w.checkers += [load_checker(r, spec) for r in spec.options.get("checkers") or []]
            if spec.options.get("generator"):
                w.generator = load_generator(spec.options["generator"], spec)
    w.checkers = [*w.checkers, *(c for c in test.checkers if not isinstance(c, str))]
    if test.generator is not None and not isinstance(test.generator, str):
        try:
            w.generator = checked(f"generator: {_label(test.generator)}", test.generator)
        except TypeError as e:
            raise BadInput(f"generator: {e}") from None
    return w


def build(test: JepsenTest) -> assembly.Parts:
    """The live parts of a test: spec, db, workload, nemesis and its schedule, backend (put
    together as `jepsen-py run` puts them, jepsen_py.assembly). On a backend that builds its own
    world (the simulator) the DB and backend are that world's."""
    spec = test.spec()
    own_world = backend_kind(spec.backend).run_function() is not None
    workload = _workload(test, spec)
    db = None if own_world and isinstance(test.db, str) else _db(test, spec)
    return assembly.assemble(spec, db=db, workload=workload, nemesis=list(test.nemesis))


def run(test: JepsenTest) -> RunOutcome:
    """Runs the test once and returns its outcome (the verdict, results and run directory)."""
    parts = build(test)
    post = [step for step, on in ((render_pictures, test.pictures), (export_parquet, test.parquet)) if on]
    return assembly.run(parts, post_run=post, show_progress=test.show_progress,  # type: ignore[no-any-return]
                        fsync_history=False)


def failure_message(outcome: RunOutcome, *, limit: int = 10) -> str:
    """One paragraph for a failed test report (pytest, JUnit): the verdict per checker and the
    first anomalies with their explanations."""
    results = outcome.results or {}
    lines = [f"jepsen-py: valid={str(outcome.valid).lower()} ({outcome.invokes} ops, "
             f"{outcome.anomalies} anomalies); run in {outcome.run_dir}"]
    if outcome.error:
        lines.append(f"error: {outcome.error}")
    shown = 0
    for name, r in (results.get("checkers") or {}).items():
        if not isinstance(r, dict) or r.get("valid") is True:
            continue
        lines.append(f"{name}: valid={str(r.get('valid')).lower()}"
                     + (f" ({r['error']})" if r.get("error") else ""))
        failing = set(r.get("failing_kinds") or [])
        listed = [a for a in r.get("anomalies") or [] if isinstance(a, dict)]
        # Anomalies that fail the checker first, then those it only reports.
        for a in sorted(listed, key=lambda a: bool(failing) and a.get("kind") not in failing):
            if shown >= limit:
                break
            lines.append(f"  - {a.get('kind', 'anomaly')}: {a.get('explanation', '')}".rstrip())
            shown += 1
    if outcome.anomalies > shown:
        lines.append(f"  ... and {outcome.anomalies - shown} more in {outcome.run_dir}/results.json")
    return "\n".join(lines)


__all__ = ["JepsenTest", "RunOutcome", "build", "failure_message", "run"]
