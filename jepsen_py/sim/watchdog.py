"""A watchdog for node code that never yields to the simulator.

In simulation a node's code takes no virtual time, so a node caught in an endless loop (a Ready loop
that can never catch up after a WAL recovery read back two versions of an entry, say) holds the one
thread every node shares: the run, and the search around it, would hang for good. On a real machine
that node spins at full CPU and stops answering, and an operator's liveness probe kills it.

The watchdog plays that probe. A CPU-time timer (ITIMER_VIRTUAL, so a loaded machine does not set it
off) samples which simulator step is running; when the same step has run for `limit_s` CPU seconds,
it raises NodeLivelock inside it. Raised in node code, the node's own fail-stop path takes it (it
logs the traceback and exits), so the run goes on and its checkers see a node that crashed. Outside
a simulator step (setup, checkers) it never fires.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePath
from types import FrameType

# Node code handles one message, timer or Ready batch per step: microseconds to a few milliseconds,
# a snapshot or a long WAL recovery well under a second. Seconds of CPU in one step is a livelock.
LIMIT_S = 2.0
TICK_S = 0.25
_STEP = ("_step", ("sim", "loop.py"))


class NodeLivelock(Exception):
    """Raised inside a simulator step that ran for `limit_s` CPU seconds without returning."""


def _running_step(frame: FrameType | None) -> FrameType | None:
    """The simulator's Scheduler._step frame on the interrupted stack, if any."""
    name, tail = _STEP
    while frame is not None:
        code = frame.f_code
        if code.co_name == name and PurePath(code.co_filename).parts[-2:] == tail:
            return frame
        frame = frame.f_back
    return None


@contextmanager
def livelock_watchdog(limit_s: float = LIMIT_S, tick_s: float = TICK_S) -> Iterator[None]:
    """Arms the watchdog for the block (a no-op off the main thread or without setitimer)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    seen: list[FrameType | None] = [None]
    since = [0.0]

    def on_tick(signum: int, frame: FrameType | None) -> None:
        step = _running_step(frame)
        now = time.process_time()
        if step is None or step is not seen[0]:
            seen[0], since[0] = step, now
            return
        if now - since[0] >= limit_s:
            seen[0] = None
            raise NodeLivelock(f"a simulated node ran {now - since[0]:.1f} CPU s without yielding: "
                               "an endless loop, stopped as a liveness probe would stop it")

    previous = signal.signal(signal.SIGVTALRM, on_tick)
    signal.setitimer(signal.ITIMER_VIRTUAL, tick_s, tick_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0, 0)
        signal.signal(signal.SIGVTALRM, previous)
        seen[0] = None
