"""The simulator's interpreter: jepsen_py.interpreter's InterpreterCore driven in virtual time, so
one interpreter owns the generator in every world.

One coroutine owns the generator, as the threaded interpreter's loop thread does, and makes the
same decisions through the same core: it asks the generator for an op for each free worker (longest
free first) and records the invocation, starts a task that awaits the worker's async client (within
the op timeout) or the nemesis, takes the completions the tasks hand back (recorded, oks counted, a
fresh process after info, the generator told), and otherwise sleeps in virtual time until the
generator's wake time or a completion, at most POLL_S. The tasks only perform ops. Where coroutines
differ from threads: a client op past the op timeout can be cancelled, so it completes info (error
"timeout", by the controller) at its deadline and its worker moves on at once, as a fresh process
with new clients unless they are reusable (jepsen_py.protocols.client_reusable).

Nothing here reads a real clock, starts a thread or draws from an unseeded source: with the same
generator, rng and loop, the same history comes out.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

from jepsen_py.generator import Generator, Thread, TimeLimit
from jepsen_py.history import INFO, Op
from jepsen_py.interpreter import (
    JOIN_GRACE_S,
    NEMESIS_JOIN_S,
    POLL_S,
    Done,
    InterpreterCore,
    LoopPhase,
    normalize,
)
from jepsen_py.protocols import Test
from jepsen_py.workers import Worker, copy_op

log = logging.getLogger(__name__)

MIN_WAIT_S = 1e-6  # a wake time in the past must still let virtual time move


class AsyncClient(Protocol):
    """A client whose invoke is a coroutine (jepsen_py.sim.client.SimClient)."""

    def open(self, test: Test, node: str) -> AsyncClient: ...

    async def invoke(self, test: Test, op: Op) -> Op: ...

    def close(self, test: Test) -> None: ...


class AsyncNemesis(Protocol):
    """A nemesis whose invoke is a coroutine (jepsen_py.sim.nemesis.SimNemesis)."""

    async def invoke(self, test: Test, op: Op) -> Op: ...


class VirtualClock:
    """The test's virtual time as the core reads it: `now_ns`, nanoseconds since the test began."""

    def __init__(self, now_ns: Callable[[], int]) -> None:
        self.now_ns = now_ns

    def ns(self) -> int:
        return self.now_ns()

    def s(self) -> float:
        return self.now_ns() / 1e9

    def sleep(self, seconds: float) -> None:
        raise NotImplementedError("nothing blocks in the simulator: its loop awaits")


class _Phase(LoopPhase):
    """One generator driven by the simulator's loop: the completions the op tasks hand back, the
    tasks still running, and the loop's wake-up when a completion arrives."""

    def __init__(self, g: Generator, workers: Sequence[Worker]) -> None:
        super().__init__(g, workers)
        self.done: deque[Done] = deque()
        self.tasks: dict[Thread, asyncio.Future[None]] = {}
        self.arrived: asyncio.Future[None] | None = None

    def take(self) -> Done | None:
        return self.done.popleft() if self.done else None

    def hand_back(self, d: Done) -> None:
        """An op task's completion: the loop takes it at once."""
        self.done.append(d)
        if self.arrived is not None and not self.arrived.done():
            self.arrived.set_result(None)

    async def wait(self, seconds: float) -> None:
        """Until a completion is handed back or `seconds` of virtual time passed."""
        if self.done:
            return
        loop = asyncio.get_running_loop()
        self.arrived = fut = loop.create_future()
        timer = loop.call_later(max(seconds, MIN_WAIT_S), _resolve, fut)
        try:
            await fut
        finally:
            timer.cancel()
            self.arrived = None


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class SimInterpreter(InterpreterCore):
    """Runs generators against async clients and an async nemesis, one phase at a time: the core's
    loop on one coroutine, each op a task (the workers and their clients: jepsen_py.workers).
    `now_ns` is the test's virtual time, nanoseconds since the test began (history times and
    generator time)."""

    def __init__(self, test: Test, *, client: AsyncClient, nemesis: AsyncNemesis | None,
                 record: Callable[[Op], Op], append: Callable[..., Op], concurrency: int,
                 op_timeout: float, rng: random.Random, now_ns: Callable[[], int]) -> None:
        super().__init__(test, client=client, nemesis=nemesis, record=record, append=append,
                         concurrency=concurrency, op_timeout=op_timeout, rng=rng,
                         clock=VirtualClock(now_ns))

    async def run(self, g: Generator, *, with_nemesis: bool) -> None:
        """Drives `g` until it is exhausted (or its time limit passed) and the ops in flight have
        completed; raises FrameworkFailure when a worker broke."""
        workers = list(self.workers)
        if with_nemesis and self.nemesis is not None:
            workers.append(self.nemesis_worker)
        phase = _Phase(g, workers)
        if isinstance(g, TimeLimit):
            phase.stop_at = self.clock.s() + g.dt
        try:
            while (wake := self._step(phase)) is not None:
                await phase.wait(wake - self.clock.s())
            await self._finish(phase)
        except BaseException:
            phase.stopped = True
            raise
        finally:
            for t in phase.tasks.values():  # abandoned ones, or all of them when the run broke
                t.cancel()
        self.raise_failures()

    async def _finish(self, phase: _Phase) -> None:
        """The generator is done: the ops in flight complete within the threaded interpreter's
        bounds, in virtual time (a client op never outlasts the op timeout here); what is still
        running then is abandoned."""
        start = self.clock.s()
        client_by, nemesis_by = start + self.op_timeout + JOIN_GRACE_S, start + NEMESIS_JOIN_S
        while (by := self._finish_by(phase, now := self.clock.s(), client_by, nemesis_by)) is not None:
            await phase.wait(min(by - now, POLL_S))
            self._take_completions(phase)
        self._abandon(phase)

    def _send(self, phase: _Phase, w: Worker, inv: Op) -> None:
        phase.tasks[w.thread] = asyncio.ensure_future(self._serve(w, inv, phase))

    # ---- an op's task: performs it, nothing else ------------------------------------------------

    async def _serve(self, w: Worker, inv: Op, phase: _Phase) -> None:
        try:
            d = self._finished(w, inv, await self._perform(w, inv))
        except Exception as e:
            d = Done(w, inv, None, error=e)
        phase.hand_back(d)

    async def _perform(self, w: Worker, inv: Op) -> Op:
        if w is self.nemesis_worker:
            return await self._nemesis_op(inv)
        return await self._client_op(w, inv)

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

