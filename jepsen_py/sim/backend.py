"""`--backend sim` as the backend registry sees it: where the simulated nodes are and how to reach
them. Nothing is provisioned: the run driver (jepsen_py.sim.run) builds the simulated cluster itself,
so `jepsen-py run` hands a sim spec to it instead of to the runner."""

from __future__ import annotations

import argparse

from jepsen_py.backends import given_backend_options
from jepsen_py.errors import BadInput
from jepsen_py.protocols import Remote, Test, TestSpec


def check_args(args: argparse.Namespace) -> None:
    """One line (exit 254) for an option of another backend (--ssh-host, --image-base, ...): the
    simulator provisions nothing, so it could only ignore it."""
    given = given_backend_options(args)
    if given:
        raise BadInput(f"{given[0]}: not an option of the simulator (--backend sim provisions nothing)")


class SimBackend:
    """Nodes are simulated hosts named as the nodes, inside the controller's own process."""

    name = "sim"

    def __init__(self, spec: TestSpec) -> None:
        self.spec = spec

    def setup(self, test: Test) -> dict[str, Remote]:
        return {}

    def peer_address(self, node: str) -> str:
        return node

    def client_endpoint(self, node: str, port: int) -> tuple[str, int]:
        return node, port

    def teardown(self, test: Test) -> None:
        pass
