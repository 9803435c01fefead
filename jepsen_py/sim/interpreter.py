"""The simulator's interpreter: the same generator protocol, workers and history as
jepsen_py.interpreter, but every worker is a coroutine on one event loop in virtual time.

A free worker asks the generator for its next op, records the invocation, awaits its client (or the
nemesis) and records the completion, then tells the generator, all without yielding in between, as
the threaded interpreter does under its lock. A worker the generator keeps waiting (Pending) sleeps
until the time it names, or, waiting for an event, until some op completes; either re-asks at least
every POLL_S, as a threaded worker polls. An op not completed within the op
timeout is recorded info (error "timeout", by the controller) and abandoned; a worker whose op
ended info continues as a fresh process, process + concurrency, with new clients unless its clients
say they are reusable (jepsen_py.protocols.client_reusable), as in the threaded interpreter.

Nothing here reads a real clock, starts a thread or draws from an unseeded source: with the same
generator, rng and loop, the same history comes out.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from jepsen_py.generator import Context, Generator, Pending, Template, Thread
from jepsen_py.history import INFO, INVOKE, NEMESIS, OK, Op
from jepsen_py.interpreter import normalize
from jepsen_py.protocols import Test
from jepsen_py.workers import GeneratorPhase, Worker, WorkerPool, copy_op

log = logging.getLogger(__name__)

POLL_S = 0.05  # as the threaded interpreter: longest a worker waiting for an event sleeps
MIN_WAIT_S = 1e-6  # a Pending in the past must still let virtual time move


class AsyncClient(Protocol):
    """A client whose invoke is a coroutine (jepsen_py.sim.client.SimClient)."""

    def open(self, test: Test, node: str) -> AsyncClient: ...

    async def invoke(self, test: Test, op: Op) -> Op: ...

    def close(self, test: Test) -> None: ...


class AsyncNemesis(Protocol):
    """A nemesis whose invoke is a coroutine (jepsen_py.sim.nemesis.SimNemesis)."""

    async def invoke(self, test: Test, op: Op) -> Op: ...


class _Phase(GeneratorPhase):
    """One generator being driven (jepsen_py.workers.GeneratorPhase), and who waits on it."""

    def __init__(self, g: Generator, threads: Sequence[Thread]) -> None:
        super().__init__(g, threads)
        self.event_waiters: list[asyncio.Future[None]] = []
        self.timed_waiters: list[asyncio.Future[None]] = []

    def completed(self) -> None:
        """An op completed: the workers waiting for an event ask again (as the threaded
        interpreter notifies them); those waiting for a time keep waiting, at most POLL_S."""
        self._wake(self.event_waiters)
        self.event_waiters = []

    def wake_all(self) -> None:
        """The phase is over (or broke): every waiting worker asks again and finds out."""
        self._wake(self.event_waiters + self.timed_waiters)
        self.event_waiters, self.timed_waiters = [], []

    @staticmethod
    def _wake(waiters: list[asyncio.Future[None]]) -> None:
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def wait(self, until: float | None, now: float) -> None:
        """Until woken, or the time `until` (None: an event, or POLL_S), at most POLL_S."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        if until is None:
            self.event_waiters.append(fut)
            seconds = POLL_S
        else:
            self.timed_waiters.append(fut)
            if len(self.timed_waiters) > 4 * len(self.threads):  # drop the ones their timers woke
                self.timed_waiters = [f for f in self.timed_waiters if not f.done()]
            seconds = min(until - now, POLL_S)
        timer = loop.call_later(max(seconds, MIN_WAIT_S), _resolve, fut)
        try:
            await fut
        finally:
            timer.cancel()


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class SimInterpreter(WorkerPool):
    """Runs generators against async clients and an async nemesis, one phase at a time, each
    worker a coroutine (the workers and their clients: jepsen_py.workers). `now_ns` is the test's
    virtual time, nanoseconds since the test began (history times and generator time)."""

    def __init__(self, test: Test, *, client: AsyncClient, nemesis: AsyncNemesis | None,
                 record: Callable[[Op], Op], concurrency: int, op_timeout: float,
                 rng: random.Random, now_ns: Callable[[], int]) -> None:
        super().__init__(test, client, concurrency)
        self.nemesis = nemesis
        self.record = record
        self.op_timeout = op_timeout
        self.rng = rng
        self.now_ns = now_ns

    async def run(self, g: Generator, *, with_nemesis: bool) -> None:
        """Drives `g` until it is exhausted and every op in flight has completed; raises
        FrameworkFailure when a worker broke."""
        threads: list[Thread] = [w.thread for w in self.workers]
        if with_nemesis and self.nemesis is not None:
            threads.append(NEMESIS)
        phase = _Phase(g, threads)
        loops = [self.work(w, phase) for w in self.workers]
        if NEMESIS in threads:
            loops.append(self.work(self.nemesis_worker, phase))
        tasks = [asyncio.ensure_future(c) for c in loops]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            phase.stopped = True
            for t in tasks:
                t.cancel()
            raise
        self.raise_failures()

    # ---- one worker -----------------------------------------------------------------------------

    async def work(self, w: Worker, phase: _Phase) -> None:
        """One worker's loop until the phase is over for it: finish the previous op and take the
        next one from the generator (`next_op`), perform it (`perform`), again; a failure outside
        invoke ends the phase for everyone (`worker_failed`)."""
        finished: tuple[Op, Op] | None = None
        try:
            while True:
                inv = await self.next_op(w, phase, finished)
                if inv is None:
                    return
                finished = (inv, await self.perform(w, inv))
        except Exception as e:
            self.worker_failed(w, phase, e)

    def _ctx(self, phase: _Phase, thread: Thread, process: int | str) -> Context:
        return Context(self.now_ns() / 1e9, thread, process, self.rng, phase.threads, phase.busy,
                       tuple(self.test.nodes))

    async def _next(self, w: Worker, phase: _Phase) -> Op | None:
        """The worker's next invocation, recorded; None when the phase is over for it."""
        while True:
            if phase.over:
                return None
            ctx = self._ctx(phase, w.thread, w.process)
            step = phase.ask(w.thread, ctx)
            if step is None:
                phase.wake_all()
                return None
            if isinstance(step, Template):
                if w is not self.nemesis_worker:
                    w.invokes += 1
                return self.record(Op(-1, self.now_ns(), INVOKE, w.process, step.f, step.key,
                                      step.value, step.node or w.node, None,
                                      dict(step.meta) if step.meta else {}))
            assert isinstance(step, Pending)
            await phase.wait(step.until, ctx.time)

    def _finish(self, w: Worker, phase: _Phase, inv: Op, comp: Op) -> None:
        """Records the completion, moves a worker whose op ended info to a fresh process, tells
        the generator and wakes the waiting workers."""
        comp.time = self.now_ns()
        self.record(comp)
        if comp.type == OK and w is not self.nemesis_worker:
            w.oks += 1
        process = w.process
        if comp.type == INFO and isinstance(process, int):
            w.process = process + self.concurrency
        phase.tell(w.thread, self._ctx(phase, w.thread, process), inv, comp)
        phase.completed()

    async def next_op(self, w: Worker, phase: Any, finished: tuple[Op, Op] | None) -> Op | None:
        """The previous op finished and the next asked for with no await between, as the threaded
        interpreter does under its lock."""
        if finished is not None:
            self._finish(w, phase, *finished)
        return await self._next(w, phase)

    async def perform(self, w: Worker, inv: Op) -> Op:
        if w is self.nemesis_worker:
            return await self._nemesis_op(inv)
        return await self._client_op(w, inv)

    def worker_failed(self, w: Worker, phase: Any, e: Exception) -> None:
        self.note_failure(w, e)
        phase.stopped = True
        phase.wake_all()

    async def _client_op(self, w: Worker, inv: Op) -> Op:
        try:
            client = self._client_for(w, inv.node)
        except Exception as e:
            return self.open_failed(inv, e)
        try:
            comp = await asyncio.wait_for(client.invoke(self.test, copy_op(inv)), self.op_timeout)
        except TimeoutError:
            self._drop_client(w, inv.node)  # its stream may still carry the late answer
            return Op(-1, 0, INFO, inv.process, inv.f, inv.key, inv.value, inv.node, error="timeout",
                      meta={"timeout_s": self.op_timeout, "by": "controller"})
        except Exception as e:
            return self.invoke_failed(w, inv, e)
        return normalize(comp, inv)

    async def _nemesis_op(self, inv: Op) -> Op:
        assert self.nemesis is not None
        try:
            return normalize(await self.nemesis.invoke(self.test, copy_op(inv)), inv, nemesis=True)
        except Exception as e:
            return self.nemesis_failed(inv, e)
