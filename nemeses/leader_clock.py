"""The leader frozen, cut off and its clock stepped back, then thawed: the fault that tests a read
lease's drift bound.

A lease read is safe only while the leader's sense of elapsed time stays within a bound of real
time: the followers wait an election timeout by *their* clocks before electing someone else, and the
leader must stop serving from its lease before that by *its* clock. Three things that happen to real
leaders take the bound away at once: a stall (a GC pause, a VM migration: SIGSTOP here), a network
cut (iptables), and a clock step backwards (an NTP correction: libfaketime); the cut and the step go
through the test's `Net` and `Clocks`, as the partition and clock nemeses' do. While the node is
frozen the nemesis isolates it and steps its clock back, so when it thaws it is alone, still
believes it leads, and its clock says almost no time has passed. A node that bounds its lease by
the clock gives the lease up when it sees time go backwards; one that counts its own ticks keeps
serving reads the majority's new leader has long since overwritten.

Ops: {"f": "start-leader-clock"} / {"f": "stop-leader-clock"}. The start's info value names the
node, how far its clock went back, and the grudge; the stop heals the partition and resets the clock.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from jepsen_py.nemeses.clock import ClockNemesis
from jepsen_py.nemeses.faults import START_LEADER_CLOCK as START
from jepsen_py.nemeses.faults import STOP_LEADER_CLOCK as STOP
from jepsen_py.nemeses.net import net_of
from jepsen_py.nemeses.partition import PartitionNemesis, isolate

from jepsen_py.history import INFO, Op
from jepsen_py.protocols import Test


def step_back_s(rng: random.Random, interval: float) -> float:
    """How far the clock goes back: longer than the fault lasts (the schedule's interval), so the
    thawed leader's timers stay stalled until the heal: 2-4 intervals, and at least 20 s."""
    return round(max(10.0, interval) * rng.uniform(2.0, 4.0), 3)


class LeaderClockNemesis:
    """Freeze the leader, isolate it, step its clock back, thaw it; heal undoes all three."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.partition = PartitionNemesis(["leader"])
        self.clock = ClockNemesis(targets=("leader",))
        self.frozen: set[str] = set()

    def fs(self) -> frozenset[str]:
        return frozenset({START, STOP})

    def needs(self) -> dict[str, str]:
        who = "--nemesis leader-clock"
        return {"primaries": who, "pause": who, "clock": who}

    def setup(self, test: Test) -> None:
        self.partition.setup(test)
        self.clock.setup(test)
        # Made ready now (on real machines the chain, so the cut later is one iptables call per
        # node): the leader is frozen meanwhile, and every moment it stays reachable lets a new
        # leader's first message into its socket buffer, which would depose it the instant it thaws.
        net_of(test).ready(test)

    def invoke(self, test: Test, op: Op) -> Op:
        if op.f == START:
            return replace(op, type=INFO, value=self._start(test, self.partition.await_leaders(test)))
        if op.f == STOP:
            self.heal(test)
            return replace(op, type=INFO, value={"healed": True})
        raise ValueError(f"leader-clock nemesis cannot do {op.f!r}")

    def _start(self, test: Test, leaders: Sequence[str]) -> dict[str, object]:
        """Hits one of `leaders` (those claiming leadership, awaited as the partition's leader shape
        awaits them), or a random node when none claimed it."""
        assert test.db is not None, "the leader-clock nemesis needs a DB that can pause its daemon"
        if self.partition.active or self.clock.offsets:
            self.heal(test)  # one fault at a time: a second start replaces the first
        node = test.rng.choice(sorted(leaders) if leaders else list(test.nodes))
        back = step_back_s(test.rng, self.interval)
        test.db.pause(test, node)
        self.frozen.add(node)
        try:
            # the cut first: the followers elect a new leader an election timeout after the freeze.
            # The frozen node's own rule goes in first: it sends nothing meanwhile, and what must not
            # reach it is that new leader's first message
            grudge = isolate(list(test.nodes), [node])
            self.partition.install(test, grudge, first=[node])
            self.clock.set_offsets(test, {node: -back})
        finally:
            self._thaw(test)
        return {"node": node, "clock-back-ms": round(back * 1000), "grudge": grudge}

    def _thaw(self, test: Test) -> None:
        for node in sorted(self.frozen):
            test.db.resume(test, node)  # type: ignore[union-attr]
            self.frozen.discard(node)

    def heal(self, test: Test) -> None:
        if test.db is not None:
            self._thaw(test)
        self.partition.heal(test)
        self.clock.reset(test)

    def teardown(self, test: Test) -> None:
        if test.db is not None:
            self._thaw(test)
        self.partition.teardown(test)
        self.clock.teardown(test)
