"""The interpreter: turns a generator into a history by driving client workers and the nemesis.

As Jepsen's generator interpreter does, it asks the generator for the next op on behalf of a free
worker, records the invocation, performs it through that worker's client (or the nemesis), records
the completion and tells the generator. Concurrency is real: one task per client worker, each with
its own clients (one per node it used); the only shared critical sections are the generator (asking
for the next op, microseconds) and the history append. A worker whose op completes info (or raises,
or overruns the op timeout) takes a fresh process id, process + concurrency, and, as in Jepsen, a
new process gets new clients unless its clients say they are reusable (`client_reusable`): a
connection left holding an unanswered request must not hold the worker's later ops behind it.

Time and tasks come from two injected objects, `Clock` and `Scheduler` (the real engine's,
jepsen_py.engine.RealEngine): the real ones read the monotonic clock and start threads; a test may
supply its own. The simulator drives the same workers and generator handoff (jepsen_py.workers)
as coroutines instead (jepsen_py.sim.interpreter).
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from jepsen_py.generator import Context, Generator, Template, Thread
from jepsen_py.history import COMPLETIONS, INFO, INVOKE, NEMESIS, OK, Op
from jepsen_py.nemeses import faults
from jepsen_py.protocols import Client, Nemesis, Test
from jepsen_py.workers import GeneratorPhase, Worker, WorkerPool, copy_op, run_to_end

log = logging.getLogger(__name__)

POLL_S = 0.05  # longest a waiting worker sleeps before asking its generator again
JOIN_GRACE_S = 5.0
NEMESIS_JOIN_S = 120.0


class Clock(Protocol):
    """The test's time: history timestamps, generator time, op deadlines and waits."""

    def ns(self) -> int:
        """Nanoseconds since the test began (history times)."""

    def s(self) -> float:
        """Seconds since the test began (generator time, deadlines)."""

    def sleep(self, seconds: float) -> None: ...

    def wait(self, cond: threading.Condition, seconds: float) -> None:
        """Waits on `cond` (held by the caller) for at most `seconds`."""


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

    def wait(self, cond: threading.Condition, seconds: float) -> None:
        cond.wait(seconds)


class ThreadScheduler:
    """The real scheduler: one daemon thread per worker."""

    def spawn(self, name: str, target: Callable[[], None]) -> Task:
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        return t


class Driver(GeneratorPhase):
    """Hands a generator's ops to worker threads. The generator is only ever called under the lock;
    ops run outside it."""

    def __init__(self, g: Generator, rng: random.Random, threads: Sequence[Thread],
                 nodes: Sequence[str], clock: Clock) -> None:
        super().__init__(g, threads)
        self.rng = rng
        self.nodes = tuple(nodes)
        self.clock = clock
        self.cond = threading.Condition(threading.Lock())
        self.event_waiters = 0

    def _ctx(self, thread: Thread, process: int | str) -> Context:
        return Context(self.clock.s(), thread, process, self.rng, self.threads, self.busy, self.nodes)

    def next(self, w: Worker, start: Callable[[Template], Op],
             done: Callable[[], tuple[int | str, Op, Op]] | None = None) -> Op | None:
        """Finishes the worker's previous op (`done` records its completion), then waits for the
        next template and starts it (`start` records the invoke), all in one critical section:
        one lock handoff per op instead of four is what keeps 100 threads fast."""
        with self.cond:
            if done is not None:
                process, invoke, completion = done()
                self.tell(w.thread, self._ctx(w.thread, process), invoke, completion)
                if self.event_waiters:
                    self.cond.notify_all()
            while True:
                if self.over:
                    return None
                ctx = self._ctx(w.thread, w.process)
                step = self.ask(w.thread, ctx)
                if step is None:
                    self.cond.notify_all()
                    return None
                if isinstance(step, Template):
                    return start(step)
                if step.until is None:
                    self.event_waiters += 1
                    self.clock.wait(self.cond, POLL_S)
                    self.event_waiters -= 1
                else:
                    self.clock.wait(self.cond, min(max(step.until - ctx.time, 0.0), POLL_S))

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


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


class Interpreter(WorkerPool):
    """Runs generators against the clients and the nemesis, one phase at a time, a thread per
    worker (the workers and their clients: jepsen_py.workers)."""

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
        self.watchdog_stop = threading.Event()

    def run(self, g: Generator, *, with_nemesis: bool) -> None:
        """Drives `g` until it is exhausted; raises FrameworkFailure when a worker broke (the
        BadInput itself when a user's generator broke it)."""
        threads: list[Thread] = [w.thread for w in self.workers]
        if with_nemesis:
            threads.append(NEMESIS)
        driver = Driver(g, self.rng, threads, self.test.nodes, self.clock)
        self.watchdog_stop.clear()
        watchdog = self.scheduler.spawn("op-timeouts", self._watchdog)
        ts = [self.scheduler.spawn(f"worker-{w.thread}", lambda w=w: run_to_end(self.work(w, driver)))
              for w in self.workers]
        if with_nemesis:
            nemesis_worker = self.nemesis_worker
            ts.append(self.scheduler.spawn("nemesis", lambda: run_to_end(self.work(nemesis_worker, driver))))
        try:
            while True:
                alive = [t for t in ts if t.is_alive()]
                if not alive:
                    break
                if driver.exhausted or driver.stopped:
                    # Client ops in flight at the end get the op timeout plus a grace period; a
                    # fault in progress (a restart, a clock reset) gets longer: heal must not race it.
                    clients = [t for t in alive if t.name != "nemesis"]
                    self._join_bounded(clients, self.op_timeout + JOIN_GRACE_S)
                    self._join_bounded([t for t in alive if t.name == "nemesis"], NEMESIS_JOIN_S)
                    break
                alive[0].join(0.25)
        except BaseException:
            driver.stop()
            self._join_bounded(ts, JOIN_GRACE_S)
            raise
        finally:
            self.watchdog_stop.set()
            watchdog.join(1.0)
        self.raise_failures()

    @staticmethod
    def _join_bounded(ts: Sequence[Task], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        for t in ts:
            t.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in ts if t.is_alive()]
        if stuck:
            log.warning("workers still blocked after the phase ended, abandoned: %s", ", ".join(stuck))

    def _watchdog(self) -> None:
        """Turns ops that overran the op timeout into info completions (the worker's late answer
        is then dropped, and it continues under a fresh process id)."""
        period = min(0.05, self.op_timeout / 4)
        while not self.watchdog_stop.wait(period):
            now = self.clock.s()
            for w in self.workers:
                if w.inflight is None or now <= w.deadline:
                    continue
                with w.lock:
                    inv = w.inflight
                    if inv is None or w.abandoned or now <= w.deadline:
                        continue
                    w.abandoned = True
                    self.record(Op(-1, self.clock.ns(), INFO, inv.process, inv.f, inv.key, inv.value,
                                   inv.node, error="timeout",
                                   meta={"timeout_s": self.op_timeout, "by": "controller"}))

    def _start(self, w: Worker) -> Callable[[Template], Op]:
        def start(tpl: Template) -> Op:
            w.invokes += 1
            return self.record(self._declare(Op(-1, self.clock.ns(), INVOKE, w.process, tpl.f, tpl.key,
                                                tpl.value, tpl.node or w.node, None,
                                                dict(tpl.meta) if tpl.meta else {})))
        return start

    def _declare(self, op: Op) -> Op:
        """A nemesis op of a declared fault carries the declaration (nemeses.faults.mark)."""
        kind = self.declared.get(op.f) if op.process == NEMESIS else None
        return faults.mark(op, kind) if kind is not None else op

    def _done(self, w: Worker, inv: Op, comp: Op) -> Callable[[], tuple[int | str, Op, Op]]:
        """Records a completion unless the watchdog already recorded info for it; moves a worker
        whose op ended info to a fresh process."""
        comp.time = self.clock.ns()
        tail = comp._json_tail()  # encoded before the driver's lock is taken

        def done() -> tuple[int | str, Op, Op]:
            c = comp
            with w.lock:
                w.inflight = None
                abandoned = w.abandoned
                if not abandoned:
                    self.append(c, tail=tail)
            if abandoned:
                log.debug("late completion of op %d dropped (already info by timeout)", inv.index)
                c = dataclasses.replace(c, type=INFO)
            if c.type == OK:
                w.oks += 1
            process = w.process
            if c.type == INFO and isinstance(process, int):
                w.process = process + self.concurrency
            return process, inv, c
        return done

    async def next_op(self, w: Worker, phase: Any, finished: tuple[Op, Op] | None) -> Op | None:
        """Blocks in the driver: the completion recorded and the next op started under its lock."""
        done = None
        if finished is not None:
            done = self._done(w, *finished)
            if w.open_failed:  # a node that refuses connections is not asked again at once
                w.open_failed = False
                self.clock.sleep(0.05)
        return phase.next(w, self._start(w), done)  # type: ignore[no-any-return]

    async def perform(self, w: Worker, inv: Op) -> Op:
        """Blocks in the client (the watchdog turns an overrun into info) or the nemesis."""
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
        with w.lock:
            w.inflight = inv
            w.deadline = self.clock.s() + self.op_timeout
            w.abandoned = False
        try:
            return normalize(client.invoke(self.test, copy_op(inv)), inv)
        except Exception as e:
            return self.invoke_failed(w, inv, e)

    def worker_failed(self, w: Worker, phase: Any, e: Exception) -> None:
        """A failure outside invoke (a generator bug, the history unwritable) ends the phase for
        everyone and fails the run: a silently shortened test would be a lie."""
        if isinstance(e, RuntimeError) and "history writer is closed" in str(e) and phase.stopped:
            return  # an abandoned worker finishing after the run ended
        self.note_failure(w, e)
        phase.stop()
