"""A nemesis from outside the project (--nemesis MODULE:CLASS), which the simulator must refuse."""

from __future__ import annotations

from dataclasses import replace

from jepsen_py.generator import Generator, lift
from jepsen_py.history import INFO, Op
from jepsen_py.protocols import Test, TestSpec


class Zap:
    """Does nothing but answer; enough to be a nemesis the runner accepts."""

    def __init__(self, spec: TestSpec) -> None:
        self.spec = spec

    def fs(self) -> frozenset[str]:
        return frozenset({"zap"})

    def setup(self, test: Test) -> None:
        pass

    def invoke(self, test: Test, op: Op) -> Op:
        return replace(op, type=INFO)

    def heal(self, test: Test) -> None:
        pass

    def teardown(self, test: Test) -> None:
        pass

    def generator(self, spec: TestSpec) -> Generator:
        return lift({"f": "zap"})
