"""`--backend sim` as the backend registry sees it: where the simulated nodes are and how to reach
them. Nothing is provisioned: the sim kind's run function (jepsen_py.sim.run.run_sim) builds the
simulated cluster itself and runs it through the runner on the simulator's engine."""

from __future__ import annotations

import argparse

from jepsen_py.backends import given_backend_options
from jepsen_py.backends.none import NoneBackend
from jepsen_py.errors import BadInput


def check_args(args: argparse.Namespace) -> None:
    """One line (exit 254) for an option of another backend (--ssh-host, --image-base, ...): the
    simulator provisions nothing, so it could only ignore it."""
    given = given_backend_options(args)
    if given:
        raise BadInput(f"{given[0]}: not an option of the simulator (--backend sim provisions nothing)")


class SimBackend(NoneBackend):
    """Nodes are simulated hosts named as the nodes, inside the controller's own process: like
    `none`, nothing to provision and names pass through as addresses."""

    name = "sim"
