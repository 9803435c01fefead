"""Backends: where a test's nodes come from (docker | ssh | local | none | sim | maelstrom), chosen
with --backend.

Each name stands for a `BackendKind`, what the rest of the code asks instead of comparing names:
whether the backend is simulated (virtual time in this process: a fault acts at once, a schedule
replays exactly), and, from hooks its own module defines (see BackendKind), for one that builds
its own DB, clients and nemesis (the simulator) the function that runs a spec on it, the checks of
the command line and the spec it refuses, and its in-process detection matrix; and what a search
(`jepsen-py explore`) asks of it: how late its timers fire and the spec option that redraws its
timings under the same schedule. Callers (run, db-check, test-all, explore) ask the chosen
backend's kind for these; the registry names each backend's module once, as a plugin is named,
and nothing else names the simulator's modules.

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
from jepsen_py.flags import parse_pairs
from jepsen_py.protocols import Backend, TestSpec
from jepsen_py.references import check_reference, current_dir_importable, import_module


@dataclass(frozen=True)
class BackendKind:
    """What the registry knows of a backend before it is built: where its class lives, whether it
    is simulated and whether it provisions nodes. Everything else a backend can do is its module's
    to say, by defining any of these (loaded when asked, like its `add_arguments`):

    - `run(spec, **kw)`: runs a spec itself, building its own DB, clients and nemesis (else the runner)
    - `check_args(args)`: refuses command-line options it cannot honour (else any backend option goes)
    - `check_spec(spec)`: refuses a spec its own `run` cannot honour, before anything is created
    - `matrix()`: the module that runs test-all's detection matrix in this process
    - `timer_slack_s()`: how late its timers fire, in seconds (an exact replay hands each op out
      that much early); absent: 0, a real backend's replay is not exact anyway
    - `timing_seed_key()`: the TestSpec.options key that draws its timings (delays, disks, entropy)
      anew under the same seed; absent: the backend's timings are the world's, never redrawn
    - `LOGGERS`: its own engine's logger names, where a run cut short by a search's budget says so
      (the search silences those lines: the cut is expected)
    - `given_nodes(options)`: the hosts its options name (SSH's --ssh-host), which are the nodes when
      no other list is given; absent: it makes whatever nodes a test asks for
    - `options_for(options, nodes)`: its options for a test on `nodes` only (a search's trial or a
      schedule on fewer nodes than the hosts named)
    - `workloads()`: the workloads its world serves, name -> factory(spec), in place of the
      built-ins (maelstrom: Maelstrom's echo, unique-ids, ...); absent: the built-ins
    - `FAULT_FAMILIES`: with `workloads()`, the fault families of our nemeses its world carries out
      (what `jepsen-py explore` may draw there); absent: none
    - `EXPLORE_OPTIONS`: its own options a search draws for each trial (TestSpec.options key -> the
      values it may try; a flag given on the command line fixes its one value), carried by the
      schedule a finding is written as, so a replay runs under the same ones
    - `OPTIONS`: for a backend of your own, the keys `--backend-option KEY=VALUE` may set, each with
      what it sets (ours have flags of their own instead: `add_arguments`)
    """

    name: str
    module: str
    cls: str
    #: nodes in this process in virtual time: faults act at once, schedules replay exactly
    simulated: bool = False
    #: provisions real nodes a DB is installed on (db-check tries its hooks there)
    provisions: bool = True
    #: how a user names its hosts, for the line that asks for them (a backend with `given_nodes`)
    hosts_flag: str = ""

    @property
    def faults_take_time(self) -> bool:
        """A fault lands over time (a partition's rules go in one by one), so a schedule's next
        fault is due an interval after the previous one took effect."""
        return not self.simulated

    @property
    def outside(self) -> bool:
        """A backend from outside the project, named as MODULE:CLASS."""
        return self.name not in KINDS

    def loaded(self) -> ModuleType:
        """Its module (one line for a `--backend MODULE:CLASS` whose module cannot be imported)."""
        if not self.outside:
            return importlib.import_module(self.module)
        current_dir_importable()
        return import_module(self.module, "--backend", self.name)  # type: ignore[no-any-return]

    def backend_class(self) -> Callable[[TestSpec], Backend]:
        """The class constructed as Cls(spec); BadInput (one line) when its module has none."""
        cls = getattr(self.loaded(), self.cls, None)
        if not callable(cls):
            raise BadInput(f"--backend: {self.name}: the module has no class {self.cls!r}")
        return cls  # type: ignore[no-any-return]

    def _hook(self, name: str) -> Any:
        return getattr(self.loaded(), name, None)

    def run_function(self) -> Callable[..., Any] | None:
        return self._hook("run")

    def check_args(self, args: argparse.Namespace) -> None:
        hook = self._hook("check_args")
        if hook is not None:
            hook(args)

    def check_spec(self, spec: TestSpec) -> None:
        """BadInput (one line) for what this backend's own run cannot honour; nothing otherwise."""
        hook = self._hook("check_spec")
        if hook is not None:
            hook(spec)

    def workloads(self) -> dict[str, Callable[[TestSpec], Any]] | None:
        """The workloads --workload names on this backend (its module's `workloads()`), or None for
        the built-ins."""
        hook = self._hook("workloads")
        return dict(hook()) if hook is not None else None

    def fault_families(self) -> tuple[str, ...]:
        """The fault families its own world carries out (its module's FAULT_FAMILIES), or ()."""
        return tuple(self._hook("FAULT_FAMILIES") or ())

    def explore_options(self) -> dict[str, tuple[Any, ...]]:
        """Its options a search draws per trial, each with the values it may try (EXPLORE_OPTIONS)."""
        return {str(k): tuple(v) for k, v in (self._hook("EXPLORE_OPTIONS") or {}).items()}

    def matrix_runner(self) -> ModuleType | None:
        """The module that runs test-all's matrix in this process on this backend, or None."""
        hook = self._hook("matrix")
        return hook() if hook is not None else None

    def timer_slack_s(self) -> float:
        hook = self._hook("timer_slack_s")
        return float(hook()) if hook is not None else 0.0

    def timing_seed_key(self) -> str | None:
        hook = self._hook("timing_seed_key")
        return str(hook()) if hook is not None else None

    @property
    def loggers(self) -> tuple[str, ...]:
        return tuple(self._hook("LOGGERS") or ())

    @property
    def names_hosts(self) -> bool:
        """Its nodes are the hosts its options name (ssh's --ssh-host): it defines `given_nodes`."""
        return self._hook("given_nodes") is not None

    def hosts(self, options: dict[str, Any]) -> list[str] | None:
        """The nodes `options` name for this backend (its hosts); None when it names none, or this
        backend makes its nodes itself."""
        hook = self._hook("given_nodes")
        return (list(hook(options)) or None) if hook is not None else None

    def option_keys(self) -> dict[str, str]:
        """The keys its `--backend-option`s may set, each with what it sets (its module's OPTIONS)."""
        keys = self._hook("OPTIONS") if self.outside else None
        if keys is None:
            return {}
        if not isinstance(keys, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in keys.items()):
            raise BadInput(f"--backend: {self.name}: OPTIONS must be a dict of option name -> what it sets")
        return keys

    def options_for(self, options: dict[str, Any], nodes: list[str]) -> dict[str, Any]:
        """`options` narrowed to a test on `nodes` (unchanged for a backend that names no hosts)."""
        hook = self._hook("options_for")
        return dict(hook(options, nodes)) if hook is not None else dict(options)


KINDS: dict[str, BackendKind] = {k.name: k for k in (
    BackendKind("docker", "jepsen_py.backends.docker", "DockerBackend"),
    BackendKind("ssh", "jepsen_py.backends.ssh", "SSHBackend", hosts_flag="--ssh-host NODE=HOST[:PORT]"),
    BackendKind("local", "jepsen_py.backends.local", "LocalBackend"),
    BackendKind("none", "jepsen_py.backends.none", "NoneBackend", provisions=False),
    BackendKind("sim", "jepsen_py.sim.backend", "SimBackend", simulated=True, provisions=False),
    BackendKind("maelstrom", "jepsen_py.maelstrom_world.backend", "MaelstromBackend", provisions=False),
)}

# name -> (module, class); each class is constructed as Cls(spec).
BACKENDS: dict[str, tuple[str, str]] = {k.name: (k.module, k.cls) for k in KINDS.values()}


def backend_kind(name: str) -> BackendKind:
    """The registry's entry for `name`, or for `MODULE:CLASS` a backend from outside the project
    (its module may define the same hooks as ours, and is not simulated); BadInput for an unknown
    name."""
    if name in KINDS:
        return KINDS[name]
    if ":" in name:
        module, _, cls = check_reference(name, "--backend").partition(":")
        if module and cls:
            return BackendKind(name, module, cls)
    raise BadInput(f"--backend: unknown backend {name!r} (choose from {', '.join(KINDS)}, or "
                   "MODULE:CLASS for one of your own)")


def is_simulated(name: str) -> bool:
    """True for the simulator's name; False for any other, known or not."""
    kind = KINDS.get(name)
    return kind is not None and kind.simulated


def simulator() -> str:
    """The simulated backend's name (explore and test-all's in-process matrix run there)."""
    return next(k.name for k in KINDS.values() if k.simulated)

_OPTION_DESTS = "_backend_option_dests"
_PAIRS = "backend_option"
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
    return backend_kind(name).backend_class()(spec)


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
    group.add_argument("--backend-option", action="append", default=None, metavar="KEY=VALUE",
                       dest=_PAIRS, help="an option of a backend of your own (--backend MODULE:CLASS), "
                                         "one of the keys its module's OPTIONS names; repeatable")
    parser.set_defaults(**{_OPTION_DESTS: [a.dest for a in actions],
                           _OPTION_FLAGS: {a.dest: (a.option_strings[0], a.default) for a in actions}})


def backend_options(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of the options `add_backend_arguments` added, and the `--backend-option`s
    of a backend of your own, each checked against the keys it declares (one BadInput line)."""
    options = {d: getattr(args, d) for d in getattr(args, _OPTION_DESTS, [])}
    pairs = parse_pairs(getattr(args, _PAIRS, None), "--backend-option")
    if not pairs:
        return options
    name = getattr(args, "backend", None) or "the default backend"
    kind = backend_kind(name) if name in KINDS or ":" in name else None
    if kind is None or not kind.outside:
        raise BadInput(f"--backend-option: for a backend of your own (--backend MODULE:CLASS); --backend "
                       f"{name} takes its own flags (jepsen-py run --help)")
    keys = kind.option_keys()
    for key in pairs:
        if key in options:
            raise BadInput(f"--backend-option: {key} is the name of one of our own backend options; "
                           f"{kind.name}'s OPTIONS must name it otherwise")
        if key not in keys:
            takes = f"it takes: {', '.join(sorted(keys))}" if keys else "its module declares no OPTIONS"
            raise BadInput(f"--backend-option: {kind.name} has no option {key!r} ({takes})")
    return {**options, **pairs}


def given_backend_options(args: argparse.Namespace) -> list[str]:
    """The backend options given a value other than their default, by their flag (for a backend
    that takes none of them to refuse)."""
    return list(given_backend_dests(args).values())


def given_backend_dests(args: argparse.Namespace) -> dict[str, str]:
    """The backend options given a value other than their default: dest (TestSpec.options key) ->
    flag."""
    flags: dict[str, tuple[str, Any]] = getattr(args, _OPTION_FLAGS, {})
    return {dest: flag for dest, (flag, default) in flags.items() if getattr(args, dest, default) != default}
