"""What every workload of ours shares: the run checkers, the linearizability hook, key rotation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jepsen_py.checkers.availability import AvailabilityChecker, Thresholds
from jepsen_py.checkers.crash import CrashChecker
from jepsen_py.checkers.linearizable import LinearizableChecker
from jepsen_py.checkers.scoped import Scoped
from jepsen_py.checkers.stats import StatsChecker

from jepsen_py.errors import BadInput
from jepsen_py.generator import Context
from jepsen_py.history import Op
from jepsen_py.protocols import Checker, Test, TestSpec

#: Copies of each partition a topic's create asks for: three, or one per node on a smaller cluster.
REPLICATION_FACTOR = 3


def replication_factor(node_count: int) -> int:
    """The replication factor a create asks for on a cluster of `node_count` nodes."""
    return min(REPLICATION_FACTOR, max(1, node_count))


def bool_option(options: dict[str, Any], name: str, default: bool) -> bool:
    """A yes/no workload option: JSON true/false (or the words, any case); anything else is bad
    input, since bool("False") would silently be true."""
    v = options.get(name, default)
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    raise BadInput(f"--workload-option {name}: expected true or false, got {v!r}")


class Linearizable:
    """The linearizability checker for one model, on the ops of `fs` only, imported when it runs
    (so a workload can be built, e.g. for --help or a dry run, without loading the search)."""

    def __init__(self, model: str, fs: frozenset[str], name: str = "linearizable",
                 init: Any = None) -> None:
        self.model = model
        self.fs = fs
        self.name = name
        self.init = init

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        inner = LinearizableChecker(self.model, self.init)
        return Scoped(inner, self.fs, name=self.name).check(test, history)


def run_checkers(spec: TestSpec) -> list[Checker]:
    """Availability (thresholds from the run's options), crash, stats: every workload has them."""
    return [
        AvailabilityChecker(Thresholds.from_options(spec.options)),
        CrashChecker(),
        StatsChecker(),
    ]


class KeyRotation:
    """Jepsen's independent keys, simply: `active` keys in use at once, each retired after
    `ops_per_key` ops and replaced by a fresh one, so every key's history stays short enough for the
    linearizability search however long the test runs. Deterministic under the context's rng."""

    def __init__(self, active: int, ops_per_key: int) -> None:
        self.active = max(1, active)
        self.ops_per_key = max(1, ops_per_key)
        self.next_id = 0
        self.live: list[list[int]] = []  # [key id, ops handed out]
        self.used: list[int] = []

    def pick(self, ctx: Context) -> int:
        while len(self.live) < self.active:
            self.live.append([self.next_id, 0])
            self.used.append(self.next_id)
            self.next_id += 1
        slot = self.live[ctx.rng.randrange(len(self.live))]
        slot[1] += 1
        if slot[1] >= self.ops_per_key:
            self.live.remove(slot)
        return slot[0]
