"""`--backend sim` as the backend registry sees it: where the simulated nodes are and how to reach
them, and the hooks the registry asks a backend's module for (jepsen_py.backends.BackendKind).
Nothing is provisioned: `run` (jepsen_py.sim.run.run_sim) builds the simulated cluster itself and
runs it through the runner on the simulator's engine. The simulator's modules load only when a
hook is called, so the command line's parser (which imports every backend module) stays quick."""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Any

from jepsen_py.backends import given_backend_options
from jepsen_py.backends.none import NoneBackend
from jepsen_py.errors import BadInput
from jepsen_py.protocols import TestSpec


def check_args(args: argparse.Namespace) -> None:
    """One line (exit 254) for an option of another backend (--ssh-host, --image-base, ...): the
    simulator provisions nothing, so it could only ignore it."""
    given = given_backend_options(args)
    if given:
        raise BadInput(f"{given[0]}: not an option of the simulator (--backend sim provisions nothing)")


#: the simulator's own loggers: a run cut short by a search's budget says so there
LOGGERS = ("jepsen_py.sim.interpreter", "jepsen_py.sim.run")


def run(spec: TestSpec, **kw: Any) -> Any:
    """Runs `spec` in the simulator (jepsen_py.sim.run.run_sim's keywords)."""
    from jepsen_py.sim.run import run_sim

    return run_sim(spec, **kw)


def check_spec(spec: TestSpec) -> None:
    """One line (exit 254) for what the simulator cannot honour, before anything is created."""
    from jepsen_py.sim.run import check_spec as check

    check(spec)


def matrix() -> ModuleType:
    """test-all's detection matrix, run in this process."""
    from jepsen_py.sim import matrix as module

    return module


def timer_slack_s() -> float:
    """How late the simulator's timers fire (an exact replay hands each op out that much early)."""
    from jepsen_py.sim.loop import Scheduler

    return Scheduler.TIMER_SLACK_S


def timing_seed_key() -> str:
    """The spec option that draws the simulated cluster's timings anew under the same seed."""
    from jepsen_py.sim.run import TIMING_SEED

    return TIMING_SEED


class SimBackend(NoneBackend):
    """Nodes are simulated hosts named as the nodes, inside the controller's own process: like
    `none`, nothing to provision and names pass through as addresses."""

    name = "sim"
