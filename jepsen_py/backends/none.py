"""The `none` backend (Jepsen's dummy remote): no node is provisioned and there is nothing to run
commands on. For systems under test that live in-process or manage their own nodes: the DB still
gets setup/teardown per node name, and its clients find the nodes by name themselves."""

from __future__ import annotations

from jepsen_py.protocols import Remote, Test, TestSpec


class NoneBackend:
    """Provisions nothing; node names are passed through unchanged as addresses."""

    name = "none"

    def __init__(self, spec: TestSpec) -> None:
        self.spec = spec

    def setup(self, test: Test) -> dict[str, Remote]:
        return {}

    def peer_address(self, node: str) -> str:
        return node

    def client_endpoint(self, node: str, port: int) -> tuple[str, int]:
        return (node, port)

    def teardown(self, test: Test) -> None:
        return None
