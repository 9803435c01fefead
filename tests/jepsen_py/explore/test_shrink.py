"""The shrinker against the planted system: a large failing schedule must come down to the two
overlapping faults, one client, one key, a write and a read."""

from __future__ import annotations

import random

from jepsen_py.explore.finding import still_fails
from jepsen_py.explore.schedule import Event, Schedule, fault_windows
from jepsen_py.explore.search import Trial
from jepsen_py.explore.shrink import Shrinker, shrink
from jepsen_py.explore.space import Config
from tests.jepsen_py.explore.planted import PlantedSystem, lost_writes


def big_failing() -> Schedule:
    system = PlantedSystem()
    for seed in range(1000):
        cfg = Config(workload="offsets", families=("clock", "kill", "partition", "pause"),
                     shapes=("bridge", "leader", "one", "random", "ring"), targets=("leader", "one", "all"),
                     interval=1.0, mode="random", read_mode="read-index", node_count=5, time_limit=60.0,
                     seed=seed, clients_per_node=2)
        t = system.trial(cfg)
        if t.failed and t.schedule.fault_count >= 15:
            return t.schedule
    raise AssertionError("no large failing schedule among 1000 seeds")


def test_shrinks_to_the_two_overlapping_faults() -> None:
    s = big_failing()
    assert s.fault_count >= 15 and s.concurrency == 10 and len(s.keys) == 5
    result = shrink(s, lambda c: bool(lost_writes(c)), max_attempts=2000, budget_s=60)
    out = result.schedule
    assert lost_writes(out), "the shrunk schedule must still fail"
    assert not result.exhausted
    windows = fault_windows(out.events)
    assert sorted(w.family for w in windows) == ["partition", "pause"]
    assert [w.start.value for w in windows if w.family == "partition"] == ["bridge"]
    assert out.fault_count == 2
    assert out.concurrency == 1
    assert len(out.keys) == 1
    assert sorted(e.f for e in out.client_events) == ["read", "write"]
    assert len(out.nodes) == 1
    assert out.time_limit < s.time_limit
    # the path: every schedule that failed, from the one given to the result, each smaller or as small
    assert result.path[-1] is out and len(result.path) == result.accepted
    assert all(lost_writes(c) for c in result.path)
    assert result.path[0].fault_count <= s.fault_count and result.path[-1].fault_count == 2


def test_a_schedule_that_fails_without_faults_loses_them_all() -> None:
    s = big_failing()
    # a predicate that holds whatever the faults: the shrunk schedule has none
    result = shrink(s, lambda c: any(e.f == "write" for e in c.client_events), max_attempts=500)
    assert result.schedule.fault_count == 0
    assert len(result.schedule.client_events) == 1


def test_budget_ends_shrinking_with_what_it_reached() -> None:
    s = big_failing()
    calls = []

    def fails(c: Schedule) -> bool:
        calls.append(c)
        return bool(lost_writes(c))

    result = Shrinker(fails, max_attempts=5).shrink(s)
    assert result.exhausted and result.attempts == 5 == len(calls)
    assert lost_writes(result.schedule)
    assert result.schedule.fault_count <= s.fault_count


def test_only_failing_candidates_are_kept() -> None:
    s = big_failing()
    rng = random.Random(3)
    # a flaky predicate: failing candidates are kept only when they fail, so the result always fails
    result = shrink(s, lambda c: bool(lost_writes(c)) and rng.random() < 0.7, max_attempts=400)
    assert lost_writes(result.schedule)


class _Artifact(PlantedSystem):
    """The planted bug, plus what any build shows for a schedule of at most one client op (as a
    checker may call a run with almost nothing asked "unavailable")."""

    def _judge(self, s: Schedule, cfg: object) -> Trial:
        t = super()._judge(s, cfg)  # type: ignore[arg-type]
        if (s.bugs and t.anomalies) or len(s.client_events) <= 1:
            t.anomalies = {"lost-commit": 1}
        else:
            t.anomalies = {}
        return t


def test_shrinking_keeps_what_the_build_without_bugs_does_not_show() -> None:
    system = _Artifact()
    s = big_failing()
    s = s.with_events(s.events, bugs=["planted"])
    assert still_fails(system, s, "lost-commit")
    out = shrink(s, lambda c: still_fails(system, c, "lost-commit"), max_attempts=3000).schedule
    # without the control the artifact wins: one client op, no fault
    naive = shrink(s, lambda c: "lost-commit" in system.replay(c).anomalies, max_attempts=3000).schedule
    assert naive.fault_count == 0 and len(naive.client_events) <= 1
    assert lost_writes(out) and out.fault_count == 2 and len(out.client_events) == 2


def test_time_is_cut_first_so_later_attempts_replay_less() -> None:
    s = big_failing()
    replayed: list[float] = []

    def fails(c: Schedule) -> bool:
        replayed.append(c.time_limit)
        return bool(lost_writes(c))

    result = shrink(s, fails, max_attempts=2000, budget_s=60)
    assert lost_writes(result.schedule)
    # the first attempt already replays a shorter run than the one found
    assert replayed[0] < s.time_limit
    # and most attempts replay at most half of the time the found schedule took
    assert sum(1 for t in replayed if t <= s.time_limit / 2) > len(replayed) / 2, replayed


def _topics_run(workload: str, node_count: int) -> Schedule:
    """A run whose creates asked for as many copies as `node_count` nodes allowed, and a describe on
    every node."""
    from jepsen_py.workloads.common import replication_factor

    nodes = [f"n{i + 1}" for i in range(node_count)]
    rf = replication_factor(node_count)
    events = [Event(0.1, 0, "create", key="desc-0", value={"partitions": 3, "rf": rf}),
              *(Event(0.2 + 0.1 * i, 0, "describe", key="desc-0", node=n) for i, n in enumerate(nodes)),
              Event(1.0, "nemesis", "kill", value="all"), Event(2.0, "nemesis", "start")]
    return Schedule(workload=workload, nodes=nodes, seed=1, time_limit=8.0, concurrency=node_count,
                    events=events)


def test_nodes_never_shrink_below_what_the_workloads_creates_need() -> None:
    # explore's correct build: a describe run on five nodes (creates of three copies) was cut to one
    # node, where every create is refused whatever the build: a different failure from the one found
    for workload, count, floor in [("describe", 5, 3), ("topics", 3, 3), ("metadata", 5, 3),
                                   ("topics", 2, 2), ("offsets", 5, 1)]:
        s = _topics_run(workload, count)
        assert s.min_nodes == floor
        # a predicate every candidate meets: everything that can go goes, down to the floor
        out = shrink(s, lambda c: True, max_attempts=500).schedule
        assert len(out.nodes) == floor, (workload, count, out.nodes)
        assert out.fault_count == 0 and len(out.client_events) <= 1
