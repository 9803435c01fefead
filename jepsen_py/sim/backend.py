"""`--backend sim` as the backend registry sees it: where the simulated nodes are and how to reach
them. Nothing is provisioned: the run driver (jepsen_py.sim.run) builds the simulated cluster itself,
so `jepsen-py run` hands a sim spec to it instead of to the runner."""

from __future__ import annotations

from jepsen_py.protocols import Remote, Test, TestSpec


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
