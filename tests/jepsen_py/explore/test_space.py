"""The space: every sample is within its ranges, every fault timeline is well formed."""

from __future__ import annotations

import itertools
import random

from jepsen_py.explore.coverage import bucket, features, log_shape
from jepsen_py.explore.schedule import START_FAMILY, STOP_FAMILY, fault_windows
from jepsen_py.explore.space import Config, Space, nemesis_events


def test_samples_and_mutations_stay_in_the_space() -> None:
    space = Space(read_modes=("lease",), node_counts=(3,))
    rng = random.Random(0)
    cfgs = [space.sample(rng) for _ in range(300)]
    cfgs += [space.mutate(c, rng) for c in cfgs]
    for c in cfgs:
        assert c.workload in space.workloads and c.read_mode == "lease" and c.node_count == 3
        assert set(c.families) <= set(space.families) and len(c.families) <= space.max_families
        assert "ring" not in c.shapes and c.targets and set(c.targets) <= set(space.targets)
    assert {c.mode for c in cfgs} == {"random", "cycle", "bursts"}
    assert {len(c.families) for c in cfgs} == {0, 1, 2, 3}


def test_every_timeline_starts_before_it_stops_and_stays_in_time() -> None:
    space = Space()
    rng = random.Random(1)
    for _ in range(300):
        cfg = space.sample(rng)
        events = nemesis_events(cfg)
        assert events == nemesis_events(cfg), "a config's timeline is a function of its seed"
        active: set[str] = set()
        for e in events:
            assert 0 < e.at < cfg.time_limit
            if e.f in START_FAMILY:
                assert START_FAMILY[e.f] not in active
                active.add(START_FAMILY[e.f])
            else:
                assert STOP_FAMILY[e.f] in active
                active.discard(STOP_FAMILY[e.f])
        if cfg.mode == "cycle":
            assert all(w.stop is None or w.stop.at <= nxt.start.at
                       for w, nxt in zip(fault_windows(events), fault_windows(events)[1:], strict=False))


def test_bursts_start_several_faults_together() -> None:
    cfg = Config(workload="offsets", families=("clock", "kill", "partition", "pause"), shapes=("leader",),
                 targets=("one",), interval=4.0, mode="bursts", read_mode="lease", node_count=5,
                 time_limit=60.0, seed=3)
    ws = fault_windows(nemesis_events(cfg))
    assert any(b.start.at - a.start.at <= 1.0 and b.start.at < a.end for a, b in itertools.pairwise(ws))


def test_coverage_features() -> None:
    assert [bucket(n) for n in (0, 1, 2, 3, 4, 9)] == ["0", "1", "2-3", "2-3", "4-7", "8-15"]
    line = "12:00:01.5 n3 role leader term 7 leader n3 (was follower)"
    assert log_shape(line) == "role leader term leader was"
    cfg = Config(workload="offsets", families=("kill", "partition"), shapes=("leader",), targets=("one",),
                 interval=2.0, mode="random", read_mode="lease", node_count=3, time_limit=30.0, seed=5)
    ops = [
        {"process": "observer", "type": "ok", "f": "status", "node": "n1", "time": 1,
         "value": {"role": "leader", "term": 5, "pid": 10, "commit": 9, "applied": 4}},
        {"process": "observer", "type": "ok", "f": "status", "node": "n2", "time": 2,
         "value": {"role": "leader", "term": 6, "pid": 11}},
        {"process": "observer", "type": "ok", "f": "status", "node": "n1", "time": 3,
         "value": {"role": "follower", "term": 6, "pid": 12}},
        {"process": 0, "type": "ok", "f": "fetch", "meta": {"role": "leader"}},
        {"process": 1, "type": "fail", "f": "commit", "error": "not_leader n2"},
    ]
    fs = features(nemesis_events(cfg), ops, {"n1": ["recovered snapshot at index 5 term 2"]},
                  read_mode="lease", workload="offsets")
    for f in ("max-term:4-7", "leaders:2-3", "restarts:1", "two-leaders-claimed", "apply-lag:4-7",
              "served:fetch:leader@lease", "error:commit:not_leader", "log:recovered snapshot at index term",
              "fault:kill", "workload:offsets"):
        assert f in fs, f


def test_swarm_sampling_favours_few_families_cheap_trials_and_records_the_rate() -> None:
    space = Space()
    rng = random.Random(7)
    cfgs = [space.sample(rng) for _ in range(2000)]
    by_count = [sum(1 for c in cfgs if len(c.families) == k) for k in range(4)]
    assert by_count[2] > by_count[3] and by_count[1] > by_count[0] > 0, by_count
    assert {c.rate for c in cfgs} == set(space.rates)
    assert min(c.time_limit for c in cfgs) <= 10.0
    assert all(c.rate in space.rates for c in (space.mutate(c, rng) for c in cfgs[:200]))
    assert "/s" in cfgs[0].label()


def test_coverage_follows_each_nodes_log_across_faults() -> None:
    def obs(node: str, pid: int, last: int, commit: int, role: str = "follower") -> dict[str, object]:
        return {"process": "observer", "type": "ok", "f": "status", "node": node, "time": 0,
                "value": {"role": role, "term": 2, "pid": pid, "last_index": last, "commit": commit}}

    ops = [
        obs("n1", 1, 10, 6, role="leader"),  # a leader ahead of its commit: an unreplicated tail
        {"process": "nemesis", "type": "ok", "f": "start-leader-clock"},
        {"process": 0, "type": "ok", "f": "fetch"},
        {"process": "nemesis", "type": "ok", "f": "stop-leader-clock"},
        {"process": 1, "type": "ok", "f": "commit"},
        obs("n1", 1, 8, 8),  # the same process, a shorter log: its tail overwritten
        obs("n2", 5, 9, 9),
        obs("n1", 2, 8, 9),  # restarted after that, behind the commit index
        obs("n2", 6, 3, 9),  # restarted behind the commit index
    ]
    fs = features([], ops)
    for f in ("leader-tail:4-7", "log-shrank", "restarted-after-log-shrank", "restarted-behind-commit",
              "every-node-restarted", "ok-during:leader-clock:fetch"):
        assert f in fs, f
    assert "ok-during:leader-clock:commit" not in fs
    calm = features([], [obs("n1", 1, 5, 5), obs("n1", 1, 6, 6), obs("n2", 3, 6, 6)])
    assert not {"log-shrank", "every-node-restarted", "restarted-behind-commit"} & calm


def test_every_sampled_configuration_with_faults_has_a_fault_window() -> None:
    space = Space()
    rng = random.Random(11)
    cfgs = [space.sample(rng) for _ in range(500)]
    cfgs += [space.mutate(c, rng) for c in cfgs]
    for c in cfgs:
        assert 2.5 * c.interval <= c.time_limit or c.interval == min(space.intervals), c.label()
        if c.families:
            assert fault_windows(nemesis_events(c)), c.label()
