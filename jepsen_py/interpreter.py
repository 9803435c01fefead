"""The interpreter: turns a generator into a history by driving client workers and the nemesis.

It is Jepsen's interpreter. One thread, the interpreter's own loop, owns the generator: it asks
it for an op on behalf of a free worker, records the invocation, hands the op to that worker over
the worker's queue, and takes completions back from one completion queue, recording each and
telling the generator (`update`). Workers never touch the generator, so a
generator needs no locking however many workers there are. Concurrency is real: a thread per
client worker, each with its own clients (one per node it used), and the nemesis's worker beside
them; they only perform ops. The loop also watches the op timeout: an op still running after it is
recorded info (error "timeout", by the controller) and its late answer dropped; a nemesis op gets
NEMESIS_JOIN_S. A worker whose op completes info (or raises, or overruns) takes a fresh process id,
process + concurrency, and, as in Jepsen, a new process gets new clients unless its clients say they
are reusable (`client_reusable`): a connection left holding an unanswered request must not hold the
worker's later ops behind it.

Clients, the nemesis and generators are often someone else's code, and nothing they do may hang the
run. A phase ends at its time limit even when every worker is stuck in its op (the generator is then
never asked, so its own time limit could not end it); ops already recorded info by timeout are not
waited for, and their threads, which Python cannot stop, are left behind as daemon threads, named in
one log line. Whatever a client or nemesis raises, KeyboardInterrupt and SystemExit included (a
signal reaches only the main thread, so on a worker's thread they are the plugin's own), is its
op's error. A generator that does not return (it blocks, or loops forever) is noticed by the caller's
thread: past max(op timeout, JOIN_GRACE_S) in one call, its ops in flight are recorded info, the
loop's thread is abandoned and may record nothing more (it is also told to stop, which ends a loop
without a yield in it rather than leave it taking a core until the process ends), and the run stops,
naming the plugin whose generator it was (BadInput) or, for our own, as a framework failure.

Time and tasks come from two injected objects, `Clock` and `Scheduler` (the real engine's,
jepsen_py.engine.RealEngine): the real ones read the monotonic clock and start threads; a test may
supply its own.

What the loop decides (which free worker the generator is asked for, what is recorded, when an op
is timed out or abandoned) is `InterpreterCore`, which does no I/O of its own, so that one
interpreter owns the generator in every world: `Interpreter` drives it here with threads and
queues, the simulator (jepsen_py.sim.interpreter) from one coroutine in virtual time.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import logging
import os
import queue
import random
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, Protocol

from jepsen_py.errors import BadInput, FrameworkFailure
from jepsen_py.generator import Checked, Context, Generator, Pending, Template, Thread, TimeLimit
from jepsen_py.history import COMPLETIONS, INFO, INVOKE, NEMESIS, OK, Op
from jepsen_py.nemeses import faults
from jepsen_py.plugins import HookExited, HookTimedOut, call_bounded, said
from jepsen_py.protocols import Client, Nemesis, Test
from jepsen_py.workers import GeneratorPhase, Worker, WorkerPool, copy_op

log = logging.getLogger(__name__)

POLL_S = 0.05  # longest the loop waits before asking a waiting generator again
OPEN_BACKOFF_S = 0.05  # a node that refuses connections is not asked again at once
#: What ops in flight get beyond their own bound at a phase's end or after a Ctrl-C, what idle
#: workers get to end, what closing the clients gets beyond the op timeout; and, at the least, what
#: one call of a generator gets (it is the op timeout when longer: the loop cannot time ops out
#: while in one).
JOIN_GRACE_S = 5.0
#: How long a nemesis op may take before it is recorded info by the controller (a restart or a clock
#: reset takes a while; heal must not race one), and what the nemesis's setup, heal and teardown get.
NEMESIS_JOIN_S = 120.0
#: Where the standard library lives: a stuck generator is named by the first frame outside it.
_STDLIB = os.path.dirname(threading.__file__)


class _Cut(BaseException):
    """The loop's thread was abandoned by the caller (its generator did not return): it ends at
    the next record it tries, recording nothing."""


class Clock(Protocol):
    """The test's time: history timestamps, generator time, op deadlines and waits."""

    def ns(self) -> int:
        """Nanoseconds since the test began (history times)."""

    def s(self) -> float:
        """Seconds since the test began (generator time, deadlines)."""

    def sleep(self, seconds: float) -> None: ...


class Task(Protocol):
    """A running worker, as a Scheduler hands it back."""

    name: str

    def is_alive(self) -> bool: ...

    def join(self, timeout: float | None = None) -> None: ...


class Scheduler(Protocol):
    """Runs workers concurrently."""

    def spawn(self, name: str, target: Callable[[], None]) -> Task: ...


class MonotonicClock:
    """The real clock: time since construction, from the monotonic clock."""

    def __init__(self) -> None:
        self.t0 = time.monotonic_ns()

    def ns(self) -> int:
        return time.monotonic_ns() - self.t0

    def s(self) -> float:
        return (time.monotonic_ns() - self.t0) / 1e9

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class ThreadScheduler:
    """The real scheduler: one daemon thread per worker."""

    def spawn(self, name: str, target: Callable[[], None]) -> Task:
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        return t


@dataclass(slots=True)
class Done:
    """What a worker hands back: the op it was given and its completion (time stamped, JSON tail
    encoded in the worker's thread), or what broke outside invoke."""

    worker: Worker
    invoke: Op
    completion: Op | None
    tail: str | None = None
    error: BaseException | None = None


def normalize(comp: object, inv: Op, *, nemesis: bool = False) -> Op:
    """The completion a client/nemesis returned, made to obey the history's rules."""
    if not isinstance(comp, Op):
        return dataclasses.replace(inv, type=INFO, error=f"invoke returned {type(comp).__name__}, not an Op",
                                   meta=dict(inv.meta))
    typ = INFO if nemesis else comp.type
    error = comp.error
    if typ not in COMPLETIONS:
        error = f"invoke returned an op of type {comp.type!r}"
        typ = INFO
    return Op(index=-1, time=0, type=typ, process=inv.process, f=inv.f, key=comp.key,
              value=comp.value, node=comp.node if comp.node is not None else inv.node, error=error,
              meta=comp.meta if comp.meta is not inv.meta else dict(comp.meta))


class LoopPhase(GeneratorPhase):
    """One generator driven by an interpreter's loop (InterpreterCore): the workers free to take an
    op (longest free first, so no worker is favoured) and the ops in flight. A world says how a
    completion handed back is taken (`take`, never blocking) and what guards a record."""

    def __init__(self, g: Generator, workers: Sequence[Worker]) -> None:
        super().__init__(g, [w.thread for w in workers])
        self.free: deque[Worker] = deque(workers)
        self.inflight: dict[Thread, Done] = {}
        self.next_timeout_check = 0.0  # when the loop next looks for ops past the op timeout
        self.stop_at: float | None = None  # the phase's time limit, on the interpreter's clock

    def take(self) -> Done | None:
        """A completion a worker handed back, if one is waiting."""
        raise NotImplementedError

    def recording(self) -> contextlib.AbstractContextManager[object]:
        """Held around every record the loop makes and every change to `inflight`."""
        return contextlib.nullcontext()


class Phase(LoopPhase):
    """The threaded loop's phase: the two queues, the lock and the cut, and the watch on a
    generator that does not return."""

    def __init__(self, g: Generator, workers: Sequence[Worker]) -> None:
        super().__init__(g, workers)
        self.inboxes: dict[Thread, queue.SimpleQueue[Op | None]] = {
            w.thread: queue.SimpleQueue() for w in workers}
        self.done: queue.SimpleQueue[Done] = queue.SimpleQueue()
        self.interrupted_at: float | None = None  # when the caller was interrupted (monotonic s)
        self.ended = threading.Event()  # set by the loop's thread as its last act
        # When the loop's thread entered the generator (monotonic s; None: not in it), and that
        # thread's id: the caller's thread watches for a generator that does not return.
        self.in_generator_since: float | None = None
        self.loop_ident: int | None = None
        # Every record the loop makes and every change to `inflight` happen under `lock`; once the
        # caller sets `cut` (under it), the loop records nothing more.
        self.lock = threading.Lock()
        self.cut = False

    def take(self) -> Done | None:
        try:
            return self.done.get_nowait()
        except queue.Empty:
            return None

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        with self.lock:
            if self.cut:
                raise _Cut
            yield

    def ask(self, thread: Thread, ctx: Context) -> Template | Pending | None:
        """Asked, watched by the caller's thread for a call that does not return."""
        self.in_generator_since = time.monotonic()
        try:
            return super().ask(thread, ctx)
        finally:
            self.in_generator_since = None

    def tell(self, thread: Thread, ctx: Context, invoke: Op, completion: Op) -> None:
        """Told of a completion, watched as asking it is."""
        self.in_generator_since = time.monotonic()
        try:
            super().tell(thread, ctx, invoke, completion)
        finally:
            self.in_generator_since = None


class InterpreterCore(WorkerPool):
    """What an interpreter's loop decides, in any world: which free worker the generator is asked
    for next (longest free first), the invocation recorded and handed out, a completion recorded
    and told, an op past its bound recorded info, what is still running at a phase's end
    abandoned. It only reads the injected clock and records; how an op reaches a worker (`_send`),
    how a completion comes back (LoopPhase.take) and how the loop waits are its driver's: threads
    and queues (Interpreter), or coroutines in virtual time (jepsen_py.sim.interpreter)."""

    def __init__(self, test: Test, *, client: Any, nemesis: Any, record: Callable[[Op], Op],
                 append: Callable[..., Op], concurrency: int, op_timeout: float, rng: random.Random,
                 clock: Clock) -> None:
        super().__init__(test, client, concurrency)
        self.nemesis = nemesis
        self.record = record
        #: records a completion with its JSON tail (`tail=`), encoded by the worker (HistoryWriter.append)
        self.append = append
        self.op_timeout = op_timeout
        self.rng = rng
        self.clock = clock
        # the faults an outside nemesis declares, written into its ops (nemeses.faults.mark)
        self.declared = faults.declared(nemesis) if nemesis is not None else {}
        self.nodes = tuple(test.nodes)
        self.timeout_check_s = min(POLL_S, op_timeout / 4)

    def _send(self, phase: Any, w: Worker, inv: Op) -> None:
        """Gives the recorded invocation to its worker, which performs it."""
        raise NotImplementedError

    def _step(self, phase: LoopPhase) -> float | None:
        """One turn of the loop: completions in, ops out; when to turn again (the driver waits
        until then or a completion), or None: the phase is over."""
        self._take_completions(phase)
        if phase.over:
            return None
        wake = self._ask(phase)
        return None if phase.over else wake

    def _ask(self, phase: LoopPhase) -> float:
        """Asks the generator for an op for each free worker in turn and hands each op out; the
        time the generator next wants to be asked (at most POLL_S away). Once the phase's time limit
        passed it asks no more (a phase whose every worker is stuck ends there too)."""
        now = self.clock.s()
        wake = now + POLL_S
        if phase.stop_at is not None and now >= phase.stop_at:
            phase.exhausted = True
            return now
        for _ in range(len(phase.free)):
            w = phase.free.popleft()
            try:
                step = phase.ask(w.thread, self._ctx(phase, w.thread, w.process, now))
                if step is None:
                    phase.free.appendleft(w)
                    return now
                if isinstance(step, Template):
                    self._hand_out(phase, w, step)
                    now = self.clock.s()
                    continue
            except _Cut:
                raise
            except BaseException as e:  # no signal lands in it here: SystemExit and the like are its own
                phase.free.appendleft(w)
                self._failed(phase, w, _generator_failure(e))
                return now
            phase.free.append(w)
            if step.until is not None:
                wake = min(wake, step.until)
        return wake

    def _hand_out(self, phase: LoopPhase, w: Worker, tpl: Template) -> None:
        """Records the invocation and gives it to the worker."""
        with phase.recording():
            w.invokes += 1
            w.abandoned = False
            inv = self.record(self._declare(Op(-1, self.clock.ns(), INVOKE, w.process, tpl.f, tpl.key,
                                               tpl.value, tpl.node or w.node, None,
                                               dict(tpl.meta) if tpl.meta else {})))
            phase.inflight[w.thread] = Done(w, inv, None)
        self._send(phase, w, inv)

    def _take_completions(self, phase: LoopPhase) -> None:
        """Every completion already handed back, then the op timeouts."""
        while (d := phase.take()) is not None:
            self._complete(phase, d)
        self._time_out(phase)

    def _complete(self, phase: LoopPhase, d: Done) -> None:
        """Records a completion unless it was already recorded info by timeout (the worker then
        already went on as a fresh process), moves a worker whose op ended info to a fresh process,
        tells the generator; the worker is free again."""
        w, inv = d.worker, d.invoke
        try:
            with phase.recording():
                phase.inflight.pop(w.thread, None)
                late = w.abandoned
                if d.error is not None or d.completion is None:
                    raise d.error or RuntimeError("a worker handed back no completion")
                c = d.completion
                if late:
                    log.debug("late completion of op %d dropped (already info by timeout)", inv.index)
                    c = dataclasses.replace(c, type=INFO)
                else:
                    self.append(c, tail=d.tail)
                if c.type == OK:
                    w.oks += 1
                process = inv.process
                if c.type == INFO and not late and isinstance(w.process, int):
                    w.process = w.process + self.concurrency
            phase.tell(w.thread, self._ctx(phase, w.thread, process, self.clock.s()), inv, c)
        except _Cut:
            raise
        except Exception as e:
            self._failed(phase, w, e)
        phase.free.append(w)

    def _time_out(self, phase: LoopPhase) -> None:
        """Records info for every op that overran its bound, the op timeout (a client's: its late
        answer is then dropped, and the worker continues under a fresh process id) or
        NEMESIS_JOIN_S (the nemesis's). Looked at every `timeout_check_s`, as a watchdog would, not
        at every op: that would cost as many steps as there are workers."""
        now = self.clock.s()
        if now < phase.next_timeout_check:
            return
        phase.next_timeout_check = now + self.timeout_check_s
        with phase.recording():
            for d in phase.inflight.values():
                w, inv = d.worker, d.invoke
                # the op this phase handed out, in its client or nemesis now (a thread left behind
                # by an earlier phase may still be in an older op of the same worker)
                if w.inflight is not inv or w.abandoned or now <= w.deadline:
                    continue
                w.abandoned = True
                self.record(self._declare(Op(-1, self.clock.ns(), INFO, inv.process, inv.f, inv.key,
                                             inv.value, inv.node, error="timeout",
                                             meta={"timeout_s": w.timeout_s, "by": "controller"})))
                if isinstance(w.process, int):  # a fresh process, as after any info
                    w.process = w.process + self.concurrency
                else:  # named on the console when its phase ends, if it has not returned by then
                    log.info("nemesis op %s did not return within %g s: recorded info", inv.f, w.timeout_s)

    def _finish_by(self, phase: LoopPhase, now: float, client_by: float, nemesis_by: float) -> float | None:
        """At a phase's end: until when the loop still waits for the ops in flight, clients' until
        `client_by` and the nemesis's until `nemesis_by`; None: it waits no more (the rest is
        abandoned). An op already recorded info by timeout is not waited for."""
        running = [t for t, d in phase.inflight.items() if not d.worker.abandoned]
        if now < client_by and any(t != NEMESIS for t in running):
            return client_by
        if now < nemesis_by and NEMESIS in running:
            return nemesis_by
        return None

    def _abandon(self, phase: LoopPhase) -> None:
        """Records info for every op still in flight when the phase gives up on it (under
        phase.recording()): nobody will record its completion (the loop is ending), and the next
        phase's ops on the same process (the nemesis's heal) must not find it still open. A client
        worker goes on under a fresh process id, as after any info."""
        for d in list(phase.inflight.values()):
            w, inv = d.worker, d.invoke
            if w.abandoned:  # already recorded info by timeout
                continue
            w.abandoned = True
            self.record(self._declare(Op(-1, self.clock.ns(), INFO, inv.process, inv.f, inv.key, inv.value,
                                         inv.node, error="abandoned: still running when the phase ended")))
            if isinstance(w.process, int):
                w.process = w.process + self.concurrency

    def _finished(self, w: Worker, inv: Op, comp: Op) -> Done:
        """What a worker hands back for `inv`: its completion time stamped now and its JSON tail
        encoded (outside any lock), a value history.jsonl cannot hold made info."""
        comp.time = self.clock.ns()
        try:
            tail = comp._json_tail()
        except (TypeError, ValueError, RecursionError) as e:  # a value history.jsonl cannot hold
            comp = Op(-1, comp.time, INFO, inv.process, inv.f, inv.key, inv.value, inv.node,
                      f"invoke returned what history.jsonl cannot hold: {str(e)[:120]}", {})
            tail = comp._json_tail()
        return Done(w, inv, comp, tail)

    def _failed(self, phase: LoopPhase, w: Worker, e: Exception) -> None:
        """A failure outside invoke (a generator bug, the history unwritable) ends the phase for
        everyone and fails the run: a silently shortened test would be a lie."""
        self.note_failure(w, e)
        phase.stopped = True

    def _ctx(self, phase: LoopPhase, thread: Thread, process: int | str, now: float) -> Context:
        return Context(now, thread, process, self.rng, phase.threads, phase.busy, self.nodes)

    def _declare(self, op: Op) -> Op:
        """A nemesis op of a declared fault carries the declaration (nemeses.faults.mark)."""
        kind = self.declared.get(op.f) if op.process == NEMESIS else None
        return faults.mark(op, kind) if kind is not None else op


class Interpreter(InterpreterCore):
    """Runs generators against the clients and the nemesis, one phase at a time: the generator on
    the interpreter's own thread, a thread per worker performing ops (the workers and their
    clients: jepsen_py.workers)."""

    def __init__(self, test: Test, *, client: Client, nemesis: Nemesis | None,
                 record: Callable[[Op], Op], append: Callable[..., Op], concurrency: int,
                 op_timeout: float, rng: random.Random, clock: Clock | None = None,
                 scheduler: Scheduler | None = None) -> None:
        super().__init__(test, client=client, nemesis=nemesis, record=record, append=append,
                         concurrency=concurrency, op_timeout=op_timeout, rng=rng,
                         clock=clock if clock is not None else MonotonicClock())
        self.scheduler: Scheduler = scheduler if scheduler is not None else ThreadScheduler()
        self._phase: Phase | None = None

    def halt(self, e: BadInput) -> None:
        """Stops the run from outside (the observer found a status that is no status): the phase
        in progress ends as after a generator's bad op, and `run` raises `e`."""
        self.bad_input = self.bad_input or e
        phase = self._phase
        if phase is not None:
            phase.stopped = True

    @property
    def generator_stall_s(self) -> float:
        """How long one call of the generator may take before it counts as never returning."""
        return max(self.op_timeout, JOIN_GRACE_S)

    def run(self, g: Generator, *, with_nemesis: bool) -> None:
        """Drives `g` until it is exhausted (or its time limit passed: the runner wraps each phase
        in one) and the ops in flight have completed or overrun their bound; raises
        FrameworkFailure when a worker broke (the BadInput itself when a user's generator broke it,
        or did not return).

        The loop runs on a thread of its own: the caller's thread only waits for it, so a Ctrl-C
        (raised in the main thread, between any two bytecodes) stops the loop at a point of its
        choosing and never tears an op between its record and its worker."""
        self.raise_failures()  # halted between phases
        workers = list(self.workers) + ([self.nemesis_worker] if with_nemesis else [])
        phase = Phase(g, workers)
        if isinstance(g, TimeLimit):
            phase.stop_at = self.clock.s() + g.dt
        self._phase = phase
        tasks = {w.thread: self.scheduler.spawn("nemesis" if w.thread == NEMESIS else f"worker-{w.thread}",
                                                lambda w=w: self._serve(w, phase))
                 for w in workers}
        self.scheduler.spawn("interpreter", lambda: self._loop(phase, tasks))
        # Waits on an event, not on the thread: a Thread.join cut by Ctrl-C can leave is_alive()
        # False while the thread still runs (CPython 3.11), and heal would race the loop's records.
        try:
            stuck = self._await(phase)
        except BaseException:  # Ctrl-C: the ops in flight still get their completions recorded
            phase.interrupted_at = time.monotonic()
            phase.stopped = True
            # the loop gives its ops JOIN_GRACE_S, records info for the rest, then gives idle
            # workers JOIN_GRACE_S to end: heal must not start while it may still record
            if not phase.ended.wait(3 * JOIN_GRACE_S):
                self._cut(phase, tasks)
            raise
        finally:
            self._phase = None
        if stuck:
            where, label = self._stuck_in(phase)
            self._cut(phase, tasks)
            _tell_to_stop(phase.loop_ident)
            stall = f"{self.generator_stall_s:g} s (stuck in {where})"
            # the command prints the failure; the log names the thread left behind
            log.info("the generator did not return within %s; the interpreter's thread is abandoned", stall)
            if label is not None:
                raise BadInput(f"{label}: its generator did not return within {stall}; the run stopped")
            raise FrameworkFailure(f"the generator did not return within {stall}")
        self.raise_failures()

    def _await(self, phase: Phase) -> bool:
        """Until the phase ended (False), or its loop has been inside one call of the generator
        for longer than `generator_stall_s` (True)."""
        stall_s = self.generator_stall_s
        while not phase.ended.wait(0.25):
            since = phase.in_generator_since
            if since is not None and time.monotonic() - since > stall_s:
                return True
        return False

    def _cut(self, phase: Phase, tasks: dict[Thread, Task]) -> None:
        """Gives up on a loop that does not end: its ops in flight are recorded info, it may record
        nothing more, and the workers are told the phase is over."""
        with phase.lock:
            phase.cut = True
            phase.stopped = True
            self._abandon(phase)
        for inbox in phase.inboxes.values():
            inbox.put(None)
        self._name_stuck(phase, tasks)

    def _stuck_in(self, phase: Phase) -> tuple[str, str | None]:
        """Where the loop's thread is stuck (the first frame outside the standard library) and the
        label of the plugin generator it is in (generator.Checked), if any."""
        frame = sys._current_frames().get(phase.loop_ident or -1)
        return _where(frame), _plugin(_frames(frame))

    def _loop(self, phase: Phase, tasks: dict[Thread, Task]) -> None:
        """The interpreter's thread: the phase driven to its end, then the workers released."""
        phase.loop_ident = threading.get_ident()
        try:
            self._drive(phase)
            self._finish(phase, self.op_timeout + JOIN_GRACE_S, NEMESIS_JOIN_S)
        except _Cut:
            return  # the caller gave up on this thread and has released the workers
        except BaseException as e:  # not the main thread: no signal lands here
            phase.stopped = True
            log.error("the interpreter failed: %s", said(e))
            log.debug("interpreter failure in full", exc_info=e)
            self.errors.append(f"interpreter: {said(e)}")
        finally:
            if not phase.cut:
                self._release(phase, tasks, JOIN_GRACE_S)
            phase.ended.set()

    # ---- the interpreter's loop: the only caller of the generator -------------------------------

    def _drive(self, phase: Phase) -> None:
        """Until the generator is exhausted or the phase stopped: completions in, ops out."""
        while (wake := self._step(phase)) is not None:
            self._wait(phase, wake)

    def _send(self, phase: Phase, w: Worker, inv: Op) -> None:
        phase.inboxes[w.thread].put(inv)

    def _wait(self, phase: Phase, until: float) -> None:
        """Waits for a completion until `until` or the next look at the op timeouts."""
        seconds = min(until, phase.next_timeout_check) - self.clock.s()
        try:
            d = phase.done.get(timeout=seconds) if seconds > 0 else phase.done.get_nowait()
        except queue.Empty:
            self._time_out(phase)
            return
        self._complete(phase, d)

    def _finish(self, phase: Phase, client_s: float, nemesis_s: float) -> None:
        """The generator is done: the ops in flight complete, clients' within `client_s` (the op
        timeout plus a grace period) and the nemesis's within `nemesis_s`, longer (a restart, a
        clock reset in progress: heal must not race it); what is still running then is abandoned.
        An op already recorded info by timeout is not waited for: its answer would be dropped."""
        start = time.monotonic()
        client_by = start + client_s
        nemesis_by = start + nemesis_s
        while True:
            now = time.monotonic()
            if phase.interrupted_at is not None:  # the caller waits JOIN_GRACE_S, no longer
                client_by = min(client_by, phase.interrupted_at + JOIN_GRACE_S)
                nemesis_by = min(nemesis_by, phase.interrupted_at + JOIN_GRACE_S)
            by = self._finish_by(phase, now, client_by, nemesis_by)
            if by is None:
                break
            with contextlib.suppress(queue.Empty):
                self._complete(phase, phase.done.get(timeout=min(by - now, POLL_S)))
            self._time_out(phase)
        with phase.recording():
            self._abandon(phase)

    def _release(self, phase: Phase, tasks: dict[Thread, Task], seconds: float) -> None:
        """Tells every worker the phase is over and lets the idle ones end; those still in an op
        (a client or nemesis that never returned) are left behind, named in one log line."""
        for inbox in phase.inboxes.values():
            inbox.put(None)
        deadline = time.monotonic() + seconds
        for thread, t in tasks.items():
            if thread not in phase.inflight:
                t.join(max(0.0, deadline - time.monotonic()))
        self._name_stuck(phase, tasks)

    def _name_stuck(self, phase: Phase, tasks: dict[Thread, Task]) -> None:
        """One log line naming every worker thread still in an op when its phase ended: Python
        cannot stop them; as daemon threads they do not keep the process alive."""
        stuck = [f"{tasks[t].name} ({d.invoke.f} on process {d.invoke.process})"
                 for t, d in list(phase.inflight.items()) if t in tasks and tasks[t].is_alive()]
        if stuck:
            log.warning("still in an op when the phase ended, left behind (daemon threads): %s",
                        ", ".join(stuck))

    # ---- a worker: performs the ops it is handed, nothing else ----------------------------------

    def _serve(self, w: Worker, phase: Phase) -> None:
        """The worker's thread: takes an op from its queue, performs it, hands the completion back."""
        inbox = phase.inboxes[w.thread]
        while True:
            inv = inbox.get()
            if inv is None:
                return
            try:
                d = self._finished(w, inv, self._perform(w, inv))
            except BaseException as e:  # not the main thread: no signal lands here
                d = Done(w, inv, None, error=e if isinstance(e, Exception) else HookExited(e))
            if w.open_failed:
                w.open_failed = False
                self.clock.sleep(OPEN_BACKOFF_S)
            phase.done.put(d)

    def _perform(self, w: Worker, inv: Op) -> Op:
        """Blocks in the client (the loop turns an overrun into info) or the nemesis. Whatever
        they raise is the op's error: on a worker's thread even KeyboardInterrupt and SystemExit
        are the plugin's own, since signals reach only the main thread."""
        timeout_s = NEMESIS_JOIN_S if w is self.nemesis_worker else self.op_timeout
        w.timeout_s = timeout_s
        w.deadline = self.clock.s() + timeout_s
        w.inflight = inv  # after the deadline: the loop never sees an op in flight with a stale one
        try:
            if w is self.nemesis_worker:
                assert self.nemesis is not None
                try:
                    comp = normalize(self.nemesis.invoke(self.test, copy_op(inv)), inv, nemesis=True)
                except BaseException as e:
                    comp = self.nemesis_failed(inv, e)
                return self._declare(comp)
            try:
                client = self._client_for(w, inv.node)
            except BaseException as e:
                w.open_failed = True
                return self.open_failed(inv, e)
            try:
                return normalize(client.invoke(self.test, copy_op(inv)), inv)
            except BaseException as e:
                return self.invoke_failed(w, inv, e, client)
        finally:
            if w.inflight is inv:  # a thread left behind must not clear a later op's
                w.inflight = None

    def close_clients(self) -> None:
        """Every worker's clients closed (plugin code), within the op timeout plus JOIN_GRACE_S: a
        close that never returns holds up the rest, and is left behind with them."""
        bound = self.op_timeout + JOIN_GRACE_S
        try:
            call_bounded(WorkerPool.close_clients, self, timeout_s=bound, name="closing the clients")
        except HookTimedOut as e:
            log.warning("%s", e)
        except Exception as e:
            log.warning("closing the clients failed: %s", said(e))


def _tell_to_stop(ident: int | None) -> bool:
    """Asks CPython to raise _Cut in the thread `ident` at its next bytecode: a generator looping
    without a yield stops there (and the loop's thread ends quietly); one blocked in C stays blocked
    until it returns into Python. Whether the request was taken."""
    if ident is None:
        return False
    try:
        set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except AttributeError:  # not CPython
        return False
    if set_async_exc(ctypes.c_ulong(ident), ctypes.py_object(_Cut)) > 1:  # never: undo it, as documented
        set_async_exc(ctypes.c_ulong(ident), None)
        return False
    return True


def _frames(frame: FrameType | None) -> list[FrameType]:
    """A thread's frames, innermost first."""
    out = []
    while frame is not None:
        out.append(frame)
        frame = frame.f_back
    return out


def _where(frame: FrameType | None) -> str:
    """file:line in function of the innermost frame outside the standard library."""
    for f in _frames(frame):
        if not f.f_code.co_filename.startswith(_STDLIB):
            return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno} in {f.f_code.co_qualname}"
    return "an unknown place"


_CHECKED = (Checked.op.__code__, Checked.update.__code__)


def _plugin(frames: Sequence[FrameType]) -> str | None:
    """The label of the innermost plugin generator (generator.Checked) among `frames`, if any."""
    for f in frames:
        if f.f_code in _CHECKED:
            owner = f.f_locals.get("self")
            if isinstance(owner, Checked):
                return owner.label
    return None


def _generator_failure(e: BaseException) -> Exception:
    """What the generator raised as the run's failure: an Exception as it is (Checked already
    named a plugin's), and a KeyboardInterrupt or SystemExit (its own, on the loop's thread) as
    BadInput naming the plugin generator it came from, else as HookExited."""
    if isinstance(e, Exception):
        return e
    frames = [f for f, _ in traceback.walk_tb(e.__traceback__)]
    label = _plugin(frames[::-1])
    return BadInput(f"{label}: its generator raised {said(e)}") if label is not None else HookExited(e)
