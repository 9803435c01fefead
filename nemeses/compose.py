"""Composition: several nemeses behind one, and the schedule that drives them.

`ComposedNemesis` routes each op to the member whose fs() names it (Jepsen's `compose`), and heals
every member. `FaultSchedule` is the generator: every interval it picks one fault family at random
and toggles it, starting it when it is not in force and stopping it when it is, so families overlap
the way Jepsen's combined nemesis mixes them. A single family simply alternates start and stop.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jepsen_py.nemeses.faults import FaultKind, declared, own_duration

from jepsen_py.backends import KINDS
from jepsen_py.generator import Context, Generator, Pending, Step, Template
from jepsen_py.history import Op
from jepsen_py.protocols import Nemesis, Test, TestSpec


@dataclass(frozen=True)
class Family:
    """One kind of fault as the schedule sees it: how to start it, how to stop it."""

    name: str
    start: Callable[[random.Random], Template]
    stop: Callable[[random.Random], Template]


class FaultSchedule(Generator):
    """Every `interval` seconds (the first after one interval of calm), toggle one family.

    "random" (the default) picks the family at random, so faults overlap in every combination;
    "cycle" runs one fault at a time, the families taking turns (start A, stop A, start B, stop B,
    ...), for bugs that need one fault to follow another: a partition's aftermath, then a restart.

    With `hold_from_effect` (a real backend, where a docker exec takes a second or more on a loaded
    machine and a partition-leader op first waits for a leader) the next op is due a full interval
    after this one took effect, not after it was asked for: a fault holds its interval however slow
    the machine. The simulator acts at once, and its schedules keep their times.
    """

    MODES = ("random", "cycle")

    def __init__(self, families: Sequence[Family], interval: float, mode: str = "random", *,
                 hold_from_effect: bool = False) -> None:
        if interval <= 0:
            raise ValueError("the nemesis interval must be > 0")
        if mode not in self.MODES:
            raise ValueError(f"unknown schedule {mode!r} (choose from {', '.join(self.MODES)})")
        self.families = list(families)
        self.interval = interval
        self.mode = mode
        self.next_time: float | None = None
        self.active: set[str] = set()
        self.turn = 0
        self.hold_from_effect = hold_from_effect
        self.handed_out: str | None = None  # f of our op in flight: other schedules share the thread

    @classmethod
    def for_spec(cls, families: Sequence[Family], spec: TestSpec) -> FaultSchedule:
        """The run's schedule: its interval and mode, held from effect unless in the simulator."""
        kind = KINDS.get(spec.backend)
        return cls(families, spec.nemesis_interval, spec.nemesis_schedule,
                   hold_from_effect=kind is None or kind.faults_take_time)

    def op(self, ctx: Context) -> Step:
        if not self.families:
            return None
        if self.next_time is None:
            self.next_time = ctx.time + self.interval
        if ctx.time < self.next_time:
            return Pending(self.next_time)
        fam = self._pick(ctx.rng)
        if fam.name in self.active:
            self.active.discard(fam.name)
            tpl = fam.stop(ctx.rng)
        else:
            self.active.add(fam.name)
            tpl = fam.start(ctx.rng)
        self.next_time = max(self.next_time + self.interval, ctx.time)
        self.handed_out = tpl.f
        return tpl

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        if invoke.f != self.handed_out:
            return  # another schedule's op (an outside nemesis beside the built-ins)
        self.handed_out = None
        if self.hold_from_effect and self.next_time is not None:
            # a strobe runs its duration by design: it took effect when it began
            self.next_time = max(self.next_time, ctx.time - own_duration(complete) + self.interval)

    def _pick(self, rng: random.Random) -> Family:
        if self.mode == "random":
            return rng.choice(self.families)
        for fam in self.families:  # cycle: first stop whatever runs, then start the next in turn
            if fam.name in self.active:
                return fam
        fam = self.families[self.turn % len(self.families)]
        self.turn += 1
        return fam


class NoopNemesis:
    """`--nemesis none`: handles nothing, heals nothing."""

    def fs(self) -> frozenset[str]:
        return frozenset()

    def needs(self) -> dict[str, str]:
        return {}

    def setup(self, test: Test) -> None:
        pass

    def invoke(self, test: Test, op: Op) -> Op:
        raise ValueError(f"no nemesis handles {op.f!r}")

    def heal(self, test: Test) -> None:
        pass

    def teardown(self, test: Test) -> None:
        pass


class ComposedNemesis:
    """Many nemeses as one; op.f decides which member acts. Heal and teardown reach every member
    even when one of them fails (the first error is raised after all have run)."""

    def __init__(self, members: Sequence[Nemesis]) -> None:
        self.members = list(members)
        self._route: dict[str, Nemesis] = {}
        for m in self.members:
            for f in m.fs():
                if f in self._route:
                    raise ValueError(f"two nemeses both handle {f!r}")
                self._route[f] = m

    def fs(self) -> frozenset[str]:
        return frozenset(self._route)

    def needs(self) -> dict[str, str]:
        """Every member's needs (the first member to need a capability names it)."""
        out: dict[str, str] = {}
        for m in self.members:
            fn = getattr(m, "needs", None)
            for capability, who in (fn() if callable(fn) else {}).items():
                out.setdefault(capability, who)
        return out

    def faults(self) -> list[FaultKind]:
        """Every member's declared faults (each member's declaration checked on its own)."""
        return list(dict.fromkeys(k for m in self.members for k in declared(m).values()))

    def setup(self, test: Test) -> None:
        for m in self.members:
            m.setup(test)

    def invoke(self, test: Test, op: Op) -> Op:
        member = self._route.get(op.f)
        if member is None:
            raise ValueError(f"no nemesis handles {op.f!r} (handled: {sorted(self._route)})")
        return member.invoke(test, op)

    def _all(self, test: Test, method: str) -> None:
        first: BaseException | None = None
        for m in self.members:
            try:
                getattr(m, method)(test)
            except Exception as e:
                test.log.error("nemesis %s %s failed: %s", type(m).__name__, method, e)
                first = first or e
        if first is not None:
            raise first

    def heal(self, test: Test) -> None:
        self._all(test, "heal")

    def teardown(self, test: Test) -> None:
        self._all(test, "teardown")
