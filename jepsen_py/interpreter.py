"""The interpreter: turns a generator into a history by driving client workers and the nemesis.

It is Jepsen's interpreter. One thread, the interpreter's own loop, owns the generator: it asks
it for an op on behalf of a free worker, records the invocation, hands the op to that worker over
the worker's queue, and takes completions back from one completion queue, recording each and
telling the generator (`update`). Workers never touch the generator, so a
generator needs no locking however many workers there are. Concurrency is real: a thread per
client worker, each with its own clients (one per node it used), and the nemesis's worker beside
them; they only perform ops. The loop also watches the op timeout: an op still running after it is
recorded info (error "timeout", by the controller) and its late answer dropped. A worker whose op
completes info (or raises, or overruns) takes a fresh process id, process + concurrency, and, as in
Jepsen, a new process gets new clients unless its clients say they are reusable
(`client_reusable`): a connection left holding an unanswered request must not hold the worker's
later ops behind it.

Time and tasks come from two injected objects, `Clock` and `Scheduler` (the real engine's,
jepsen_py.engine.RealEngine): the real ones read the monotonic clock and start threads; a test may
supply its own. The simulator drives the same workers and generator handoff (jepsen_py.workers)
as coroutines on one event loop instead (jepsen_py.sim.interpreter).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import queue
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from jepsen_py.generator import Context, Generator, Template, Thread
from jepsen_py.history import COMPLETIONS, INFO, INVOKE, NEMESIS, OK, Op
from jepsen_py.nemeses import faults
from jepsen_py.protocols import Client, Nemesis, Test
from jepsen_py.workers import GeneratorPhase, Worker, WorkerPool, copy_op

log = logging.getLogger(__name__)

POLL_S = 0.05  # longest the loop waits before asking a waiting generator again
OPEN_BACKOFF_S = 0.05  # a node that refuses connections is not asked again at once
JOIN_GRACE_S = 5.0
NEMESIS_JOIN_S = 120.0


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
    error: Exception | None = None


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


class Phase(GeneratorPhase):
    """One generator driven by the interpreter's loop: the workers free to take an op (longest
    free first, so no worker is favoured), the ops in flight, and the two queues."""

    def __init__(self, g: Generator, workers: Sequence[Worker]) -> None:
        super().__init__(g, [w.thread for w in workers])
        self.free: deque[Worker] = deque(workers)
        self.inflight: dict[Thread, Done] = {}
        self.inboxes: dict[Thread, queue.SimpleQueue[Op | None]] = {
            w.thread: queue.SimpleQueue() for w in workers}
        self.done: queue.SimpleQueue[Done] = queue.SimpleQueue()
        self.next_timeout_check = 0.0  # when the loop next looks for ops past the op timeout
        self.interrupted_at: float | None = None  # when the caller was interrupted (monotonic s)
        self.ended = threading.Event()  # set by the loop's thread as its last act


class Interpreter(WorkerPool):
    """Runs generators against the clients and the nemesis, one phase at a time: the generator on
    the interpreter's own thread, a thread per worker performing ops (the workers and their
    clients: jepsen_py.workers)."""

    def __init__(self, test: Test, *, client: Client, nemesis: Nemesis | None,
                 record: Callable[[Op], Op], append: Callable[..., Op], concurrency: int,
                 op_timeout: float, rng: random.Random, clock: Clock | None = None,
                 scheduler: Scheduler | None = None) -> None:
        super().__init__(test, client, concurrency)
        self.nemesis = nemesis
        self.record = record
        self.append = append  # record with a pre-encoded JSON tail (HistoryWriter.append)
        self.op_timeout = op_timeout
        self.rng = rng
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.scheduler: Scheduler = scheduler if scheduler is not None else ThreadScheduler()
        # the faults an outside nemesis declares, written into its ops (nemeses.faults.mark)
        self.declared = faults.declared(nemesis) if nemesis is not None else {}
        self.nodes = tuple(test.nodes)
        self.timeout_check_s = min(POLL_S, op_timeout / 4)

    def run(self, g: Generator, *, with_nemesis: bool) -> None:
        """Drives `g` until it is exhausted and the ops in flight have completed (or overrun their
        bound); raises FrameworkFailure when a worker broke (the BadInput itself when a user's
        generator broke it).

        The loop runs on a thread of its own: the caller's thread only waits for it, so a Ctrl-C
        (raised in the main thread, between any two bytecodes) stops the loop at a point of its
        choosing and never tears an op between its record and its worker."""
        workers = list(self.workers) + ([self.nemesis_worker] if with_nemesis else [])
        phase = Phase(g, workers)
        tasks = {w.thread: self.scheduler.spawn("nemesis" if w.thread == NEMESIS else f"worker-{w.thread}",
                                                lambda w=w: self._serve(w, phase))
                 for w in workers}
        self.scheduler.spawn("interpreter", lambda: self._loop(phase, tasks))
        # Waits on an event, not on the thread: a Thread.join cut by Ctrl-C can leave is_alive()
        # False while the thread still runs (CPython 3.11), and heal would race the loop's records.
        try:
            while not phase.ended.wait(0.25):
                pass
        except BaseException:  # Ctrl-C: the ops in flight still get their completions recorded
            phase.interrupted_at = time.monotonic()
            phase.stopped = True
            # the loop gives its ops JOIN_GRACE_S, records info for the rest, then gives idle
            # workers JOIN_GRACE_S to end: heal must not start while it may still record
            phase.ended.wait(3 * JOIN_GRACE_S)
            raise
        self.raise_failures()

    def _loop(self, phase: Phase, tasks: dict[Thread, Task]) -> None:
        """The interpreter's thread: the phase driven to its end, then the workers released."""
        try:
            self._drive(phase)
            self._finish(phase, self.op_timeout + JOIN_GRACE_S, NEMESIS_JOIN_S)
        except Exception as e:
            phase.stopped = True
            log.error("the interpreter failed: %s: %s", type(e).__name__, e)
            log.debug("interpreter failure in full", exc_info=e)
            self.errors.append(f"interpreter: {type(e).__name__}: {e}")
        finally:
            self._release(phase, tasks, JOIN_GRACE_S)
            phase.ended.set()

    # ---- the interpreter's loop: the only caller of the generator -------------------------------

    def _drive(self, phase: Phase) -> None:
        """Until the generator is exhausted or the phase stopped: completions in, ops out."""
        while True:
            self._take_completions(phase)
            if phase.over:
                return
            wake = self._ask(phase)
            if phase.over:
                return
            self._wait(phase, wake)

    def _ask(self, phase: Phase) -> float:
        """Asks the generator for an op for each free worker in turn and hands each op out; the
        time the generator next wants to be asked (at most POLL_S away)."""
        now = self.clock.s()
        wake = now + POLL_S
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
            except Exception as e:
                phase.free.appendleft(w)
                self._failed(phase, w, e)
                return now
            phase.free.append(w)
            if step.until is not None:
                wake = min(wake, step.until)
        return wake

    def _hand_out(self, phase: Phase, w: Worker, tpl: Template) -> None:
        """Records the invocation and gives it to the worker."""
        w.invokes += 1
        w.abandoned = False
        inv = self.record(self._declare(Op(-1, self.clock.ns(), INVOKE, w.process, tpl.f, tpl.key, tpl.value,
                                           tpl.node or w.node, None, dict(tpl.meta) if tpl.meta else {})))
        phase.inflight[w.thread] = Done(w, inv, None)
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

    def _take_completions(self, phase: Phase) -> None:
        """Every completion already handed back, then the op timeouts."""
        while True:
            try:
                d = phase.done.get_nowait()
            except queue.Empty:
                break
            self._complete(phase, d)
        self._time_out(phase)

    def _complete(self, phase: Phase, d: Done) -> None:
        """Records a completion unless it was already recorded info by timeout, moves a worker whose
        op ended info to a fresh process, tells the generator; the worker is free again."""
        w, inv = d.worker, d.invoke
        phase.inflight.pop(w.thread, None)
        try:
            if d.error is not None or d.completion is None:
                raise d.error or RuntimeError("a worker handed back no completion")
            c = d.completion
            if w.abandoned:
                log.debug("late completion of op %d dropped (already info by timeout)", inv.index)
                c = dataclasses.replace(c, type=INFO)
            else:
                self.append(c, tail=d.tail)
            if c.type == OK:
                w.oks += 1
            process = w.process
            if c.type == INFO and isinstance(process, int):
                w.process = process + self.concurrency
            phase.tell(w.thread, self._ctx(phase, w.thread, process, self.clock.s()), inv, c)
        except Exception as e:
            self._failed(phase, w, e)
        phase.free.append(w)

    def _time_out(self, phase: Phase) -> None:
        """Records info for every client op that overran the op timeout (the worker's late answer
        is then dropped, and it continues under a fresh process id). Looked at every
        `timeout_check_s`, as a watchdog would, not at every op: that would cost as many steps as
        there are workers."""
        now = self.clock.s()
        if now < phase.next_timeout_check:
            return
        phase.next_timeout_check = now + self.timeout_check_s
        for d in phase.inflight.values():
            w = d.worker
            inv = w.inflight
            if inv is None or w.abandoned or now <= w.deadline:
                continue
            w.abandoned = True
            self.record(Op(-1, self.clock.ns(), INFO, inv.process, inv.f, inv.key, inv.value, inv.node,
                           error="timeout", meta={"timeout_s": self.op_timeout, "by": "controller"}))

    def _finish(self, phase: Phase, client_s: float, nemesis_s: float) -> None:
        """The generator is done: the ops in flight complete, clients' within `client_s` (the op
        timeout plus a grace period) and the nemesis's within `nemesis_s`, longer (a restart, a
        clock reset in progress: heal must not race it); what is still running then is abandoned."""
        start = time.monotonic()
        client_by = start + client_s
        nemesis_by = start + nemesis_s
        while phase.inflight:
            now = time.monotonic()
            if phase.interrupted_at is not None:  # the caller waits JOIN_GRACE_S, no longer
                client_by = min(client_by, phase.interrupted_at + JOIN_GRACE_S)
                nemesis_by = min(nemesis_by, phase.interrupted_at + JOIN_GRACE_S)
            if now < client_by and any(t != NEMESIS for t in phase.inflight):
                by = client_by
            elif now < nemesis_by and NEMESIS in phase.inflight:
                by = nemesis_by
            else:
                break
            with contextlib.suppress(queue.Empty):
                self._complete(phase, phase.done.get(timeout=min(by - now, POLL_S)))
            self._time_out(phase)
        if phase.inflight:
            log.warning("workers still blocked after the phase ended, abandoned: %s",
                        ", ".join(sorted(str(t) for t in phase.inflight)))
            self._abandon(phase)

    def _abandon(self, phase: Phase) -> None:
        """Records info for every op still in flight when the phase gives up on it: nobody will
        record its completion (the loop is ending), and the next phase's ops on the same process
        (the nemesis's heal) must not find it still open. A client worker goes on under a fresh
        process id, as after any info."""
        for d in list(phase.inflight.values()):
            w, inv = d.worker, d.invoke
            if w.abandoned:  # already recorded info by timeout
                continue
            w.abandoned = True
            self.record(self._declare(Op(-1, self.clock.ns(), INFO, inv.process, inv.f, inv.key, inv.value,
                                         inv.node, error="abandoned: still running when the phase ended")))
            if isinstance(w.process, int):
                w.process = w.process + self.concurrency

    def _release(self, phase: Phase, tasks: dict[Thread, Task], seconds: float) -> None:
        """Tells every worker the phase is over and lets the idle ones end (one still in its op is
        abandoned)."""
        for inbox in phase.inboxes.values():
            inbox.put(None)
        deadline = time.monotonic() + seconds
        for thread, t in tasks.items():
            if thread not in phase.inflight:
                t.join(max(0.0, deadline - time.monotonic()))

    def _failed(self, phase: Phase, w: Worker, e: Exception) -> None:
        """A failure outside invoke (a generator bug, the history unwritable) ends the phase for
        everyone and fails the run: a silently shortened test would be a lie."""
        self.note_failure(w, e)
        phase.stopped = True

    def _ctx(self, phase: Phase, thread: Thread, process: int | str, now: float) -> Context:
        return Context(now, thread, process, self.rng, phase.threads, phase.busy, self.nodes)

    def _declare(self, op: Op) -> Op:
        """A nemesis op of a declared fault carries the declaration (nemeses.faults.mark)."""
        kind = self.declared.get(op.f) if op.process == NEMESIS else None
        return faults.mark(op, kind) if kind is not None else op

    # ---- a worker: performs the ops it is handed, nothing else ----------------------------------

    def _serve(self, w: Worker, phase: Phase) -> None:
        """The worker's thread: takes an op from its queue, performs it, hands the completion back."""
        inbox = phase.inboxes[w.thread]
        while True:
            inv = inbox.get()
            if inv is None:
                return
            try:
                comp = self._perform(w, inv)
                comp.time = self.clock.ns()
                d = Done(w, inv, comp, comp._json_tail())
            except Exception as e:
                d = Done(w, inv, None, error=e)
            if w.open_failed:
                w.open_failed = False
                self.clock.sleep(OPEN_BACKOFF_S)
            phase.done.put(d)

    def _perform(self, w: Worker, inv: Op) -> Op:
        """Blocks in the client (the loop turns an overrun into info) or the nemesis."""
        if w is self.nemesis_worker:
            assert self.nemesis is not None
            try:
                comp = normalize(self.nemesis.invoke(self.test, copy_op(inv)), inv, nemesis=True)
            except Exception as e:
                comp = self.nemesis_failed(inv, e)
            return self._declare(comp)
        try:
            client = self._client_for(w, inv.node)
        except Exception as e:
            w.open_failed = True
            return self.open_failed(inv, e)
        w.deadline = self.clock.s() + self.op_timeout
        w.inflight = inv  # after the deadline: the loop never sees an op in flight with a stale one
        try:
            return normalize(client.invoke(self.test, copy_op(inv)), inv)
        except Exception as e:
            return self.invoke_failed(w, inv, e)
        finally:
            w.inflight = None
