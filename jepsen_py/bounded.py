"""Calling code the gate does not own (a plugin's checker) so that its mistakes stay its own: a call
that never returns is abandoned after a deadline, and a KeyboardInterrupt or SystemExit it raises
is told apart from one a real signal caused, which must still stop the run.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TimedOut(Exception):
    """The call did not return within its deadline; its thread was abandoned."""


@contextlib.contextmanager
def real_signals() -> Iterator[list[int]]:
    """While inside, SIGINT and SIGTERM are recorded (then handled as before: Ctrl-C still raises
    KeyboardInterrupt), so a KeyboardInterrupt or SystemExit that escapes the block can be known
    as a signal's or as the code's own. Signals reach only the main thread; elsewhere nothing is
    recorded, and none can arrive."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {s: signal.getsignal(s) for s in _SIGNALS}

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)
        old = previous.get(signum)
        if callable(old):
            old(signum, frame)
        elif old == signal.SIG_DFL:  # what the default would have done, once this one is gone
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    for s in _SIGNALS:
        signal.signal(s, handler)
    try:
        yield received
    finally:
        for s, old in previous.items():
            signal.signal(s, old if old is not None else signal.SIG_DFL)


def call_bounded(fn: Callable[..., Any], *args: Any, timeout_s: float, name: str) -> Any:
    """fn(*args) in a daemon thread: its value, or whatever it raised (any BaseException,
    re-raised here); TimedOut after `timeout_s`, the thread left behind (named in one log line:
    Python cannot stop a thread, and a daemon one does not keep the process alive)."""
    box: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            box.append(fn(*args))
        except BaseException as e:  # everything it raises is the caller's to judge
            failed.append(e)

    t = threading.Thread(target=run, name=f"bounded {name}", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        log.warning("%s did not return within %g s; its thread is abandoned", name, timeout_s)
        raise TimedOut(f"did not return within {timeout_s:g} s")
    if failed:
        raise failed[0]
    return box[0]
