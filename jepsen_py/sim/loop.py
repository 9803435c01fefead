"""Virtual time: one global event queue and one asyncio event loop per simulated process.

The Scheduler owns the only queue of the simulation (a heap of (global time, seq, loop, handle) plus
a FIFO of callbacks ready at the current instant) and the only random source. Every SimLoop (one per
node incarnation, one for the controller's clients and nemesis) puts its ready callbacks and timers
there, so stepping the simulation is: pop the earliest event, make its loop the running loop, run it.
Nothing reads the wall clock, nothing waits on a selector: an idle simulation jumps straight to the
next timer. Ties are broken by a sequence number, never by object identity, so a seed fixes the
whole run.

A SimLoop is asyncio's AbstractEventLoop with just what the node, asyncio's Tasks, Futures, streams,
`asyncio.sleep`, `wait_for`, `wait`, `gather`, Event and Semaphore use. Its `time()` is the node's own
clock: local = global + offset + drift * (global - set_at), so a clock fault moves the node's clock
readings at once and its timers from its next wake-up, as libfaketime does to a container (a step
does not cut short a sleep the kernel is timing). Process faults act on the loop:
a paused loop's events are put aside in order and re-queued on resume (SIGSTOP/SIGCONT); a killed
loop's events are dropped and its tasks are kept, never finalised (kill -9 runs no `finally`).
A loop can be charged time (an fsync): it is then busy, and its callbacks run no earlier than when
the charge ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import itertools
import random
from asyncio import TimerHandle, events, format_helpers
from asyncio.events import _set_running_loop
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Generator
from heapq import heappop, heappush
from typing import Any, TypeVar

T = TypeVar("T")


class NodeExit(SystemExit):
    """Raised by a simulated process's `exit(code)`: unwinds the callback that called it (asyncio
    re-raises SystemExit out of Tasks and Handles) up to the Scheduler, which records the exit."""

    def __init__(self, loop: SimLoop, code: int) -> None:
        super().__init__(code)
        self.loop = loop
        self.exit_code = code


class SimDeadlock(RuntimeError):
    """run_until_complete found no event left to run while its awaitable is still pending."""


class SimFuture(asyncio.Future):  # type: ignore[type-arg]
    """A Future whose hash is a counter drawn when it is first hashed: sets of futures iterate in
    the same order every run (the default hash is the object's address). Drawn lazily because most
    futures are never hashed, and the order of first hashes is as deterministic as the run."""

    def __hash__(self) -> int:
        try:
            return self._sim_hash  # type: ignore[no-any-return]
        except AttributeError:
            h = self._sim_hash = next(self._loop.scheduler.hashes)  # type: ignore[attr-defined]
            return h

    def __eq__(self, other: object) -> bool:
        return self is other


class SimTask(asyncio.Task):  # type: ignore[type-arg]
    """A Task with a deterministic hash (see SimFuture): the node keeps tasks in sets and cancels
    them by iterating those sets."""

    def __init__(self, coro: Coroutine[Any, Any, Any], *, loop: SimLoop, name: str | None = None,
                 context: contextvars.Context | None = None) -> None:
        self._sim_hash = next(loop.scheduler.hashes)  # before Task registers itself in a WeakSet
        super().__init__(coro, loop=loop, name=name, context=context)

    def __hash__(self) -> int:
        return self._sim_hash

    def __eq__(self, other: object) -> bool:
        return self is other


class Scheduler:
    """The single event queue in virtual (global) time and the single seeded random source."""

    #: rebuild the heap when more than half of it is cancelled timers (and it is this large)
    COMPACT_AT = 512
    #: a process that runs this many callbacks at one instant is busy-looping (e.g. sleeping for a
    #: delay that rounds to zero while its own test says the time is not up yet); on a CPU its clock
    #: would move meanwhile, so it is charged SPIN_CHARGE_S of virtual time
    SPIN_STEPS = 64
    SPIN_CHARGE_S = 1e-6
    #: how late a process's timers fire (Linux's default timer slack for a normal thread). Besides
    #: being what a real process sees, it keeps code that sleeps for a computed delay and then
    #: re-reads the clock from finding the time not quite up (float rounding) and spinning
    TIMER_SLACK_S = 50e-6

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.timer_slack = self.TIMER_SLACK_S
        self.rng = random.Random(seed)
        self.now = 0.0
        self.hashes = itertools.count(1)
        self.steps = 0
        #: (process name, exit code, global time) of every `exit()` a simulated process made
        self.exits: list[tuple[str, int, float]] = []
        self._heap: list[tuple[float, int, SimLoop | None, asyncio.Handle]] = []
        self._ready: deque[tuple[SimLoop | None, asyncio.Handle]] = deque()
        self._seq = itertools.count()
        self._cancelled = 0
        self._current: SimLoop | None = None  # the loop set as asyncio's running loop
        #: tasks of killed loops, kept alive so that no finaliser runs their `finally` blocks later
        self._graveyard: list[object] = []
        #: called after a process exits (the cluster treats it as killed)
        self.on_exit: Callable[[SimLoop, int], None] | None = None
        self._loops: list[SimLoop] = []
        #: a signal's exception deferred to the next event (interrupt_next), None when none is
        self._interrupt: Callable[[], None] | None = None

    # ---- queueing -----------------------------------------------------------------------------------

    def push(self, when: float, loop: SimLoop | None, handle: asyncio.Handle) -> None:
        """Queues `handle` to run at global time `when` (not before now) on `loop` (None: the
        simulated kernel/network itself, never paused)."""
        if when <= self.now:
            self._ready.append((loop, handle))
        else:
            heapq.heappush(self._heap, (when, next(self._seq), loop, handle))

    def call_at(self, when: float, callback: Callable[..., object], *args: object,
                loop: SimLoop | None = None) -> KernelEvent:
        """Runs a plain callback at global time `when`; on `loop`'s behalf if given (then it is
        deferred while that loop is paused and dropped once it is killed), else as the simulated
        kernel (never paused; an exception in it is a simulator bug and stops the run)."""
        ev = KernelEvent(callback, args)
        if when <= self.now:
            self._ready.append((loop, ev))  # type: ignore[arg-type]
        else:
            heapq.heappush(self._heap, (when, next(self._seq), loop, ev))  # type: ignore[arg-type]
        return ev

    def timer_cancelled(self) -> None:
        self._cancelled += 1

    def retime(self, loop: SimLoop) -> None:
        """Recomputes the global time of every pending timer of `loop` after its clock changed."""
        now = self.now
        heap = []
        for when, seq, lp, h in self._heap:
            if lp is loop and isinstance(h, asyncio.TimerHandle) and not h._cancelled:
                when = max(now, loop._global_of(h.when()) + self.timer_slack)
            heap.append((when, seq, lp, h))
        heapq.heapify(heap)
        self._heap = heap

    def _compact(self) -> None:
        self._heap = [e for e in self._heap if not e[3]._cancelled]
        heapq.heapify(self._heap)
        self._cancelled = 0

    def interrupt_next(self, raise_it: Callable[[], None]) -> None:
        """Runs `raise_it` (which raises, e.g. KeyboardInterrupt) as the very next event, or as the
        simulation returns to its caller if no event comes first: the exception then leaves the
        simulation between two events, never in the middle of a node's step, where it would strand
        a coroutine half made (finalised later, with a warning)."""
        self._interrupt = raise_it
        self._ready.appendleft((None, KernelEvent(self._interrupt_now, ())))  # type: ignore[arg-type]

    def _interrupt_now(self) -> None:
        raise_it, self._interrupt = self._interrupt, None
        if raise_it is not None:
            raise_it()

    # ---- stepping -----------------------------------------------------------------------------------

    def next_time(self) -> float | None:
        """Global time of the next event, None if nothing is queued."""
        if self._ready:
            return self.now
        return self._heap[0][0] if self._heap else None

    def step(self) -> bool:
        """Runs one event; False when the queue is empty."""
        try:
            return self._step()
        finally:
            self._return()

    def _return(self) -> None:
        """Leaving one of the simulator's entry points: no process runs, and an interrupt that
        arrived during the last event and found no event after it is raised now."""
        self._leave()
        if self._interrupt is not None:
            self._interrupt_now()

    def _leave(self) -> None:
        """No simulated process is running any more (between the simulator's entry points)."""
        if self._current is not None:
            self._current = None
            events._set_running_loop(None)

    def _step(self) -> bool:
        ready = self._ready
        if ready:
            loop, h = ready.popleft()
        else:
            heap = self._heap
            if not heap:
                return False
            if self._cancelled > self.COMPACT_AT and self._cancelled * 2 > len(heap):
                self._compact()
                heap = self._heap
                if not heap:
                    return False
            when, _, loop, h = heappop(heap)
            self.now = when
        if h._cancelled:
            if h.__class__ is TimerHandle:
                h._scheduled = False
                self._cancelled = max(0, self._cancelled - 1)
            return True
        if loop is not None:
            if loop._dead:
                return True
            if loop._paused:
                loop._deferred.append(h)
                return True
            now = self.now
            if loop._busy_until > now:
                # the process is still inside a charged operation (an fsync): run after it
                heappush(self._heap, (loop._busy_until, next(self._seq), loop, h))
                return True
            if loop._clock_moved:
                # the process wakes for the first time since its clock was set: asyncio reads the
                # clock and arms its next sleep from it, so every timer is due by the new clock now
                loop._clock_moved = False
                self.retime(loop)
                if h.__class__ is TimerHandle and h._when > loop.time():
                    # woken by a timer the clock's step back has not made due yet: it sleeps again
                    heappush(self._heap, (loop._global_of(h._when) + self.timer_slack, next(self._seq),
                                          loop, h))
                    return True
            if h.__class__ is TimerHandle:
                h._scheduled = False
            if loop._spin_at == now:
                loop._spin_n += 1
                if loop._spin_n >= self.SPIN_STEPS:
                    loop._spin_n = 0
                    loop.charge(self.SPIN_CHARGE_S)
            else:
                loop._spin_at = now
                loop._spin_n = 0
        self.steps += 1
        if loop is not self._current:
            self._current = loop
            _set_running_loop(loop)
        # Handle._run without its frame: one fewer Python call per event
        ctx = h._context
        try:
            if ctx is None:
                h._callback(*h._args)  # a KernelEvent: an exception is a simulator bug, raised
            else:
                ctx.run(h._callback, *h._args)
        except NodeExit as e:
            self._leave()
            self._exited(e)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            if ctx is None:
                raise
            _report(h, exc)
        return True

    def _exited(self, e: NodeExit) -> None:
        lp = e.loop
        if not lp._exit_recorded:
            lp._exit_recorded = True
            self.exits.append((lp.name, e.exit_code, self.now))
        if not lp._dead:
            self.kill(lp)
        if self.on_exit is not None:
            self.on_exit(lp, e.exit_code)

    def run_until(self, t: float) -> None:
        """Runs every event up to global time `t` and leaves the clock at `t`."""
        ready, heap, step = self._ready, self._heap, self._step
        try:
            while True:
                if ready:
                    step()
                    continue
                heap = self._heap  # _compact may have replaced it
                if not heap or heap[0][0] > t:
                    break
                step()
        finally:
            self._return()
        self.now = max(self.now, t)

    def run_until_idle(self, max_steps: int = 10_000_000) -> None:
        """Runs until nothing is queued (a test helper: a node's ticker never lets that happen)."""
        try:
            for _ in range(max_steps):
                if not self._step():
                    return
        finally:
            self._return()
        raise SimDeadlock(f"still busy after {max_steps} steps")

    def run_until_complete(self, aw: Awaitable[T], loop: SimLoop, timeout: float | None = None) -> T:
        """Runs the simulation until `aw` (scheduled on `loop`) is done; its result or exception.
        `timeout` bounds the virtual time spent (TimeoutError past it)."""
        fut = asyncio.ensure_future(aw, loop=loop)
        deadline = float("inf") if timeout is None else self.now + timeout
        ready, step, done = self._ready, self._step, fut.done
        try:
            while not done():
                if not ready:  # the clock moves: check the deadline first
                    heap = self._heap
                    if not heap:
                        raise SimDeadlock(f"nothing left to run at t={self.now:.6f} and {fut!r} is not done")
                    if heap[0][0] > deadline:
                        self.now = deadline
                        fut.cancel()
                        raise TimeoutError(f"not done after {timeout} virtual seconds")
                step()
        finally:
            self._return()
        return fut.result()

    def close(self) -> None:
        """Ends the simulation: every loop is discarded and every coroutine left is closed now, so
        that none is finalised later, at an arbitrary moment, running its `finally` blocks then."""
        for lp in self._loops:
            self.kill(lp)
        self._ready.clear()
        self._heap.clear()
        graveyard, self._graveyard = self._graveyard, []
        for tasks in graveyard:
            for t in tasks:  # type: ignore[attr-defined]
                _close_coroutine(t.get_coro())

    # ---- process faults ---------------------------------------------------------------------------

    def pause(self, loop: SimLoop) -> None:
        loop._paused = True

    def resume(self, loop: SimLoop) -> None:
        """Re-queues the paused loop's events, in the order they came due, at the current time."""
        loop._paused = False
        deferred, loop._deferred = loop._deferred, []
        for h in deferred:
            self._ready.append((loop, h))

    def kill(self, loop: SimLoop) -> None:
        """Discards the loop: its queued events are dropped as they come up, its tasks never run
        again and are kept referenced so that no finaliser runs them either."""
        if loop._dead:
            return
        loop._dead = True
        # the tasks first: a task that only a deferred event references sits in a reference cycle,
        # and a collection while they are listed would free it and run its finally blocks
        self._graveyard.append(list(asyncio.all_tasks(loop)))
        loop._deferred = []
        self._loops = [lp for lp in self._loops if not lp._dead]


def _report(h: asyncio.Handle, exc: BaseException) -> None:
    """What asyncio.Handle._run does with an exception from its callback: the loop's handler."""
    cb = format_helpers._format_callback_source(h._callback, h._args)  # type: ignore[attr-defined]
    context: dict[str, Any] = {"message": f"Exception in callback {cb}", "exception": exc, "handle": h}
    if h._source_traceback:  # type: ignore[attr-defined]
        context["source_traceback"] = h._source_traceback  # type: ignore[attr-defined]
    h._loop.call_exception_handler(context)  # type: ignore[attr-defined]


def _close_coroutine(coro: Any) -> None:
    """Closes a suspended coroutine whatever its `finally` blocks do (awaiting in one makes close()
    raise and leaves it suspended further on: close again)."""
    for _ in range(100):
        if getattr(coro, "cr_frame", None) is None and getattr(coro, "gi_frame", None) is None:
            return
        with contextlib.suppress(BaseException):  # whatever the dead code raises on its way out
            coro.close()


class SoonHandle(asyncio.Handle):
    """asyncio's Handle for call_soon, built without its debug-mode check (a call_soon per event)."""

    __slots__ = ()

    def __init__(self, callback: Callable[..., object], args: tuple[object, ...], loop: SimLoop,
                 context: contextvars.Context | None) -> None:
        self._callback = callback
        self._args = args
        self._loop = loop
        self._context = contextvars.copy_context() if context is None else context
        self._cancelled = False
        self._repr = None
        self._source_traceback = None


class KernelEvent:
    """A callback of the simulator itself (a packet arriving, a TCP timer): lighter than an
    asyncio.Handle, no context, and an exception in it propagates (it is a simulator bug)."""

    __slots__ = ("_args", "_callback", "_cancelled")
    _context = None  # what the Scheduler tells it from an asyncio.Handle by

    def __init__(self, callback: Callable[..., object], args: tuple[object, ...]) -> None:
        self._callback = callback
        self._args = args
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    def cancelled(self) -> bool:
        return self._cancelled

    def _run(self) -> None:
        self._callback(*self._args)


class SimLoop(asyncio.AbstractEventLoop):
    """One simulated process's event loop; `time()` is that process's clock."""

    def __init__(self, scheduler: Scheduler, name: str, offset: float = 0.0, drift: float = 0.0) -> None:
        self.scheduler = scheduler
        self.name = name
        self._offset = offset
        self._drift = drift
        self._set_at = scheduler.now
        self._paused = False
        self._dead = False
        self._exit_recorded = False
        self._busy_until = 0.0
        #: the clock was set since the process last woke (its timers are still armed by the old one)
        self._clock_moved = False
        self._spin_at = -1.0  # the instant of the callbacks counted in _spin_n
        self._spin_n = 0
        self._deferred: list[asyncio.Handle] = []
        self._debug = False
        self._task_factory: Any = None
        #: exceptions asyncio reported on this loop (unretrieved task errors, failed callbacks)
        self.errors: list[dict[str, Any]] = []
        scheduler._loops.append(self)

    def __repr__(self) -> str:
        return f"<SimLoop {self.name}{' dead' if self._dead else ''}{' paused' if self._paused else ''}>"

    # ---- clock --------------------------------------------------------------------------------------

    def _local_of(self, g: float) -> float:
        return g + self._offset + self._drift * (g - self._set_at)

    def _global_of(self, local: float) -> float:
        return (local - self._offset + self._drift * self._set_at) / (1.0 + self._drift)

    def global_now(self) -> float:
        """The global instant this process is at: now, or the end of its current charge."""
        b = self._busy_until
        n = self.scheduler.now
        return b if b > n else n

    def time(self) -> float:
        b = self._busy_until
        n = self.scheduler.now
        g = b if b > n else n
        if self._drift:
            return g + self._offset + self._drift * (g - self._set_at)
        return g + self._offset

    def set_clock(self, offset: float, drift: float = 0.0) -> None:
        """From now on local = global + offset + drift * (global - now): a jump by the change in
        offset, then a rate of 1 + drift.

        A sleeping process does not notice: as under libfaketime, whose step leaves the kernel's
        relative wait (epoll_wait's timeout) running, its timers keep the global instants they were
        armed for, and it reads the new clock when it next wakes (that timer or any input). Then
        every timer the new clock has made due fires, and the others are re-armed from it. So a step
        forward fires nothing at once, and a step back makes the timer that wakes the process sleep
        the size of the step again."""
        if drift <= -1.0:
            raise ValueError(f"drift {drift} would stop or reverse the clock")
        self._offset, self._drift, self._set_at = offset, drift, self.scheduler.now
        self._clock_moved = True

    @property
    def clock_offset(self) -> float:
        return self._offset

    @property
    def clock_drift(self) -> float:
        return self._drift

    def charge(self, seconds: float) -> None:
        """The process spends `seconds` blocked (an fsync): its clock moves on and its other
        callbacks wait until then."""
        if seconds > 0:
            self._busy_until = self.global_now() + seconds

    # ---- state --------------------------------------------------------------------------------------

    @property
    def dead(self) -> bool:
        return self._dead

    @property
    def paused(self) -> bool:
        return self._paused

    def is_running(self) -> bool:
        return not self._dead

    def is_closed(self) -> bool:
        return self._dead

    def close(self) -> None:
        self.scheduler.kill(self)

    def get_debug(self) -> bool:
        return self._debug

    def set_debug(self, enabled: bool) -> None:
        self._debug = enabled

    # ---- scheduling ---------------------------------------------------------------------------------

    def call_soon(self, callback: Callable[..., object], *args: Any,
                  context: contextvars.Context | None = None) -> asyncio.Handle:
        h = SoonHandle(callback, args, self, context)
        if not self._dead:
            s = self.scheduler
            b = self._busy_until
            if b > s.now:
                heapq.heappush(s._heap, (b, next(s._seq), self, h))
            else:
                s._ready.append((self, h))
        return h

    def call_soon_threadsafe(self, callback: Callable[..., object], *args: Any,
                             context: contextvars.Context | None = None) -> asyncio.Handle:
        return self.call_soon(callback, *args, context=context)

    def call_at(self, when: float, callback: Callable[..., object], *args: Any,
                context: contextvars.Context | None = None) -> asyncio.TimerHandle:
        h = asyncio.TimerHandle(when, callback, args, self, context)
        if not self._dead:
            s = self.scheduler
            g = when - self._offset if not self._drift else self._global_of(when)
            now = self.global_now()
            g = g + s.timer_slack if g > now else now
            h._scheduled = True
            heapq.heappush(s._heap, (g, next(s._seq), self, h))
        return h

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any,
                   context: contextvars.Context | None = None) -> asyncio.TimerHandle:
        return self.call_at(self.time() + delay, callback, *args, context=context)

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        self.scheduler.timer_cancelled()

    def create_future(self) -> asyncio.Future[Any]:
        return SimFuture(loop=self)  # type: ignore[no-any-return]

    def create_task(self, coro: Coroutine[Any, Any, T] | Generator[Any, None, T], *, name: str | None = None,
                    context: contextvars.Context | None = None) -> asyncio.Task[T]:
        if self._task_factory is not None:
            return self._task_factory(self, coro)  # type: ignore[no-any-return]
        return SimTask(coro, loop=self, name=name, context=context)  # type: ignore[arg-type]

    def set_task_factory(self, factory: Any) -> None:
        self._task_factory = factory

    def get_task_factory(self) -> Any:
        return self._task_factory

    def run_until_complete(self, future: Awaitable[T]) -> T:
        """Runs the whole simulation (every loop) until `future` is done."""
        return self.scheduler.run_until_complete(future, self)

    # ---- errors -------------------------------------------------------------------------------------

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        self.errors.append(context)

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        if not self._dead:
            self.errors.append(context)

    def set_exception_handler(self, handler: Any) -> None:
        raise NotImplementedError("the simulator records errors in SimLoop.errors")

    def get_exception_handler(self) -> Any:
        return None

    # ---- what a simulated process cannot do -------------------------------------------------------

    def add_signal_handler(self, sig: int, callback: Callable[..., object], *args: Any) -> None:
        raise NotImplementedError("no signals in the simulator")

    def remove_signal_handler(self, sig: int) -> bool:
        return False

    def run_forever(self) -> None:
        raise NotImplementedError("step the Scheduler instead")

    def stop(self) -> None:
        raise NotImplementedError("step the Scheduler instead")

    async def shutdown_asyncgens(self) -> None:
        return None

    async def shutdown_default_executor(self) -> None:
        return None

    def run_in_executor(self, executor: Any, func: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        raise NotImplementedError("no threads in the simulator")
