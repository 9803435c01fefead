"""Worker processes die with the process that started them.

A pool worker outlives a parent that was killed (SIGKILL, an OOM kill) or that exited without
terminating its pool: it is re-parented and goes on searching at full CPU for nobody. On Linux the
kernel can send a signal to a process when its parent dies (prctl PR_SET_PDEATHSIG); elsewhere this
is a no-op and only an orderly shutdown (Pool.terminate) ends the workers.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> bool:
    """Asks the kernel to send `sig` to this process when its parent dies; exits at once if the
    parent (`parent_pid`, read before the fork) is already gone. Returns whether the kernel took it.

    Call it first thing in a worker (a pool's initializer): the parent may die between the fork
    and this call, and then the signal would never come, hence the check of getppid afterwards."""
    taken = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            taken = libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
        except (OSError, AttributeError):
            taken = False
    if os.getppid() != parent_pid:
        os._exit(1)
    return taken


@contextlib.contextmanager
def signals_raise(on_signal: Callable[[int], BaseException],
                  signals: tuple[int, ...] = (signal.SIGTERM,)) -> Iterator[list[int]]:
    """While inside, each of `signals` raises what `on_signal(signum)` returns, in the main thread,
    so `finally` blocks and context managers (a pool's terminate, a summary written) still run
    instead of the process vanishing mid-work. Yields the signals received, in order (a caller
    whose exception was wrapped on its way up still knows which signal it was). Elsewhere than
    the main thread, nothing changes."""
    import threading

    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    raised: list[tuple[BaseException, int]] = []  # the handler's latest exceptions, to know them again

    # A signal that lands while Python runs a __del__ or a weakref callback (the garbage collector's
    # work, at any moment) raises there, and Python prints the exception and drops it: the signal
    # would be lost. Such a signal is sent again a moment later, from another thread, so that it
    # lands once the callback has returned.
    def again(signum: int) -> None:
        main = threading.main_thread().ident
        if main is not None:
            timer = threading.Timer(0.002, signal.pthread_kill, (main, signum))
            timer.daemon = True
            timer.start()

    def handler(signum: int, frame: Any) -> None:
        if runs_inside(frame, unraisable.__code__):
            again(signum)  # raising here would be dropped too
            return
        received.append(signum)
        exc = on_signal(signum)
        raised[:] = [*raised[-7:], (exc, signum)]
        raise exc

    previous_hook = sys.unraisablehook

    def unraisable(info: Any) -> None:
        for exc, signum in raised:
            if info.exc_value is exc:
                raised.remove((exc, signum))
                if received and received[-1] == signum:
                    received.pop()  # the handler appends it again
                again(signum)
                return
        previous_hook(info)

    old = {s: signal.signal(s, handler) for s in signals}
    sys.unraisablehook = unraisable
    try:
        yield received
    finally:
        if sys.unraisablehook is unraisable:
            sys.unraisablehook = previous_hook
        for s, h in old.items():
            signal.signal(s, h)


def runs_inside(frame: Any, code: Any) -> bool:
    """Whether `frame` (where a signal landed) or one of its callers runs `code`."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def signal_name(signum: int) -> str:
    """SIGTERM, SIGINT, ... (the number itself for one Python has no name for)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)
