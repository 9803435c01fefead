"""Recording a run's ops as a schedule, and replaying a schedule as generators.

Offsets count from the start of the main phase: the first moment any wrapped generator is asked for
an op (a shared `PhaseClock`), so a schedule does not depend on how long setup took. The recorder
wraps the generators a run already has; the replayers stand in for them:

  - `NemesisReplay`: the recorded nemesis ops at their offsets (on Docker too: the same faults at
    the same moments of the main phase), then nothing until the time limit; on a real backend each
    op keeps its recorded gap from the moment the previous one took effect, and the phase ends a
    margin after the last one did (`margin`, with `UntilPhaseEnd` around the clients);
  - `ClientReplay`: each worker's recorded client ops at their offsets (in simulation, where the
    same seed makes the same answers come back);
  - `FinalReplay`: the final phase's reads, in order, taken by whichever worker is free.

`for_real_backend` maps a schedule recorded in simulation onto a real backend, which reacts more
slowly: see its docstring.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from jepsen_py.checkers.crash import CrashChecker
from jepsen_py.explore.schedule import NEMESIS_THREAD, Event, Schedule
from jepsen_py.generator import AnyOf, Context, Generator, Pending, Sleep, Step, Template, lift
from jepsen_py.history import Op
from jepsen_py.nemeses.faults import own_duration


class PhaseClock:
    """When the main phase began, as the generators saw it (test seconds). `recorded_t0`: when the
    recorded phase began; a replay that begins at that very moment uses the events' exact times.
    `end`: the offset the phase ends at, once a real-backend replay knows it (NemesisReplay sets it
    when its last op has taken effect; UntilPhaseEnd stops the clients there)."""

    def __init__(self, recorded_t0: float | None = None) -> None:
        self.t0: float | None = None
        self.recorded_t0 = recorded_t0
        self.end: float | None = None

    def when(self, e: Event) -> float:
        """The test time `e` is due."""
        if e.t is not None and self.recorded_t0 is not None and self.t0 == self.recorded_t0:
            return e.t
        return self.at(e.at)

    def offset(self, now: float) -> float:
        if self.t0 is None:
            self.t0 = now
        return max(0.0, now - self.t0)

    def at(self, offset: float) -> float:
        assert self.t0 is not None, "the phase has not begun"
        return self.t0 + offset


@dataclass
class Tape:
    """Where a recorder writes. Not a list itself: generator copies (fresh()) copy lists, and every
    copy of a recorder must write to the same tape."""

    events: list[Event] = field(default_factory=list)


class Recorder(Generator):
    """Passes `gen`'s ops through and writes each, with its offset and thread, on the tape.

    With `rng`, the wrapped generator draws from that instead of the run's shared source. A replay
    does not draw at all, so a recorded run whose generators kept off the shared source leaves it
    in the same state as its replay does: everything else the seed decides comes out the same."""

    def __init__(self, gen: Generator, clock: PhaseClock, tape: Tape, *, timed: bool = True,
                 rng: random.Random | None = None) -> None:
        self.gen = gen
        self.clock = clock
        self.tape = tape
        self.timed = timed
        self.rng = rng
        self.waits: dict[object, list[float | None]] = {}

    def _ctx(self, ctx: Context) -> Context:
        if self.rng is None:
            return ctx
        return ctx.but(rng=self.rng)

    def op(self, ctx: Context) -> Step:
        at = self.clock.offset(ctx.time) if self.timed else 0.0
        step = self.gen.op(self._ctx(ctx))
        if isinstance(step, Pending):
            self.waits.setdefault(ctx.thread, []).append(step.until)
        elif isinstance(step, Template):
            thread = ctx.thread if isinstance(ctx.thread, int) else NEMESIS_THREAD
            waits = self.waits.pop(ctx.thread, None)
            self.tape.events.append(Event(at=at, thread=thread, f=step.f, key=_freeze(step.key),
                                          value=step.value, node=step.node,
                                          t=ctx.time if self.timed else None,
                                          w=tuple(waits) if waits and self.timed else None))
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(self._ctx(ctx), invoke, complete)


def _freeze(key: object) -> object:
    if isinstance(key, list):
        return tuple(_freeze(k) for k in key)
    return key


def _template(e: Event) -> Template:
    return Template(e.f, key=list(e.key) if isinstance(e.key, tuple) else e.key, value=e.value, node=e.node)


class NemesisReplay(Generator):
    """The schedule's nemesis ops at their offsets; exhausted at the time limit.

    With `margin` (a real backend): a fault op that took effect late (a docker exec takes a second,
    more on a loaded machine, where the simulator acts at once) delays the ops after it by as much,
    so a fault window lasts as long as recorded, counted from the moment the fault was in place; and
    the phase ends (clock.end) `margin` seconds after the last op took effect, or at the schedule's
    time limit if that is later, however late that was."""

    def __init__(self, schedule: Schedule, clock: PhaseClock, *, margin: float | None = None) -> None:
        self.events = list(schedule.nemesis_events)
        self.end = schedule.time_limit
        self.clock = clock
        self.next = 0
        self.margin = margin
        self.lag = 0.0  # seconds the remaining ops run behind their offsets (with a margin only)
        if margin is not None and not self.events:
            clock.end = self.end

    def op(self, ctx: Context) -> Step:
        now = self.clock.offset(ctx.time)
        if self.next < len(self.events):
            e = self.events[self.next]
            due = e.at + self.lag
            if now + 1e-9 < due:
                return Pending(self.clock.at(due))
            self.next += 1
            return _template(e)
        end = self.end if self.margin is None else self.clock.end
        if end is None:  # the last op has not taken effect yet: its completion wakes us
            return Pending(None)
        if now + 1e-9 < end:
            return Pending(self.clock.at(end))
        return None

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        if self.margin is None or self.next == 0:
            return
        done = self.clock.offset(ctx.time)
        # An op that runs for a set time by design (a clock strobe's duration) ran that long in the
        # recording too: only the time beyond it is lag, or every later op would land that much late.
        self.lag = max(self.lag, done - own_duration(complete) - self.events[self.next - 1].at)
        if self.next == len(self.events):
            self.clock.end = max(self.end, done + self.margin)


class UntilPhaseEnd(Generator):
    """`gen`'s ops until the phase end a real-backend NemesisReplay set on the shared clock: the
    clients keep going as long as the margin after the last fault needs, and no longer."""

    def __init__(self, gen: Generator, clock: PhaseClock) -> None:
        self.gen = gen
        self.clock = clock

    def op(self, ctx: Context) -> Step:
        now = self.clock.offset(ctx.time)
        end = self.clock.end
        if end is not None and now + 1e-9 >= end:
            return None
        step = self.gen.op(ctx)
        if end is not None and isinstance(step, Pending) and (step.until is None
                                                                 or step.until > self.clock.at(end)):
            return Pending(self.clock.at(end))
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(ctx, invoke, complete)


def watch_after_heal(gen: Generator | None, hold: float) -> Generator:
    """The final phase on a real backend: `gen`'s ops (the final reads; none when None), and the
    phase lasting at least `hold` seconds, so the run goes on being observed that long after the
    heal. The simulator stops a node caught in an endless loop (as a liveness probe would) and its
    log shows why; a real node in the same loop just stops answering, and only a node still silent
    some seconds after the heal is a crash the checker can tell from a slow restart. Without this
    the run ended about a second after the heal."""
    return AnyOf([Sleep(hold), lift(gen)])


def watch_after_heal_s() -> float:
    """How long a real-backend replay observes the cluster after the heal: a second more than the
    crash checker needs to call a node still silent then down for good."""
    return CrashChecker().down_at_end / 1e9 + 1.0


# What must follow the last fault op on a real backend: election timeouts (0.5-1 s each) and then
# several seconds of client ops, so an anomaly the fault caused still has time to be seen.
REAL_MARGIN_S = 10.0
# A real backend's fault ops take effect seconds after they are due (each pause, iptables cut and
# clock step is a docker exec: 0.5-1.5 s on an idle machine, 4.7 s measured under a load of 20),
# where the simulator acts at once. The main phase ends a margin after the last op took effect;
# this many seconds per op bounds how long that may take before the phase ends anyway.
REAL_FAULT_LAG_CAP_S = 15.0
# Clients per node on a real backend when the schedule has faults (the schedule's rate is kept, so
# more clients add no load, only concurrency). A client of a node cut off from the majority sits in
# a write that cannot commit until the op times out (5 s), and the cut-off node is asked nothing by
# it meanwhile. Measured: a zombie-leader replay whose one client of the isolated leader drew three
# writes in a row never read from it; a lease-no-drift-bound replay whose two clients of it both sat
# in writes for its whole 5 s fault window read from it only before the new leader had written.
REAL_CLIENTS_PER_NODE = 4


def for_real_backend(s: Schedule) -> Schedule:
    """The schedule as a real backend replays it, where a recorded simulation is not repeated op for
    op but reproduced in kind. With faults:

      - the main phase lasts until REAL_MARGIN_S after the last fault op took effect (a fault
        recorded 12 s into a 15 s run would otherwise be healed before the cluster reacted to it):
        NemesisReplay's margin ends it; the time limit here only caps it, at REAL_FAULT_LAG_CAP_S
        per fault op;
      - every node gets REAL_CLIENTS_PER_NODE clients, the workload's own at the schedule's rate:
        which node leads is decided by the real election, not by the recording, and a fault aimed
        at "the leader" must find clients asking that node, in whatever role it plays then;
      - the fault ops keep their offsets and their gaps (NemesisReplay's margin), their targets
        resolved at the moment they land, as in simulation ("leader" is the leader then).

    Without faults the anomaly came from the recorded client ops alone, and they are replayed as
    recorded (ClientReplay), by as many clients; a real worker runs late, so the phase may outlast
    the recorded time limit by REAL_MARGIN_S until the last of them has been handed out (it ends
    then: one more op might succeed where the recording's failed).
    """
    nemesis = s.nemesis_events
    if not nemesis:
        return s.with_events(s.events, time_limit=s.time_limit + REAL_MARGIN_S)
    end = max(s.time_limit, nemesis[-1].at + REAL_FAULT_LAG_CAP_S * len(nemesis) + REAL_MARGIN_S)
    return s.with_events(s.events, time_limit=end,
                         concurrency=max(s.concurrency, REAL_CLIENTS_PER_NODE * len(s.nodes)))


class ClientReplay(Generator):
    """Each client worker's recorded ops at their offsets (late when the worker was still busy).

    `early`: how late the interpreter's timers fire (the simulator's timer slack). A worker told to
    come back at the recorded time would be that much late; told to come back that much earlier, it
    wakes when the recording's worker did."""

    def __init__(self, events: Iterable[Event], clock: PhaseClock, end: float | None = None,
                 early: float = 0.0) -> None:
        self.early = early
        self.queues: dict[int, list[Event]] = {}
        for e in sorted(events, key=lambda e: e.at):
            if not e.is_nemesis:
                self.queues.setdefault(int(e.thread), []).append(e)
        self.pos: dict[int, int] = dict.fromkeys(self.queues, 0)
        self.asked: dict[int, int] = dict.fromkeys(self.queues, 0)
        self.clock = clock
        self.end = end

    def _left(self) -> bool:
        return any(self.pos[t] < len(q) for t, q in self.queues.items())

    def op(self, ctx: Context) -> Step:
        self.clock.offset(ctx.time)
        if not self._left():
            return None
        t = ctx.thread
        q = self.queues.get(t) if isinstance(t, int) else None
        if not q or self.pos[t] >= len(q):  # type: ignore[index]
            # Nothing more for this worker, ever: it waits for the others to finish (or the end of
            # the phase), woken by their completions, never in a tight loop of tiny waits.
            return Pending(None if self.end is None else self.clock.at(self.end))
        e = q[self.pos[t]]  # type: ignore[index]
        due = self.clock.when(e)
        if ctx.time < due - 5e-10:  # times are whole nanoseconds: half of one is float noise
            k = self.asked[t]  # type: ignore[index]
            if e.w and k < len(e.w) and due == e.t:  # the recording's own waits, in order
                self.asked[t] = k + 1  # type: ignore[index]
                return Pending(e.w[k])
            return Pending(max(ctx.time, due - self.early))
        self.pos[t] += 1  # type: ignore[index]
        self.asked[t] = 0  # type: ignore[index]
        return _template(e)


class FinalReplay(Generator):
    """The final phase's ops in their recorded order, each to the first worker that asks."""

    def __init__(self, events: Iterable[Event]) -> None:
        self.events = list(events)
        self.next = 0

    def op(self, ctx: Context) -> Step:
        if self.next >= len(self.events):
            return None
        e = self.events[self.next]
        self.next += 1
        return _template(e)
