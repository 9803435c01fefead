"""The simulator's event loop: virtual time, asyncio's primitives on it, process faults, determinism."""

from __future__ import annotations

import asyncio
import gc
import time

import pytest

from jepsen_py.sim.loop import NodeExit, Scheduler, SimDeadlock, SimLoop


def make(seed: int = 1, n: int = 1, slack: float = 0.0) -> tuple[Scheduler, list[SimLoop]]:
    s = Scheduler(seed)
    s.timer_slack = slack  # exact times, unless a test is about the slack
    return s, [SimLoop(s, f"p{i}") for i in range(n)]


def test_sleep_takes_virtual_time_not_wall_time() -> None:
    s, (lp,) = make()

    async def main() -> float:
        await asyncio.sleep(3600)
        return lp.time()

    t0 = time.monotonic()
    assert s.run_until_complete(main(), lp) == 3600
    assert s.now == 3600
    assert time.monotonic() - t0 < 60  # an hour asleep, were it real; a loaded machine's stall is not


def test_asyncio_primitives_work_on_the_loop() -> None:
    s, (lp,) = make()
    seen: list[object] = []

    async def child(d: float, v: str) -> str:
        await asyncio.sleep(d)
        return v

    async def main() -> None:
        ev = asyncio.Event()
        lp.call_later(1.0, ev.set)
        await ev.wait()
        seen.append(("event", lp.time()))
        assert await asyncio.gather(child(2, "a"), child(1, "b")) == ["a", "b"]
        seen.append(("gather", lp.time()))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(child(10, "x"), 0.5)
        seen.append(("wait_for", lp.time()))
        t1 = asyncio.ensure_future(child(1, "c"))
        t2 = lp.create_task(child(5, "d"))
        done, pending = await asyncio.wait({t1, t2}, return_when=asyncio.FIRST_COMPLETED)
        assert done == {t1} and pending == {t2}
        t2.cancel()
        seen.append(("wait", lp.time()))
        reader = asyncio.StreamReader()
        lp.call_later(0.25, reader.feed_data, b"hello\nworld")
        lp.call_later(0.5, reader.feed_eof)
        assert await reader.readline() == b"hello\n"
        assert await reader.read() == b"world"
        seen.append(("reader", lp.time()))
        sem = asyncio.Semaphore(1)
        async with sem:
            assert asyncio.current_task() is not None
        fut = lp.create_future()
        lp.call_soon(fut.set_result, 7)
        assert await fut == 7

    s.run_until_complete(main(), lp)
    assert seen == [("event", 1.0), ("gather", 3.0), ("wait_for", 3.5), ("wait", 4.5), ("reader", 5.0)]
    assert lp.errors == []


def test_same_time_events_run_in_the_order_they_were_scheduled() -> None:
    s, (lp,) = make()
    order: list[str] = []
    lp.call_later(1.0, order.append, "t1")
    lp.call_soon(order.append, "s1")
    lp.call_later(1.0, order.append, "t2")
    lp.call_soon(order.append, "s2")
    s.run_until_idle()
    assert order == ["s1", "s2", "t1", "t2"]


def test_a_cancelled_timer_never_runs() -> None:
    s, (lp,) = make()
    order: list[str] = []
    h = lp.call_later(1.0, order.append, "no")
    lp.call_later(2.0, order.append, "yes")
    h.cancel()
    s.run_until_idle()
    assert order == ["yes"]


def test_paused_loop_runs_its_due_events_on_resume_in_order_others_go_on() -> None:
    s, (a, b) = make(n=2)
    log: list[tuple[str, float]] = []
    for t in (1.0, 2.0, 3.0):
        a.call_later(t, lambda t=t: log.append((f"a{t:.0f}", s.now)))
        b.call_later(t, lambda t=t: log.append((f"b{t:.0f}", s.now)))
    s.run_until(0.5)
    s.pause(a)
    s.run_until(2.5)
    assert log == [("b1", 1.0), ("b2", 2.0)]
    s.resume(a)
    s.run_until(10)
    assert log[2:] == [("a1", 2.5), ("a2", 2.5), ("a3", 3.0), ("b3", 3.0)]


def test_killed_loop_runs_nothing_more_and_no_finally_block() -> None:
    s, (a, b) = make(n=2)
    flags: list[str] = []

    async def victim() -> None:
        try:
            await asyncio.sleep(10)
            flags.append("woke")
        finally:
            flags.append("finally")

    a.create_task(victim())
    b.call_later(5, flags.append, "other")
    s.run_until(1)
    s.kill(a)
    a.call_soon(flags.append, "after kill")
    s.run_until(20)
    assert flags == ["other"]
    s.close()  # the end of the simulation: what is left is closed for good


def test_killing_a_paused_loop_runs_no_finally_block_of_a_task_only_its_deferred_events_held() -> None:
    # a paused node's due wake-ups wait in its deferred list; killing it must not free the tasks they
    # alone reference (a freed task's coroutine is closed, and its finally blocks run: kill -9 runs none)
    s, (a,) = make(n=1)
    flags: list[str] = []

    async def victim() -> None:
        try:
            await asyncio.sleep(1)
            flags.append("woke")
        finally:
            flags.append("finally")

    a.create_task(victim())
    s.run_until(0.5)
    s.pause(a)
    s.run_until(2)  # the wake-up came due while paused: only the deferred list holds the task now
    threshold = gc.get_threshold()
    gc.set_threshold(1)  # a collection at any allocation inside kill(), as one may happen by chance
    try:
        s.kill(a)
    finally:
        gc.set_threshold(*threshold)
    s.run_until(5)
    assert flags == []
    s.close()


def test_clock_offset_and_drift_move_the_loops_time_and_timers() -> None:
    s, (lp,) = make()
    fired: list[tuple[float, float]] = []
    lp.call_at(10.0, lambda: fired.append((s.now, lp.time())))
    s.run_until(2.0)
    lp.set_clock(5.0)  # the clock jumps 5 s ahead: the timer at local 10 fires at global 5
    assert lp.time() == 7.0
    lp.call_at(8.0, lambda: fired.append((s.now, lp.time())))  # armed by the new clock: global 3
    s.run_until(20.0)
    # the wake at global 3 re-arms the timer armed before the step by the new clock
    assert fired == [(3.0, 8.0), (5.0, 10.0)]
    lp.set_clock(5.0, drift=1.0)  # from global 20: local runs twice as fast
    assert lp.time() == 25.0
    lp.call_later(4.0, lambda: fired.append((s.now, lp.time())))
    s.run_until(30.0)
    assert fired[2] == (22.0, 29.0)
    with pytest.raises(ValueError):
        lp.set_clock(0.0, drift=-1.0)


def test_a_step_forward_does_not_wake_a_sleeping_loop() -> None:
    # libfaketime on Docker, measured: a step of +3 s one second into an asyncio sleep of 5 s left
    # the process asleep until 5 s real; it then ran the timer of 8 s local (due by the stepped
    # clock) in the same wake, and its sleep of 9 s ended at 6 s real.
    s, (lp,) = make()
    fired: list[tuple[str, float]] = []
    for name, when in (("5", 5.0), ("8", 8.0), ("9", 9.0)):
        lp.call_at(when, lambda name=name: fired.append((name, s.now)))
    s.run_until(1.0)
    lp.set_clock(3.0)
    s.run_until(20.0)
    assert fired == [("5", 5.0), ("8", 5.0), ("9", 6.0)]


def test_clock_going_back_delays_timers() -> None:
    s, (lp,) = make()
    fired: list[float] = []
    lp.call_at(3.0, lambda: fired.append(s.now))
    s.run_until(1.0)
    lp.set_clock(-2.0)
    s.run_until(10.0)
    assert fired == [5.0]


def test_charged_time_delays_the_loops_next_callbacks_only() -> None:
    s, (a, b) = make(n=2)
    log: list[tuple[str, float, float]] = []

    def fsync() -> None:
        a.charge(0.010)
        log.append(("a-after-fsync", s.now, a.time()))
        a.call_soon(lambda: log.append(("a-next", s.now, a.time())))

    a.call_later(1.0, fsync)
    b.call_later(1.005, lambda: log.append(("b", s.now, b.time())))
    s.run_until(2.0)
    assert log == [("a-after-fsync", 1.0, 1.01), ("b", 1.005, 1.005), ("a-next", 1.01, 1.01)]


def test_exit_crashes_only_the_calling_process() -> None:
    s, (a, b) = make(n=2)
    flags: list[str] = []
    exits: list[tuple[str, int]] = []
    s.on_exit = lambda lp, code: exits.append((lp.name, code))

    async def fatal() -> None:
        await asyncio.sleep(1)
        raise NodeExit(a, 70)

    a.create_task(fatal())
    a.call_later(2, flags.append, "a later")
    b.call_later(3, flags.append, "b later")
    s.run_until(5)
    assert a.dead and not b.dead
    assert flags == ["b later"]
    assert exits == [("p0", 70)]
    assert s.exits == [("p0", 70, 1.0)]


def test_busy_loop_at_one_instant_is_charged_cpu_time_and_ends() -> None:
    s, (lp,) = make()
    deadline = 0.0005

    async def spin() -> int:
        n = 0
        while lp.time() < deadline:  # a loop that only ends when the clock moves
            await asyncio.sleep(0)
            n += 1
        return n

    n = s.run_until_complete(spin(), lp)
    assert n >= Scheduler.SPIN_STEPS
    assert lp.time() >= deadline


def test_timers_fire_a_timer_slack_late_so_a_clock_paced_ticker_never_spins() -> None:
    s, (lp,) = make(slack=Scheduler.TIMER_SLACK_S)
    fired: list[float] = []
    lp.call_later(1.0, lambda: fired.append(s.now))
    s.run_until(2.0)
    assert fired == [1.0 + Scheduler.TIMER_SLACK_S]

    interval = 0.05
    ticks = 0

    async def ticker() -> None:  # the node's ticker: sleep until the next tick is due, count ticks
        nonlocal ticks
        last = lp.time()
        while ticks < 200:
            await asyncio.sleep(max(0.0, last + interval - lp.time()))
            due = int((lp.time() - last) / interval)
            ticks += due
            last += due * interval

    steps = s.steps
    s.run_until_complete(ticker(), lp)
    assert s.steps - steps < 2 * 200 + 10
    assert lp.time() < 2.0 + 200 * interval + 0.01


def test_run_until_complete_reports_a_deadlock() -> None:
    s, (lp,) = make()
    with pytest.raises(SimDeadlock):
        s.run_until_complete(lp.create_future(), lp)


def test_same_seed_same_schedule_different_seed_different() -> None:
    def trace(seed: int) -> list[tuple[str, float]]:
        s, loops = make(seed, n=3)
        out: list[tuple[str, float]] = []

        async def worker(lp: SimLoop) -> None:
            for _ in range(20):
                await asyncio.sleep(s.rng.expovariate(10))
                out.append((lp.name, s.now))

        for lp in loops:
            lp.create_task(worker(lp))
        s.run_until_idle()
        return out

    assert trace(3) == trace(3)
    assert trace(3) != trace(4)


def test_sets_of_tasks_iterate_in_creation_order_every_run() -> None:
    def order() -> list[int]:
        s, (lp,) = make()
        made: list[asyncio.Task[None]] = []

        async def main() -> list[int]:
            tasks = set()
            for _ in range(50):
                t = lp.create_task(asyncio.sleep(1))
                made.append(t)
                tasks.add(t)
            return [made.index(t) for t in tasks]

        out = s.run_until_complete(main(), lp)
        s.run_until_idle()
        return out

    assert order() == order()


def test_sets_of_futures_iterate_the_same_way_every_run() -> None:
    def order() -> list[int]:
        _s, (lp,) = make()
        made = [lp.create_future() for _ in range(50)]
        spread = [lp.create_future() for _ in range(5000)]  # allocations between them vary the addresses
        picked = made[::-1] + spread[::997]
        return [picked.index(f) for f in set(picked)]

    first = order()
    assert first == order() == order()
    assert sorted(first) == list(range(len(first)))


def test_a_failing_callback_is_reported_on_its_loop_and_the_simulation_goes_on() -> None:
    s, (lp,) = make()
    ran: list[str] = []

    def boom() -> None:
        raise ValueError("boom")

    lp.call_soon(boom)
    lp.call_later(1.0, boom)
    lp.call_later(2.0, ran.append, "after")
    s.run_until_idle()
    assert ran == ["after"]
    assert [type(e["exception"]) for e in lp.errors] == [ValueError, ValueError]
    for e in lp.errors:
        assert e["message"].startswith("Exception in callback ") and "boom()" in e["message"]
