"""A DB with the four required methods and nothing else: no capabilities, no declared workloads or
read modes (what explore must not assume of someone else's system)."""

from __future__ import annotations

import dataclasses

from jepsen_py.nemeses.faults import PAUSE, FaultKind

from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from jepsen_py.protocols import Client, Test, TestSpec


class PlainDB:
    def __init__(self, spec: TestSpec) -> None:
        self.spec = spec

    def setup(self, test: Test, node: str) -> None:
        return None

    def teardown(self, test: Test, node: str) -> None:
        return None

    def log_files(self, test: Test, node: str) -> list[str]:
        return []

    def client(self, workload: str) -> Client:
        raise BadInput(f"PlainDB serves no {workload!r}")


class OptionsDB(PlainDB):
    """Declares settings and the values explore may try."""

    @staticmethod
    def workloads() -> tuple[str, ...]:
        return ("register",)

    @staticmethod
    def db_options() -> dict[str, str]:
        return {"reads": "linearizable or serializable", "pre-vote": "true or false"}

    @staticmethod
    def db_option_values() -> dict[str, tuple[str, ...]]:
        return {"reads": ("linearizable", "serializable"), "pre-vote": ("true", "false")}


class Freezer:
    """An outside nemesis that declares one fault, in the built-ins' vocabulary."""

    def __init__(self, spec: TestSpec) -> None:
        self.spec = spec

    def fs(self) -> frozenset[str]:
        return frozenset({"start-freeze", "stop-freeze"})

    def faults(self) -> list[FaultKind]:
        return [FaultKind("freeze", frozenset({"start-freeze"}), frozenset({"stop-freeze"}),
                          frozenset({PAUSE}))]

    def needs(self) -> dict[str, str]:
        return {"pause": "--nemesis freezer"}

    def setup(self, test: Test) -> None:
        return None

    def invoke(self, test: Test, op: Op) -> Op:
        return dataclasses.replace(op, type="info")

    def heal(self, test: Test) -> None:
        return None

    def teardown(self, test: Test) -> None:
        return None
