"""What pause and kill share: pick targets, fault them in parallel, undo every one at heal.

Both go through the DB (DB.pause / resume / kill / start), which knows its own daemon's pidfile,
so they work for any system under test. The target is the leader, one random node, or a random
minority; the info value names the nodes hit.

Pause: {"f": "pause", "value": target} / {"f": "resume"}.
Kill:  {"f": "kill", "value": target} / {"f": "start"}.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from jepsen_py.nemeses.targets import pick

from jepsen_py.history import INFO, Op
from jepsen_py.protocols import Test

PROCESS_TARGETS = ("leader", "one", "minority")


def _each(nodes: Sequence[str], fn: Callable[[str], object]) -> dict[str, str]:
    """Runs fn on every node in parallel; returns node -> "ok" or the error, so one stuck node
    does not hide what happened to the others."""
    def run(n: str) -> tuple[str, str]:
        try:
            fn(n)
            return n, "ok"
        except Exception as e:
            return n, f"{type(e).__name__}: {e}"

    with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        return dict(pool.map(run, nodes))


class ProcessNemesis:
    start_f: str
    stop_f: str
    state_key: str

    #: The DB capability this fault is done through, and the nemesis name that asks for it.
    capability: str
    nemesis_name: str

    def __init__(self, targets: Sequence[str] | None = None) -> None:
        """`targets` None: the defaults, where "leader" falls back to a random node when no one
        leads; targets the user chose that include "leader" need a DB with primaries."""
        self.chosen = targets is not None
        self.targets = tuple(targets) if targets else PROCESS_TARGETS
        self.hit: set[str] = set()

    def fs(self) -> frozenset[str]:
        return frozenset({self.start_f, self.stop_f})

    def needs(self) -> dict[str, str]:
        out = {self.capability: f"--nemesis {self.nemesis_name}"}
        if self.chosen and "leader" in self.targets:
            out["primaries"] = "--fault-targets leader"
        return out

    def setup(self, test: Test) -> None:
        pass

    def fault(self, test: Test, node: str) -> None:
        raise NotImplementedError

    def undo(self, test: Test, node: str) -> None:
        raise NotImplementedError

    def invoke(self, test: Test, op: Op) -> Op:
        assert test.db is not None, "process faults need a DB"
        if op.f == self.start_f:
            target = op.value if op.value in self.targets else test.rng.choice(self.targets)
            nodes = [n for n in pick(target, test, test.rng) if n not in self.hit]
            self.hit.update(nodes)
            test.state[self.state_key] = sorted(self.hit)
            results = _each(nodes, lambda n: self.fault(test, n))
            return replace(op, type=INFO, value={"target": target, "nodes": nodes, "results": results})
        if op.f == self.stop_f:
            nodes = sorted(self.hit)
            results = self._undo_all(test, nodes)
            return replace(op, type=INFO, value={"nodes": nodes, "results": results})
        raise ValueError(f"{type(self).__name__} cannot do {op.f!r}")

    def _undo_all(self, test: Test, nodes: Sequence[str]) -> dict[str, str]:
        results = _each(nodes, lambda n: self.undo(test, n))
        self.hit -= {n for n, r in results.items() if r == "ok"}
        test.state[self.state_key] = sorted(self.hit)
        return results

    def heal(self, test: Test) -> None:
        self._undo_all(test, sorted(self.hit))

    def teardown(self, test: Test) -> None:
        self.heal(test)
