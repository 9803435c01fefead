"""The livelock watchdog: a simulator step that never returns is stopped, anything else is left be."""

from __future__ import annotations

import time

from jepsen_py.explore.watchdog import NodeLivelock, livelock_watchdog
from jepsen_py.sim.loop import Scheduler, SimLoop


def test_an_endless_step_is_stopped_and_the_simulation_goes_on() -> None:
    sched = Scheduler(seed=1)
    loop = SimLoop(sched, "n1")
    done: list[str] = []

    def spin() -> None:
        while True:
            pass

    loop.call_soon(spin)
    loop.call_later(1.0, lambda: done.append("after"))
    started = time.process_time()
    with livelock_watchdog(limit_s=0.5, tick_s=0.05):
        sched.run_until_idle()
    assert time.process_time() - started < 10.0
    assert done == ["after"], "the simulation went on after the stuck step was stopped"
    assert any(isinstance(e.get("exception"), NodeLivelock) for e in loop.errors), loop.errors


def test_busy_code_outside_a_simulator_step_is_not_stopped() -> None:
    with livelock_watchdog(limit_s=0.2, tick_s=0.05):
        end = time.process_time() + 0.6
        n = 0
        while time.process_time() < end:
            n += 1
    assert n > 0
