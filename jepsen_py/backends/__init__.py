"""Backends: where a test's nodes come from (docker | ssh | local | none | sim), chosen with --backend.

Each name stands for a `BackendKind`, what the rest of the code asks instead of comparing names:
whether the backend is simulated (virtual time in this process: a fault acts at once, a schedule
replays exactly), and, for one that builds its own DB, clients and nemesis (the simulator), the
function that runs a spec on it, the checks of the command line and the spec it refuses, and its
in-process detection matrix; and what a search (`jepsen-py explore`) asks of it: how late its
timers fire and the spec option that redraws its timings under the same schedule. Callers (run,
db-check, test-all, explore) ask the chosen backend's kind for these; only this module names the
simulator's modules.

Implementations load lazily so `jepsen-py --help` and tests of other parts never import the docker
SDK or paramiko. Backend-specific command-line options land in `TestSpec.options` (keyed by their
argparse dest): `add_backend_arguments` puts them on the `run` parser, `backend_options` collects
them after parsing.
"""

from __future__ import annotations

import argparse
import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from jepsen_py.errors import BadInput
from jepsen_py.protocols import Backend, TestSpec


@dataclass(frozen=True)
class BackendKind:
    """What the registry knows of a backend before it is built: where its class lives and what
    it can do. `runs`, `checks_args` and `checks_spec` are "module:function" references and
    `matrix` a module name, loaded when asked."""

    name: str
    module: str
    cls: str
    #: nodes in this process in virtual time: faults act at once, schedules replay exactly
    simulated: bool = False
    #: runs a spec on this backend when it builds its own DB, clients and nemesis (else the runner)
    runs: str | None = None
    #: refuses command-line options this backend cannot honour (else any backend option goes)
    checks_args: str | None = None
    #: provisions real nodes a DB is installed on (db-check tries its hooks there)
    provisions: bool = True
    #: refuses a spec this backend's own run function cannot honour, before anything is created
    checks_spec: str | None = None
    #: runs test-all's detection matrix in this process (sweep_cells, runnable, plan, run_matrix)
    matrix: str | None = None
    #: "module:attr[.attr]" of how late its timers fire, in seconds (an exact replay hands each op
    #: out that much early); None: 0, a real backend's replay is not exact anyway
    timer_slack: str | None = None
    #: "module:attr" of the TestSpec.options key that draws its timings (delays, disks, entropy)
    #: anew under the same seed; None: the backend's timings are the world's, never redrawn
    timing_seed: str | None = None
    #: loggers of its own engine, where a run cut short by a search's budget says so (the search
    #: silences those lines: the cut is expected)
    loggers: tuple[str, ...] = ()
    #: "module:function" (options) -> node names: the hosts its options name (SSH's --ssh-host), which
    #: are the nodes when no other list is given; None: it makes whatever nodes a test asks for
    given_nodes: str | None = None
    #: "module:function" (options, nodes) -> options: its options for a test on `nodes` only (a
    #: search's trial or a schedule on fewer nodes than the hosts named)
    narrows_options: str | None = None
    #: how a user names those hosts, for the line that asks for them
    hosts_flag: str = ""

    @property
    def faults_take_time(self) -> bool:
        """A fault lands over time (a partition's rules go in one by one), so a schedule's next
        fault is due an interval after the previous one took effect."""
        return not self.simulated

    def run_function(self) -> Callable[..., Any] | None:
        return _load(self.runs) if self.runs else None

    def check_args(self, args: argparse.Namespace) -> None:
        if self.checks_args:
            _load(self.checks_args)(args)

    def check_spec(self, spec: TestSpec) -> None:
        """BadInput (one line) for what this backend's own run cannot honour; nothing otherwise."""
        if self.checks_spec:
            _load(self.checks_spec)(spec)

    def matrix_runner(self) -> ModuleType | None:
        """The module that runs test-all's matrix in this process on this backend, or None."""
        return importlib.import_module(self.matrix) if self.matrix else None

    def timer_slack_s(self) -> float:
        return float(_load(self.timer_slack)) if self.timer_slack else 0.0

    def timing_seed_key(self) -> str | None:
        return str(_load(self.timing_seed)) if self.timing_seed else None

    def hosts(self, options: dict[str, Any]) -> list[str] | None:
        """The nodes `options` name for this backend (its hosts); None when it names none, or this
        backend makes its nodes itself."""
        if not self.given_nodes:
            return None
        return list(_load(self.given_nodes)(options)) or None

    def options_for(self, options: dict[str, Any], nodes: list[str]) -> dict[str, Any]:
        """`options` narrowed to a test on `nodes` (unchanged for a backend that names no hosts)."""
        return dict(_load(self.narrows_options)(options, nodes)) if self.narrows_options else dict(options)


def _load(ref: str) -> Any:
    module_name, attr = ref.split(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


KINDS: dict[str, BackendKind] = {k.name: k for k in (
    BackendKind("docker", "jepsen_py.backends.docker", "DockerBackend"),
    BackendKind("ssh", "jepsen_py.backends.ssh", "SSHBackend",
                given_nodes="jepsen_py.backends.ssh:given_nodes",
                narrows_options="jepsen_py.backends.ssh:options_for",
                hosts_flag="--ssh-host NODE=HOST[:PORT]"),
    BackendKind("local", "jepsen_py.backends.local", "LocalBackend"),
    BackendKind("none", "jepsen_py.backends.none", "NoneBackend", provisions=False),
    BackendKind("sim", "jepsen_py.sim.backend", "SimBackend", simulated=True, provisions=False,
                runs="jepsen_py.sim.run:run_sim", checks_args="jepsen_py.sim.backend:check_args",
                checks_spec="jepsen_py.sim.run:check_spec", matrix="jepsen_py.sim.matrix",
                timer_slack="jepsen_py.sim.loop:Scheduler.TIMER_SLACK_S",
                timing_seed="jepsen_py.sim.run:TIMING_SEED",
                loggers=("jepsen_py.sim.interpreter", "jepsen_py.sim.run")),
)}

# name -> (module, class); each class is constructed as Cls(spec).
BACKENDS: dict[str, tuple[str, str]] = {k.name: (k.module, k.cls) for k in KINDS.values()}


def backend_kind(name: str) -> BackendKind:
    """The registry's entry for `name`; BadInput for an unknown name."""
    if name not in KINDS:
        raise BadInput(f"--backend: unknown backend {name!r} (choose from {', '.join(KINDS)})")
    return KINDS[name]


def is_simulated(name: str) -> bool:
    """True for the simulator's name; False for any other, known or not."""
    kind = KINDS.get(name)
    return kind is not None and kind.simulated


def simulator() -> str:
    """The simulated backend's name (explore and test-all's in-process matrix run there)."""
    return next(k.name for k in KINDS.values() if k.simulated)

_OPTION_DESTS = "_backend_option_dests"
_OPTION_FLAGS = "_backend_option_flags"

log = logging.getLogger(__name__)


def docker_reachable(timeout: float = 3.0) -> bool:
    """True when a Docker engine answers a ping (the docker SDK's own environment rules)."""
    try:
        import docker

        client = docker.from_env(timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def default_backend() -> str:
    """The backend when --backend is not given: docker where an engine answers, else nodes as
    local processes (the embedded default). Said in the log, never silent."""
    if docker_reachable():
        return "docker"
    log.warning("no Docker engine answers: running the nodes as local processes (--backend local)")
    return "local"


def get_backend(name: str, spec: TestSpec) -> Backend:
    """The backend called `name`, constructed for `spec`; BadInput for an unknown name."""
    kind = backend_kind(name)
    module_name, cls_name = kind.module, kind.cls
    return getattr(importlib.import_module(module_name), cls_name)(spec)


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds every backend's own options to `parser` (the `run` command), in one argument group.

    A backend module may define `add_arguments(group)`; the values end up in TestSpec.options
    under each argument's dest (e.g. --image-base -> options["image_base"]).
    """
    group = parser.add_argument_group("backend options")
    before = len(group._group_actions)
    for module_name, _ in BACKENDS.values():
        module = importlib.import_module(module_name)
        hook = getattr(module, "add_arguments", None)
        if callable(hook):
            hook(group)
    actions = group._group_actions[before:]
    parser.set_defaults(**{_OPTION_DESTS: [a.dest for a in actions],
                           _OPTION_FLAGS: {a.dest: (a.option_strings[0], a.default) for a in actions}})


def backend_options(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of the options `add_backend_arguments` added."""
    return {d: getattr(args, d) for d in getattr(args, _OPTION_DESTS, [])}


def given_backend_options(args: argparse.Namespace) -> list[str]:
    """The backend options given a value other than their default, by their flag (for a backend
    that takes none of them to refuse)."""
    flags: dict[str, tuple[str, Any]] = getattr(args, _OPTION_FLAGS, {})
    return [flag for dest, (flag, default) in flags.items() if getattr(args, dest, default) != default]
