"""A signal the CLI turns into an exception is never lost, not even when it lands inside a weakref
callback or a __del__, where Python prints an exception and drops it."""

from __future__ import annotations

import signal
import sys
import time
import weakref

import pytest

from jepsen_py.lifetime import signals_raise


class _Thing:
    pass


def _signal_inside_a_weakref_callback(calls: list[str]) -> None:
    def callback(_ref: object) -> None:
        signal.raise_signal(signal.SIGTERM)
        calls.append("callback ran on")  # the handler runs here, inside the callback

    thing = _Thing()
    ref = weakref.ref(thing, callback)
    del thing  # the callback runs now, from the garbage collector's side of Python
    calls.append(f"after the callback, ref {ref() is None}")


def test_a_signal_swallowed_by_a_weakref_callback_is_delivered_again(
        capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[str] = []
    hook = sys.unraisablehook
    with (signals_raise(lambda signum: KeyboardInterrupt(f"signal {signum}")) as received,
          pytest.raises(KeyboardInterrupt, match=f"signal {int(signal.SIGTERM)}")):
        _signal_inside_a_weakref_callback(calls)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the signal comes again within milliseconds
            time.sleep(0.01)
    # the exception left the callback (Python dropped it there), and came again after it
    assert calls[0] != "callback ran on"
    assert received == [signal.SIGTERM]
    assert "Exception ignored" not in capsys.readouterr().err
    assert sys.unraisablehook is hook


def test_other_unraisable_exceptions_still_reach_the_previous_hook() -> None:
    seen: list[BaseException | None] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda info: seen.append(info.exc_value)
    try:
        with signals_raise(lambda signum: KeyboardInterrupt(str(signum))):
            class Broken:
                def __del__(self) -> None:
                    raise ValueError("from __del__")

            Broken()
    finally:
        sys.unraisablehook = hook
    assert [type(e) for e in seen] == [ValueError]
