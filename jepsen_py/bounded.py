"""Calling code the gate does not own (a plugin's hook, client, checker) so that its mistakes stay
its own: a call that never returns is abandoned after a deadline, and a KeyboardInterrupt or
SystemExit it raises comes back as an ordinary error (it ran on a thread of ours, and signals reach
only the main thread, so it is the code's own doing), while a real Ctrl-C still stops the wait.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from jepsen_py.errors import describe

log = logging.getLogger(__name__)


def said(e: BaseException) -> str:
    """What an exception a plugin raised says, on one line (errors.describe), even when its own
    str() raises: then its type alone."""
    try:
        return describe(e)
    except Exception:
        return f"{type(e).__name__} (whose message could not be read)"


class TimedOut(Exception):
    """The call did not return within its bound; the thread it ran on is abandoned (Python cannot
    stop a thread; a daemon one does not keep the process alive)."""


class Escaped(Exception):
    """The call raised KeyboardInterrupt, SystemExit or another BaseException that is no Exception,
    on a thread of ours: the code's own doing, an error like any other, never a stop."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(said(cause))
        self.cause = cause


def call_bounded(fn: Callable[..., Any], *args: Any, timeout_s: float, name: str) -> Any:
    """fn(*args) on a daemon thread of its own: its value, or what it raised (an Exception as it
    is, any other BaseException as Escaped); TimedOut after `timeout_s`, the thread named in
    jepsen.log and left behind. A real Ctrl-C stops the wait, in the caller's thread."""
    box: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            box.append(fn(*args))
        except BaseException as e:  # everything it raises is the caller's to judge
            failed.append(e)

    t = threading.Thread(target=run, name=name, daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        log.info("%s did not return within %g s; its thread %r is left behind", name, timeout_s, t.name)
        raise TimedOut(f"{name} did not return within {timeout_s:g} s (left behind)")
    if failed:
        e = failed[0]
        raise e if isinstance(e, Exception) else Escaped(e)
    return box[0]
