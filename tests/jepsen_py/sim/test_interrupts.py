"""A signal that lands inside a node's step is raised between two events: the step finishes first
(nothing half made), and the simulation stops before the next event, or as it returns."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator

import pytest

from jepsen_py.sim.interrupts import between_events
from jepsen_py.sim.loop import Scheduler, SimLoop


def _raise(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture()
def sigterm_raises() -> Iterator[None]:
    """SIGTERM handled as the CLI handles it: a KeyboardInterrupt."""
    old = signal.signal(signal.SIGTERM, _raise)
    yield
    signal.signal(signal.SIGTERM, old)


def test_a_signal_inside_a_step_is_raised_after_it(sigterm_raises: None) -> None:
    s = Scheduler(1)
    s.timer_slack = 0.0  # exact times
    lp = SimLoop(s, "p0")
    seen: list[str] = []

    async def node() -> None:
        for i in range(3):
            seen.append(f"before {i}")
            if i == 1:
                os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, inside the step
            seen.append(f"after {i}")
            await asyncio.sleep(1)

    with between_events(s), pytest.raises(KeyboardInterrupt):
        s.run_until_complete(node(), lp)
    assert seen == ["before 0", "after 0", "before 1", "after 1"]  # the step ran whole, no further
    assert s.now == 1.0


def test_a_signal_in_the_last_step_is_raised_as_the_simulation_returns(sigterm_raises: None) -> None:
    s = Scheduler(1)
    lp = SimLoop(s, "p0")

    async def node() -> str:
        await asyncio.sleep(1)
        os.kill(os.getpid(), signal.SIGTERM)
        return "done"

    with between_events(s), pytest.raises(KeyboardInterrupt):
        s.run_until_complete(node(), lp)


def test_outside_the_simulation_a_signal_is_raised_at_once(sigterm_raises: None) -> None:
    s = Scheduler(1)
    with between_events(s), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("not interrupted")
    assert signal.getsignal(signal.SIGTERM) is _raise  # the command's handler is back


def test_the_wall_limit_alarm_is_not_lost_in_code_that_swallows_what_it_raises() -> None:
    # A node's coroutine closed on a kill ignores whatever its dead code raises; an alarm landing
    # there used to vanish and the run went on to its end. Deferred to the next event, it stops it.
    from jepsen_py.sim.matrix import WallLimit, wall_limit

    s = Scheduler(1)
    lp = SimLoop(s, "p0")
    steps: list[int] = []

    async def node() -> None:
        for i in range(5):
            steps.append(i)
            if i == 1:
                with contextlib.suppress(BaseException):  # the alarm rings inside swallowing code
                    os.kill(os.getpid(), signal.SIGALRM)
            await asyncio.sleep(1)

    with wall_limit(3600), between_events(s), pytest.raises(WallLimit):
        s.run_until_complete(node(), lp)
    assert steps == [0, 1]
