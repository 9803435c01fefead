"""Network partitions by grudge (Jepsen's jepsen.nemesis): who drops packets from whom.

A grudge maps each node to the nodes it refuses to hear from; every grudge made here is symmetric.
Shapes, after Jepsen's:
  leader     the current leader alone on one side (the zombie-leader scenario)
  random     the nodes shuffled and cut into two halves
  one        one random node isolated
  ring       majorities ring: every node sees a majority, and no two see the same one
  bridge     two halves that can only reach each other through one bridge node

Ops: {"f": "start-partition", "value": shape} and {"f": "stop-partition"}. The info completion's
value says which shape, the sides, and the exact grudge installed.

The leader shape waits, bounded, for a node to claim leadership: right after a heal or a restart a
cluster is leaderless for an election or two, and isolating a random node then tests nothing the
shape is for (no zombie, no unreplicated leader tail). If none claims it in time, a random node is
isolated and the value records `"leader": null`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Sequence
from dataclasses import replace

from jepsen_py.nemeses.faults import START_PARTITION, STOP_PARTITION
from jepsen_py.nemeses.net import net_of
from jepsen_py.nemeses.targets import majority, primaries

from jepsen_py.history import INFO, Op
from jepsen_py.protocols import Test, has_capability

SHAPES = ("leader", "random", "one", "ring", "bridge")
Grudge = dict[str, list[str]]
#: How long the leader shape waits for a node to claim leadership: a few elections' worth.
LEADER_WAIT_S = 10.0
#: How often it asks meanwhile.
LEADER_POLL_S = 0.1


def complete_grudge(sides: Sequence[Sequence[str]]) -> Grudge:
    """Nodes in different sides drop each other; a node in several sides (a bridge) drops no one
    it shares a side with."""
    nodes = sorted({n for side in sides for n in side})
    grudge: Grudge = {}
    for n in nodes:
        mine = [set(s) for s in sides if n in s]
        visible = set().union(*mine)
        grudge[n] = sorted(m for m in nodes if m not in visible)
    return {n: g for n, g in grudge.items() if g}


def isolate(nodes: Sequence[str], alone: Sequence[str]) -> Grudge:
    rest = [n for n in nodes if n not in alone]
    return complete_grudge([list(alone), rest])


def larger_side(grudge: Grudge) -> list[str]:
    """The nodes that cut fewer peers than some other node does: in a split, the larger side."""
    most = max(map(len, grudge.values()), default=0)
    return [n for n, peers in grudge.items() if len(peers) < most]


def random_halves(nodes: Sequence[str], rng: random.Random) -> list[list[str]]:
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    cut = len(shuffled) // 2
    return [sorted(shuffled[:cut]), sorted(shuffled[cut:])]


def majorities_ring(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Nodes placed on a shuffled ring; each sees the window of radius r around itself, a majority.

    Visibility by window is symmetric, and windows differ as long as 2r+1 < n, so each node sees a
    different majority. Needs at least 4 nodes (with 3, any majority window is the whole ring).
    """
    n = len(nodes)
    r = majority(n) // 2
    if 2 * r + 1 >= n:
        raise ValueError(f"a majorities ring needs at least 4 nodes, got {n}")
    ring = list(nodes)
    rng.shuffle(ring)
    grudge: Grudge = {}
    for i, node in enumerate(ring):
        visible = {ring[(i + d) % n] for d in range(-r, r + 1)}
        dropped = sorted(m for m in ring if m not in visible)
        if dropped:
            grudge[node] = dropped
    return grudge


def bridge(nodes: Sequence[str], rng: random.Random) -> tuple[list[list[str]], Grudge]:
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    half = len(shuffled) // 2
    a, mid, b = shuffled[:half], shuffled[half], shuffled[half + 1:]
    sides = [sorted([*a, mid]), sorted([mid, *b])]
    return sides, complete_grudge(sides)


class PartitionNemesis:
    """Installs grudges through the test's `Net` (iptables inside the nodes on real machines, cut
    links in the simulator); heal heals every link."""

    def __init__(self, shapes: Sequence[str] = SHAPES) -> None:
        unknown = [s for s in shapes if s not in SHAPES]
        if unknown:
            raise ValueError(f"unknown partition shapes {unknown}")
        self.shapes = list(shapes)
        self.active: Grudge = {}

    def fs(self) -> frozenset[str]:
        return frozenset({START_PARTITION, STOP_PARTITION})

    def needs(self) -> dict[str, str]:
        """Only the leader shape alone needs leaders: mixed with others, a leaderless DB's "leader"
        partition isolates a random node (the value recorded says so)."""
        return {"primaries": "--nemesis partition-leader"} if self.shapes == ["leader"] else {}

    def grudge_for(self, shape: str, test: Test, rng: random.Random,
                   leaders: Sequence[str] = ()) -> tuple[Grudge, dict[str, object]]:
        """The grudge of `shape`; `leaders` are the nodes that claim leadership (the leader shape)."""
        nodes = list(test.nodes)
        detail: dict[str, object] = {}
        if shape == "leader":
            if leaders:
                alone = [rng.choice(sorted(leaders))]
                detail["leader"] = alone[0]
            else:
                alone = [rng.choice(nodes)]
                detail["leader"] = None  # nobody claimed leadership: a random node instead
            detail["sides"] = [alone, sorted(n for n in nodes if n not in alone)]
            return isolate(nodes, alone), detail
        if shape == "one":
            alone = [rng.choice(nodes)]
            detail["sides"] = [alone, sorted(n for n in nodes if n not in alone)]
            return isolate(nodes, alone), detail
        if shape == "random":
            sides = random_halves(nodes, rng)
            detail["sides"] = sides
            return complete_grudge(sides), detail
        if shape == "ring":
            return majorities_ring(nodes, rng), detail
        if shape == "bridge":
            sides, grudge = bridge(nodes, rng)
            detail["sides"] = sides
            detail["bridge"] = next(n for n in sides[0] if n in sides[1])
            return grudge, detail
        raise ValueError(f"unknown partition shape {shape!r}")

    def invoke(self, test: Test, op: Op) -> Op:
        if op.f == START_PARTITION:
            shape = self.shape_for(test, op)
            return self.start(test, op, shape, self.await_leaders(test) if shape == "leader" else [])
        if op.f == STOP_PARTITION:
            healed = self._heal_all(test)
            return replace(op, type=INFO, value={"healed": healed})
        raise ValueError(f"partition nemesis cannot do {op.f!r}")

    def shape_for(self, test: Test, op: Op) -> str:
        shape = op.value if op.value in self.shapes else test.rng.choice(self.shapes)
        return "one" if shape == "ring" and len(test.nodes) < 4 else shape

    def await_leaders(self, test: Test) -> list[str]:
        """The nodes claiming leadership, asked every LEADER_POLL_S until one does or LEADER_WAIT_S
        pass; at once [] for a DB that cannot say."""
        if not has_capability(test.db, "primaries"):
            return []
        deadline = time.monotonic() + LEADER_WAIT_S
        while not (leaders := primaries(test)) and time.monotonic() < deadline:
            time.sleep(LEADER_POLL_S)
        return leaders

    def start(self, test: Test, op: Op, shape: str, leaders: Sequence[str]) -> Op:
        """Replaces any partition in force with one of `shape`; the info op says what was cut."""
        grudge, detail = self.grudge_for(shape, test, test.rng, leaders)
        if self.active:
            self._heal_all(test)
        self.install(test, grudge, first=larger_side(grudge))
        return replace(op, type=INFO, value={"shape": shape, "grudge": grudge, **detail})

    def install(self, test: Test, grudge: Grudge, first: Collection[str] = ()) -> None:
        """Makes every node in the grudge drop packets from the peers it names, the nodes in `first`
        before the rest (the test's `Net`, nemeses.net.Iptables.drop_all on real machines, says why
        the order matters there)."""
        self.active = {k: list(v) for k, v in grudge.items()}
        test.state["partition"] = self.active
        net_of(test).drop_all(test, grudge, first)

    def _heal_all(self, test: Test) -> dict[str, int]:
        """Heals every link (not only the last grudge's: a crash between install and bookkeeping
        must not leave a cut behind); returns the rules dropped per node."""
        healed = {n: len(g) for n, g in self.active.items()}
        net_of(test).heal(test)
        self.active = {}
        test.state.pop("partition", None)
        return healed

    def setup(self, test: Test) -> None:
        net_of(test).remove(test)  # whatever an earlier run left on reused nodes
        self.active = {}

    def heal(self, test: Test) -> None:
        self._heal_all(test)

    def teardown(self, test: Test) -> None:
        """Leaves the nodes' network as it was (on real machines the chain and its jump go too)."""
        net_of(test).remove(test)
        self.active = {}
        test.state.pop("partition", None)
