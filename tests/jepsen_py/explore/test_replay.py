"""Recording and replaying: the replay generators hand out a schedule's ops at their offsets, and a
recorded run replays as the same ops at the same moments."""

from __future__ import annotations

import random

from jepsen_py.checkers.crash import CrashChecker

from jepsen_py import generator as gen
from jepsen_py.explore.replay import (
    REAL_MARGIN_S,
    ClientReplay,
    FinalReplay,
    NemesisReplay,
    PhaseClock,
    Recorder,
    Tape,
    UntilPhaseEnd,
    for_real_backend,
    watch_after_heal,
    watch_after_heal_s,
)
from jepsen_py.explore.schedule import NEMESIS_THREAD, Event, Schedule
from jepsen_py.explore.space import Config, nemesis_events
from jepsen_py.history import Op


def _schedule() -> Schedule:
    cfg = Config(workload="offsets", families=("kill", "partition"), shapes=("leader",), targets=("one",),
                 interval=2.0, mode="random", read_mode="read-index", node_count=3, time_limit=12.0, seed=9)
    clients = [Event(0.5 * i, i % 3, "write" if i % 2 else "read", key=f"k{i % 2}", value=i)
               for i in range(20)]
    return Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=9, time_limit=12.0, concurrency=3,
                    events=nemesis_events(cfg) + clients,
                    final=[Event(0.0, 0, "read", key="k0", node=n) for n in ("n1", "n2", "n3")])


def test_replay_emits_every_op_at_its_offset_after_a_late_start() -> None:
    s = _schedule()
    clock = PhaseClock()
    main = gen.time_limit(s.time_limit, gen.nemesis(NemesisReplay(s, clock), ClientReplay(s.events, clock)))
    ops = gen.simulate([gen.sleep(5.0), main], concurrency=3, nemesis_thread=True, latency=0.01)
    got = [(round(o.time - 5.0, 6), o.thread if isinstance(o.thread, int) else NEMESIS_THREAD, o.template.f,
            o.template.key, o.template.value) for o in ops]
    want = [(e.at, e.thread, e.f, e.key, e.value) for e in s.events]
    assert sorted(got, key=str) == sorted(want, key=str)


def test_a_busy_worker_takes_its_next_op_late_but_in_order() -> None:
    events = [Event(0.0, 0, "write", key="a", value=1), Event(0.1, 0, "write", key="a", value=2)]
    clock = PhaseClock()
    ops = gen.simulate(ClientReplay(events, clock), concurrency=1, latency=1.0)
    assert [(o.time, o.template.value) for o in ops] == [(0.0, 1), (1.0, 2)]


def test_final_replay_hands_out_every_read_once() -> None:
    s = _schedule()
    ops = gen.simulate(gen.clients(FinalReplay(s.final)), concurrency=2, latency=0.1)
    assert [(o.template.key, o.template.node) for o in ops] == [("k0", n) for n in ("n1", "n2", "n3")]


def test_recorded_run_replays_as_the_same_ops_at_the_same_offsets() -> None:
    rng_ops = gen.rate(20, gen.mix(
        lambda ctx: {"f": "read", "key": f"k{ctx.rng.randrange(3)}"},
        lambda ctx: {"f": "write", "key": f"k{ctx.rng.randrange(3)}", "value": ctx.rng.randrange(1000)},
    ))
    nemesis_ops = gen.cycle([gen.sleep(1.5), {"f": "kill", "value": "one"}, gen.sleep(1.5), {"f": "start"}])
    clock, tape = PhaseClock(), Tape()
    recorded = gen.time_limit(8.0, gen.nemesis(Recorder(nemesis_ops, clock, tape),
                                               Recorder(rng_ops, clock, tape)))
    first = gen.simulate([gen.sleep(2.0), recorded], concurrency=4, nemesis_thread=True, seed=1,
                         latency=0.01)
    s = Schedule(workload="w", nodes=["n1"], seed=1, time_limit=8.0, concurrency=4, events=tape.events)
    clock2 = PhaseClock()
    again = gen.simulate([gen.sleep(3.0), gen.time_limit(8.0, gen.nemesis(NemesisReplay(s, clock2),
                                                                          ClientReplay(s.events, clock2)))],
                         concurrency=4, nemesis_thread=True, seed=2,
                         latency=0.01)

    def view(ops: list[gen.SimOp], start: float) -> list[tuple[float, str, str, object, object]]:
        return sorted((round(o.time - start, 6), str(o.thread), o.template.f, o.template.key,
                       o.template.value) for o in ops)

    assert len(first) > 50
    assert view(first, 2.0) == view(again, 3.0)
    assert any(e.is_nemesis for e in tape.events)


def test_recorder_shares_its_tape_across_fresh_copies() -> None:
    clock, tape = PhaseClock(), Tape()
    rec = Recorder(gen.lift({"f": "read", "key": "k"}), clock, tape)
    copy = rec.fresh()
    gen.simulate(gen.clients(copy), concurrency=1)
    assert copy.tape is tape and [e.f for e in tape.events] == ["read"]
    assert random.Random(0)  # deterministic seeds only in this module


def test_a_replay_starting_when_the_recording_did_uses_the_exact_times() -> None:
    # 0.1 + 0.7 is not 0.8 in floating point: start + offset would miss the recorded moment
    events = [Event(0.7, 0, "read", key="k", t=0.1 + 0.7)]
    exact = gen.simulate([gen.sleep(0.1), ClientReplay(events, PhaseClock(recorded_t0=0.1))], concurrency=1)
    assert [o.time for o in exact] == [0.1 + 0.7]
    moved = gen.simulate([gen.sleep(0.2), ClientReplay(events, PhaseClock(recorded_t0=0.1))], concurrency=1)
    assert [round(o.time, 9) for o in moved] == [0.9]


def test_a_worker_with_nothing_left_waits_instead_of_spinning() -> None:
    class Counting(ClientReplay):
        calls = 0

        def op(self, ctx: gen.Context) -> gen.Step:
            Counting.calls += 1
            return super().op(ctx)

    # worker 1 is done at once; worker 0's second op is due while its first (10 s) is still running
    events = [Event(0.0, 0, "write", key="a", value=1), Event(0.5, 0, "write", key="a", value=2),
              Event(0.0, 1, "read", key="a")]
    ops = gen.simulate(gen.time_limit(30.0, Counting(events, PhaseClock(), end=30.0)), concurrency=2,
                       latency=lambda t, r: 10.0 if t.value == 1 else 0.01)
    assert [(o.time, o.template.f) for o in ops] == [(0.0, "write"), (0.0, "read"), (10.0, "write")]
    assert Counting.calls < 20
    # asked directly, as an interpreter that sleeps until `until` does: worker 1 must not be told to
    # come back now (a wait of nothing, asked again and again while worker 0's op runs)
    replay = ClientReplay(events, PhaseClock(), end=30.0)
    rng = random.Random(0)
    for thread, now in ((0, 0.0), (1, 0.0)):
        assert isinstance(replay.op(gen.Context(now, thread, thread, rng, (0, 1))), gen.Template)
    step = replay.op(gen.Context(3.0, 1, 1, rng, (0, 1), busy={0}))
    assert isinstance(step, gen.Pending) and step.until == 30.0


def test_the_recorded_waits_are_told_again_in_order() -> None:
    inner = gen.rate(10, gen.repeat({"f": "read", "key": "k"}))
    clock, tape = PhaseClock(), Tape()
    rec = Recorder(inner, clock, tape, rng=random.Random(4))
    gen.simulate(gen.time_limit(3.0, rec), concurrency=2, latency=0.001)
    e = next(ev for ev in tape.events if ev.w)
    assert e.t is not None and e.w is not None
    # the worker's only op, replayed in a phase that starts when the recording's did
    replay = ClientReplay([e], PhaseClock(recorded_t0=clock.t0), end=3.0)
    rng = random.Random(0)
    asks = [replay.op(gen.Context(clock.t0 or 0.0, e.thread, e.thread, rng, (e.thread,))) for _ in e.w]
    assert [a.until for a in asks if isinstance(a, gen.Pending)] == list(e.w)
    done = replay.op(gen.Context(e.t, e.thread, e.thread, rng, (e.thread,)))
    assert isinstance(done, gen.Template) and done.f == "read"


def _late_fault() -> Schedule:
    # zombie-leader's shrunk schedule as explore wrote it: one leader-clock fault 12 s into a 15 s
    # run, never stopped, and two clients on three nodes
    return Schedule(workload="topics", nodes=["n1", "n2", "n3"], seed=854001193, time_limit=15.0,
                    concurrency=2, bugs=["zombie-leader"], anomaly="stale-read", options={"rate": 100.0},
                    events=[Event(12.0, NEMESIS_THREAD, "start-leader-clock"),
                            Event(14.4, 1, "create", key="topic-28", value={"partitions": 2, "rf": 3}),
                            Event(14.6, 0, "describe", key="topic-28")])


def test_a_real_backend_replay_keeps_a_margin_after_the_last_fault() -> None:
    s = _late_fault()
    real = for_real_backend(s)
    # the fault lands seconds late on Docker: the phase may outlast it by the margin and more
    assert real.time_limit >= 12.0 + REAL_MARGIN_S + 5.0
    assert real.nemesis_events == s.nemesis_events and real.client_events == s.client_events
    # the recorded leader had a client; on Docker any node may lead, so every node gets several
    # (some may sit in writes the cut-off node cannot commit)
    assert real.concurrency == 12
    assert (s.time_limit, s.concurrency) == (15.0, 2)  # the schedule itself is left as it was


def test_a_real_backend_replay_keeps_more_clients_than_nodes_and_a_schedule_without_faults() -> None:
    s = _schedule()
    many = s.with_events(s.events, time_limit=40.0, concurrency=16)
    assert for_real_backend(many).concurrency == 16 and for_real_backend(many).time_limit >= 40.0
    # no fault: the anomaly came from the recorded client ops alone; they are replayed as they were,
    # by as many clients (one more could get through where the recorded ones were refused)
    quiet = s.with_events(s.client_events, time_limit=0.2, concurrency=3)
    assert for_real_backend(quiet).concurrency == 3
    assert for_real_backend(quiet).time_limit == 0.2 + REAL_MARGIN_S


def test_a_real_replay_without_faults_hands_out_every_recorded_op_however_late() -> None:
    # leader-on-follower's shrunk schedule: one commit 0.0987 s into a 0.1 s phase; on Docker the
    # worker woke too late and the phase ended with no client op at all
    s = Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=1, time_limit=0.1, concurrency=1,
                 events=[Event(0.0, 0, "fetch", key="a"), Event(0.0987, 0, "commit", key="a", value=2)])

    def ops(limit: float) -> list[tuple[float, str]]:
        replay = ClientReplay(s.events, PhaseClock(), end=limit)
        done = gen.simulate(gen.time_limit(limit, gen.clients(replay)), latency=0.15)
        return [(round(o.time, 6), o.template.f) for o in done]

    assert ops(s.time_limit) == [(0.0, "fetch")]
    # the commit is handed out when its worker is free, and then the phase ends, long before the cap
    assert ops(for_real_backend(s).time_limit) == [(0.0, "fetch"), (0.15, "commit")]


def test_a_real_replay_holds_a_fault_window_as_long_as_recorded_after_a_slow_start() -> None:
    n = NEMESIS_THREAD
    s = Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=1, time_limit=20.0, concurrency=1,
                 events=[Event(1.0, n, "kill", value="leader"), Event(3.0, n, "start"),
                         Event(4.0, n, "pause", value="one"), Event(4.5, n, "resume")])

    def times(margin: float | None) -> list[tuple[str, float]]:
        clock = PhaseClock()
        # the kill takes 1.5 s to take effect, as a docker exec on a loaded machine can
        ops = gen.simulate(gen.time_limit(20.0, gen.nemesis(NemesisReplay(s, clock, margin=margin))),
                           nemesis_thread=True, latency=lambda t, r: 1.5 if t.f == "kill" else 0.1)
        return [(o.template.f, round(o.time, 6)) for o in ops]

    assert times(None) == [("kill", 1.0), ("start", 3.0), ("pause", 4.0), ("resume", 4.5)]
    # the node stays down 2 s from when the kill was done (2.5 s), not 0.5 s; later gaps are kept
    assert times(0.0) == [("kill", 1.0), ("start", 4.5), ("pause", 5.6), ("resume", 6.2)]


def test_a_real_replay_runs_its_clients_the_margin_after_the_last_fault_took_effect() -> None:
    s = _late_fault()
    cap = for_real_backend(s).time_limit

    def last_client_op(fault_takes: float) -> float:
        clock = PhaseClock()
        clients = UntilPhaseEnd(gen.rate(10, gen.repeat({"f": "describe", "key": "k"})), clock)
        main = gen.time_limit(cap, gen.nemesis(NemesisReplay(s, clock, margin=REAL_MARGIN_S), clients))
        ops = gen.simulate(main, concurrency=3, nemesis_thread=True, seed=3,
                           latency=lambda t, r: fault_takes if t.f == "start-leader-clock" else 0.01)
        assert [o.time for o in ops if o.thread == gen.NEMESIS] == [12.0]
        return max(o.time for o in ops if isinstance(o.thread, int))

    # the fault in place at once (as simulated) or 5 s late (as on a loaded Docker host): either way
    # the clients go on for the margin after it took effect, then stop, well before the cap
    assert 12.0 + REAL_MARGIN_S - 0.5 < last_client_op(0.0) <= 12.0 + REAL_MARGIN_S
    assert 17.0 + REAL_MARGIN_S - 0.5 < last_client_op(5.0) <= 17.0 + REAL_MARGIN_S
    assert cap > 17.0 + REAL_MARGIN_S + 5.0


def test_a_real_replay_without_faults_ends_at_the_recorded_time_limit() -> None:
    s = _schedule()
    quiet = s.with_events(s.client_events, time_limit=3.0)
    clock = PhaseClock()
    NemesisReplay(quiet, clock, margin=REAL_MARGIN_S)
    ops = gen.simulate(gen.time_limit(60.0, gen.clients(UntilPhaseEnd(gen.rate(10, gen.repeat({"f": "read"})),
                                                                      clock))), concurrency=2, seed=1)
    assert 2.5 < max(o.time for o in ops) <= 3.0


def test_a_real_replay_does_not_count_a_strobes_own_duration_as_lag() -> None:
    # recovery-duplicates' shrunk schedule: a 2 s clock strobe, the clocks reset as it ends, the leader
    # killed 2 s later. The strobe op runs its 2 s in simulation too; on Docker it completed 2.7 s
    # after it was due, and the reset and the kill landed 2 s later than recorded as well.
    n = NEMESIS_THREAD
    s = Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=1, time_limit=7.0, concurrency=2,
                 events=[Event(2.0, n, "strobe-clock"), Event(4.0, n, "reset-clock"),
                         Event(6.0, n, "kill", value="leader")])
    clock = PhaseClock()
    replay = NemesisReplay(s, clock, margin=REAL_MARGIN_S)
    rng = random.Random(0)

    def ctx(t: float) -> gen.Context:
        return gen.Context(t, gen.NEMESIS, "nemesis", rng, (gen.NEMESIS,))

    def done(t: float, f: str, value: object) -> None:
        inv = Op(index=0, time=0, type="invoke", process="nemesis", f=f)
        replay.update(ctx(t), inv, Op(index=1, time=0, type="info", process="nemesis", f=f, value=value))

    assert replay.op(ctx(0.0)) == gen.Pending(2.0)
    assert isinstance(replay.op(ctx(2.0)), gen.Template)
    done(4.7, "strobe-clock", {"nodes": ["n1", "n2", "n3"], "delta-ms": 10772, "period-ms": 3,
                               "duration-s": 2.0})
    step = replay.op(ctx(4.7))  # 0.7 s late, as the docker exec made it: the reset follows at once
    assert isinstance(step, gen.Template) and step.f == "reset-clock"
    done(4.9, "reset-clock", {"reset": ["n1", "n2", "n3"]})
    assert replay.op(ctx(4.9)) == gen.Pending(6.9)  # 2 s after the reset took effect, as recorded


def test_a_real_replay_watches_the_cluster_after_the_final_reads() -> None:
    # a node that loops endlessly on restart stops answering on Docker (the simulator stops it as a
    # liveness probe would, and its log says why): the final phase must outlast the crash checker's
    # down-at-end rule, where it used to end as soon as the reads came back (a second after the heal)
    reads = FinalReplay([Event(0.0, 0, "read", key="k0", node=n) for n in ("n1", "n2", "n3")])
    hold = watch_after_heal_s()
    assert hold > CrashChecker().down_at_end / 1e9
    ops = gen.simulate(gen.time_limit(30.0, gen.clients(watch_after_heal(reads, hold))), concurrency=2,
                       latency=0.2)
    assert [(o.template.node, round(o.time, 6)) for o in ops] == [("n1", 0.0), ("n2", 0.0), ("n3", 0.2)]
    # nothing more is asked, but the phase lasts `hold`; and with no final reads at all, as long
    done = gen.simulate(gen.time_limit(30.0, gen.clients(gen.phases(watch_after_heal(FinalReplay([]), hold),
                                                                     gen.once({"f": "mark"})))))
    assert [(o.template.f, round(o.time, 6)) for o in done] == [("mark", hold)]
    nothing = gen.simulate(gen.time_limit(30.0, gen.clients(gen.phases(watch_after_heal(None, hold),
                                                                        gen.once({"f": "mark"})))))
    assert [(o.template.f, round(o.time, 6)) for o in nothing] == [("mark", hold)]
