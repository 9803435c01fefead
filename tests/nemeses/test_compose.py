"""Names, composition and the fault schedule (no containers needed)."""

from __future__ import annotations

import itertools
import random

import pytest
from jepsen_py.nemeses.compose import ComposedNemesis, Family, FaultSchedule, NoopNemesis
from jepsen_py.nemeses.targets import pick

from jepsen_py import nemeses
from jepsen_py.errors import BadInput
from jepsen_py.generator import Context, Pending, Template, any_of, simulate, time_limit
from jepsen_py.history import INFO, Op
from tests.nemeses.support import make_spec, make_test

NODES = ["n1", "n2", "n3", "n4", "n5"]
STARTS = {"start-partition": "partition", "bump-clock": "clock", "strobe-clock": "clock",
          "pause": "pause", "kill": "kill"}
STOPS = {"stop-partition": "partition", "reset-clock": "clock", "resume": "pause", "start": "kill"}


def schedule(names, tmp_path, interval=5.0, limit=300.0, seed=1, latency=0.0, **kw):
    spec = make_spec(NODES, tmp_path, nemesis_interval=interval, seed=seed, **kw)
    nem, gen = nemeses.build(names, spec)
    ops = simulate(time_limit(limit, gen), concurrency=2, nemesis_thread=True, seed=seed, latency=latency)
    return nem, ops


def test_every_listed_name_builds(tmp_path):
    for name in nemeses.NEMESES:
        nem, _ = nemeses.build([name], make_spec(NODES, tmp_path))
        assert nem is not None


def test_unknown_name_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="unknown nemesis 'partition-lol'"):
        nemeses.build(["partition-leader,partition-lol"], make_spec(NODES, tmp_path))


def test_ring_needs_four_nodes(tmp_path):
    with pytest.raises(BadInput, match="at least 4 nodes"):
        nemeses.build(["partition-ring"], make_spec(["n1", "n2", "n3"], tmp_path))


def test_bad_interval_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="nemesis-interval"):
        nemeses.build(["kill"], make_spec(NODES, tmp_path, nemesis_interval=0))


def test_none_does_nothing(tmp_path):
    nem, ops = schedule(["none"], tmp_path)
    assert isinstance(nem, NoopNemesis) and ops == []


def test_comma_names_compose_and_all_expands(tmp_path):
    nem, _ = nemeses.build(["partition-leader,kill"], make_spec(NODES, tmp_path))
    assert isinstance(nem, ComposedNemesis)
    assert nem.fs() == {"start-partition", "stop-partition", "kill", "start"}
    shapes, fams = nemeses.parse(["all"])
    assert shapes == ["leader", "random", "one", "ring", "bridge"] and fams == ["clock", "pause", "kill"]


def test_single_family_alternates_start_and_stop_at_the_interval(tmp_path):
    _, ops = schedule(["partition-leader"], tmp_path, interval=5, limit=60)
    assert all(o.thread == "nemesis" for o in ops)
    assert [o.template.f for o in ops] == ["start-partition", "stop-partition"] * 5 + ["start-partition"]
    assert [o.time for o in ops] == [5.0 * i for i in range(1, 12)]
    assert {o.template.value for o in ops if o.template.f == "start-partition"} == {"leader"}


def test_on_a_real_backend_a_fault_holds_its_interval_from_when_it_took_effect(tmp_path):
    # every op takes 2 s to take effect (a docker exec on a loaded machine): the next is due a full
    # interval after that, so the partition holds 5 s, not 3
    _, ops = schedule(["partition-leader"], tmp_path, interval=5, limit=30, latency=2.0)
    assert [o.time for o in ops] == [5.0, 12.0, 19.0, 26.0]
    # the simulator acts at once and keeps its times, whatever an op's own duration in virtual time
    _, ops = schedule(["partition-leader"], tmp_path, interval=5, limit=30, latency=2.0, backend="sim")
    assert [o.time for o in ops] == [5.0, 10.0, 15.0, 20.0, 25.0]


def test_two_schedules_on_one_thread_each_hold_from_their_own_ops():
    # an outside nemesis beside the built-ins: each schedule's lateness is its own op's, or one
    # that completes would push the other back forever and it would never act
    freeze = Family("freeze", lambda rng: Template("start-freeze"), lambda rng: Template("stop-freeze"))
    amnesia = Family("amnesia", lambda rng: Template("start-amnesia"), lambda rng: Template("stop-amnesia"))
    gen = any_of(FaultSchedule([freeze], 3.0, hold_from_effect=True),
                 FaultSchedule([amnesia], 3.0, hold_from_effect=True))
    ops = simulate(time_limit(10, gen), concurrency=0, nemesis_thread=True, latency=1.0)
    assert [(o.time, o.template.f) for o in ops] == [
        (3.0, "start-freeze"), (4.0, "start-amnesia"), (7.0, "stop-freeze"), (8.0, "stop-amnesia")]


def test_a_strobes_own_duration_is_not_lateness():
    fam = Family("clock", lambda rng: Template("strobe-clock"), lambda rng: Template("reset-clock"))
    sched = FaultSchedule([fam], 5.0, hold_from_effect=True)

    def at(t: float) -> Context:
        return Context(t, "nemesis", "nemesis", random.Random(1), ("nemesis",))

    assert sched.op(at(0.0)) == Pending(5.0)
    strobe = sched.op(at(5.0))
    assert strobe.f == "strobe-clock"
    invoke = Op(0, int(5e9), "invoke", "nemesis", "strobe-clock")
    # a 4 s strobe that was in place 0.5 s late: only the 0.5 s is lateness
    sched.update(at(9.5), invoke, Op(1, int(9.5e9), "info", "nemesis", "strobe-clock",
                                     value={"duration-s": 4.0}))
    assert sched.op(at(9.9)) == Pending(10.5)


def test_all_toggles_each_family_consistently(tmp_path):
    _, ops = schedule(["all"], tmp_path, interval=2, limit=2000, seed=9)
    active: set[str] = set()
    seen: set[str] = set()
    for o in ops:
        f = o.template.f
        if f in STARTS:
            assert STARTS[f] not in active, f"{f} started twice without a stop"
            active.add(STARTS[f])
            seen.add(STARTS[f])
        else:
            assert STOPS[f] in active, f"{f} stops a fault that is not in force"
            active.discard(STOPS[f])
    assert seen == {"partition", "clock", "pause", "kill"}


def test_cycle_runs_one_fault_at_a_time_the_families_taking_turns(tmp_path):
    _, ops = schedule(["partition-leader,kill"], tmp_path, interval=5, limit=42,
                      nemesis_schedule="cycle", fault_targets=["all"])
    assert [o.template.f for o in ops] == ["start-partition", "stop-partition", "kill", "start"] * 2
    assert {o.template.value for o in ops if o.template.f == "kill"} == {"all"}
    # random (the default) lets the families overlap
    _, ops = schedule(["partition-leader,kill"], tmp_path, interval=5, limit=600, seed=3)
    fs = [o.template.f for o in ops]
    assert any(a == "start-partition" and b == "kill" for a, b in itertools.pairwise(fs))


def test_fault_targets_choose_what_pause_and_kill_hit(tmp_path):
    _, ops = schedule(["kill,pause"], tmp_path, interval=1, limit=200, fault_targets=["majority"])
    assert {o.template.value for o in ops if o.template.f in ("kill", "pause")} == {"majority"}
    _, ops = schedule(["kill"], tmp_path, interval=1, limit=200)
    assert {o.template.value for o in ops if o.template.f == "kill"} == {"leader", "one", "minority"}


def test_leader_clock_is_a_family_of_its_own(tmp_path):
    nem, _ = nemeses.build(["leader-clock"], make_spec(NODES, tmp_path))
    assert nem.fs() == {"start-leader-clock", "stop-leader-clock"}
    _, ops = schedule(["leader-clock"], tmp_path, interval=8, limit=40)
    assert [o.template.f for o in ops] == ["start-leader-clock", "stop-leader-clock"] * 2


def test_schedule_is_deterministic_under_a_seed(tmp_path):
    a = [(o.time, o.template.f, o.template.value) for o in schedule(["all"], tmp_path, seed=4)[1]]
    b = [(o.time, o.template.f, o.template.value) for o in schedule(["all"], tmp_path, seed=4)[1]]
    assert a == b


class Recorder:
    def __init__(self, fs):
        self._fs = frozenset(fs)
        self.calls = []

    def fs(self):
        return self._fs

    def setup(self, test):
        self.calls.append("setup")

    def invoke(self, test, op):
        self.calls.append(op.f)
        return Op(op.index, op.time, INFO, op.process, op.f, value="done")

    def heal(self, test):
        self.calls.append("heal")
        if "boom" in self._fs:
            raise RuntimeError("heal failed")

    def teardown(self, test):
        self.calls.append("teardown")


def test_composed_routes_by_f_and_heals_every_member_even_after_a_failure(tmp_path):
    a, b = Recorder({"boom", "x"}), Recorder({"y"})
    nem = ComposedNemesis([a, b])
    test = make_test(make_spec(NODES, tmp_path), tmp_path)
    assert nem.invoke(test, Op(0, 0, "invoke", "nemesis", "y")).value == "done"
    assert b.calls == ["y"] and a.calls == []
    with pytest.raises(RuntimeError, match="heal failed"):
        nem.heal(test)
    assert a.calls == ["heal"] and b.calls == ["y", "heal"]
    with pytest.raises(ValueError, match="no nemesis handles"):
        nem.invoke(test, Op(0, 0, "invoke", "nemesis", "zzz"))
    with pytest.raises(ValueError, match="both handle"):
        ComposedNemesis([Recorder({"x"}), Recorder({"x"})])


def test_targets(tmp_path):
    test = make_test(make_spec(NODES, tmp_path), tmp_path)

    class DB:
        def primaries(self, test):
            return ["n4"]

    test.db = DB()
    assert pick("leader", test, test.rng) == ["n4"]
    assert len(pick("one", test, test.rng)) == 1
    for _ in range(50):
        assert 1 <= len(pick("minority", test, test.rng)) <= 2
    assert len(pick("majority", test, test.rng)) == 3
    assert pick("all", test, test.rng) == NODES


def test_a_schedule_holds_its_interval_from_effect_unless_the_backend_is_simulated(tmp_path) -> None:
    """The backend's kind decides: a real cluster's faults take time to land, the simulator's act
    at once and keep their schedule's times."""
    held = {b: FaultSchedule.for_spec([], make_spec(["n1"], tmp_path, backend=b)).hold_from_effect
            for b in ("docker", "ssh", "local", "none", "sim")}
    assert held == {"docker": True, "ssh": True, "local": True, "none": True, "sim": False}
