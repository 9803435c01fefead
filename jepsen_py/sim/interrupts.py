"""Ctrl-C, SIGTERM and the matrix's wall-limit alarm reach a simulated run between two events,
never inside one.

Python runs a signal handler between any two bytecodes. Inside the simulator that can be halfway
through a node's step: a coroutine made but not yet wrapped in its task, a task made but not yet
registered. Such a coroutine is referenced by nothing the simulator can close, so it is finalised
later, at an arbitrary moment, and Python prints a warning for each ("never awaited", "coroutine
ignored GeneratorExit"); and an exception raised there can be swallowed for good (by a finaliser,
or by the close of a killed node's coroutine, which ignores whatever the dead code raises). So while
a simulation steps, the handler the command installed (the one that raises KeyboardInterrupt, or the
matrix's SIGALRM that raises its WallLimit) is deferred to the next event, where nothing is half made.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from jepsen_py.lifetime import runs_inside
from jepsen_py.sim.loop import Scheduler

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)


def _stepping(frame: FrameType | None) -> bool:
    """Whether `frame` (where the signal landed) is inside one of the scheduler's events."""
    return runs_inside(frame, Scheduler._step.__code__)


@contextlib.contextmanager
def between_events(scheduler: Scheduler) -> Iterator[None]:
    """While inside, SIGINT, SIGTERM and SIGALRM handlers that raise (Python's own for Ctrl-C, the
    CLI's for SIGTERM, the matrix's wall limit) act between two of `scheduler`'s events. A signal
    left at its default or ignored is left so; outside the main thread, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}
    for signum in SIGNALS:
        prev = signal.getsignal(signum)
        if not callable(prev):
            continue

        def handler(sig: int, frame: FrameType | None, prev: Any = prev) -> None:
            if _stepping(frame):
                scheduler.interrupt_next(lambda: prev(sig, None))
            else:
                prev(sig, frame)

        previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, prev in previous.items():
            signal.signal(signum, prev)
