"""The space on a real backend comes from what the DB declares; the simulator's space draws as before;
the explore code names no simulator module (the backend registry does)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jepsen_py.backends import KINDS, backend_kind, simulator
from jepsen_py.errors import BadInput
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.plan import host_node_counts
from jepsen_py.explore.realspace import REAL_TIME_LIMITS, outside_families, real_space
from jepsen_py.explore.schedule import NEMESIS_THREAD, Event, Schedule
from jepsen_py.explore.space import DEFAULT_WORKLOADS, Config, Space, nemesis_events
from jepsen_py.explore.system import BackendSystem, run_real, run_sim, spec_for
from jepsen_py.raftdb import RaftMetadataDB
from tests.jepsen_py.explore.plaindb import OptionsDB, PlainDB

RAFT = "jepsen_py.raftdb:RaftMetadataDB"


def _space(db: object, ref: str, **kw: object) -> Space:
    args: dict[str, object] = dict(default_db=False, workloads=(), families=None, modes=(), node_counts=(),
                                   time_limits=(), fixed={})
    args.update(kw)
    return real_space(db, ref, **args)  # type: ignore[arg-type]


def test_our_cluster_gets_every_family_its_safe_read_modes_and_short_runs() -> None:
    space = _space(RaftMetadataDB, RAFT, default_db=True)
    assert space.workloads == DEFAULT_WORKLOADS
    assert set(space.families) == {"partition", "kill", "pause", "clock", "leader-clock"}
    assert space.read_modes == ("read-index", "lease")  # local is stale by design: only when asked
    assert "leader" in space.shapes and "leader" in space.targets
    assert space.time_limits == REAL_TIME_LIMITS and max(space.time_limits) <= 30
    assert space.db_option_values == ()


def test_a_db_without_capabilities_gets_partitions_only_and_no_leader_targets() -> None:
    space = _space(PlainDB, "m:PlainDB", workloads=("register",))
    assert space.families == ("partition",)
    assert "leader" not in space.shapes and "leader" not in space.targets
    assert space.read_modes == (None,)
    rng = random.Random(3)
    for _ in range(200):
        cfg = space.mutate(space.sample(rng), rng)
        assert set(cfg.families) <= {"partition"} and "leader" not in cfg.shapes + cfg.targets
        assert cfg.read_mode is None


def test_declared_option_values_are_drawn_and_a_given_one_is_fixed() -> None:
    space = _space(OptionsDB, "m:OptionsDB")
    assert space.workloads == ("register",)
    rng = random.Random(5)
    cfgs = [space.sample(rng) for _ in range(100)]
    cfgs += [space.mutate(c, rng) for c in cfgs]
    drawn = {dict(c.db_options)["reads"] for c in cfgs}
    assert drawn == {"linearizable", "serializable"}
    assert {dict(c.db_options)["pre-vote"] for c in cfgs} == {"true", "false"}
    serializable = next(c for c in cfgs if dict(c.db_options)["reads"] == "serializable")
    assert "reads=serializable" in serializable.label()
    fixed = _space(OptionsDB, "m:OptionsDB", fixed={"reads": "linearizable"})
    assert {dict(fixed.sample(rng).db_options)["reads"] for _ in range(50)} == {"linearizable"}


def test_a_declaration_naming_an_option_the_db_does_not_take_is_one_line() -> None:
    class Bad(OptionsDB):
        @staticmethod
        def db_option_values() -> dict[str, tuple[str, ...]]:
            return {"colour": ("red",)}

    with pytest.raises(BadInput, match="db_option_values\\(\\) names 'colour'"):
        _space(Bad, "m:Bad")


def test_the_simulators_space_draws_exactly_as_before() -> None:
    """No db options declared: sampling and mutating consume the random source as they always did,
    so a seeded simulated search finds what it found before."""
    rng = random.Random(11)
    cfgs = [Space().sample(rng) for _ in range(50)]
    assert all(c.db_options == () for c in cfgs)
    # the draws of a space with options differ only after every draw a space without them makes
    a, b = random.Random(2), random.Random(2)
    plain, opts = Space().sample(a), Space(db_option_values=(("k", ("x", "y")),)).sample(b)
    assert plain.seed == opts.seed and plain.workload == opts.workload and plain.families == opts.families


def test_a_schedule_carries_db_options_and_where_it_was_recorded(tmp_path: Path) -> None:
    s = Schedule(workload="register", nodes=["n1", "n2", "n3"], seed=1, time_limit=10.0, concurrency=3,
                 events=[Event(1.0, NEMESIS_THREAD, "start-partition", value="one"),
                         Event(4.0, NEMESIS_THREAD, "stop-partition")],
                 read_mode=None, db_options={"reads": "serializable"}, recorded_on="docker")
    back = sched.load(sched.save(s, tmp_path / "s.json"))
    assert back.db_options == {"reads": "serializable"} and back.recorded_on == "docker"
    assert back.read_mode is None
    spec = spec_for(back, backend="docker", results_dir=tmp_path, name="t", db="m:OptionsDB")
    assert spec.db_options == {"reads": "serializable"} and spec.read_mode is None
    with pytest.raises(BadInput, match="db_options must be an object of strings"):
        sched.from_json({**s.to_json(), "db_options": {"reads": 3}})


def test_one_system_class_for_every_backend_its_run_from_the_backend_kind(tmp_path: Path) -> None:
    sim = BackendSystem(work_dir=tmp_path)
    assert sim.backend == simulator() and sim.exact and sim.run is run_sim
    docker = BackendSystem(work_dir=tmp_path, backend="docker")
    assert not docker.exact and docker.run is run_real
    kind = backend_kind(simulator())
    assert kind.timer_slack_s() > 0 and kind.timing_seed_key()
    assert KINDS["docker"].timer_slack_s() == 0.0 and KINDS["docker"].timing_seed_key() is None
    with pytest.raises(ValueError, match="cannot redraw its timings"):
        docker.replay_timed(Schedule(workload="offsets", nodes=["n1"], seed=1, time_limit=1.0,
                                     concurrency=1, events=[]), 3)


def test_the_explore_code_names_no_simulator_module() -> None:
    """What differs between backends is asked of the backend's kind (the registry names the
    simulator's modules), so the search serves every backend through one System class."""
    root = Path(__file__).resolve().parents[3]
    names_sim = re.compile(r"jepsen_py\.sim\b|from jepsen_py import sim\b")
    offenders = [f"{p.relative_to(root)}:{i}"
                 for p in [*sorted((root / "jepsen_py" / "explore").glob("*.py")),
                           root / "jepsen_py" / "commands" / "explore.py"]
                 for i, line in enumerate(p.read_text().splitlines(), 1) if names_sim.search(line)]
    assert offenders == []


FREEZER = "tests.jepsen_py.explore.plaindb:Freezer"


@dataclass
class _Outcome:
    run_dir: Path
    results: dict[str, Any]
    exit_code: int = 0
    error: str | None = None


def test_an_outside_nemesis_joins_the_space_and_its_schedules(tmp_path: Path) -> None:
    """--nemesis MODULE:NAME on a real backend: its declared fault is a family the search draws, a
    trial builds the nemesis by its reference, and the schedule file carries the family."""
    spec = spec_for(Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=1, time_limit=10.0,
                             concurrency=3, events=[]), backend="docker", results_dir=tmp_path, name="probe")
    [fam] = outside_families(FREEZER, RaftMetadataDB, RAFT, spec)
    assert (fam.name, fam.ref, fam.starts, fam.stop) == ("freeze", FREEZER, ("start-freeze",), "stop-freeze")
    with pytest.raises(BadInput, match="needs a DB that can pause and resume its nodes"):
        outside_families(FREEZER, PlainDB, "m:PlainDB", spec)
    space = _space(RaftMetadataDB, RAFT, default_db=True, families=["partition"], outside=[fam])
    assert space.families == ("partition", "freeze")
    cfg = Config(workload="offsets", families=("freeze",), shapes=("one",), targets=("one",), interval=2.0,
                 mode="cycle", read_mode="read-index", node_count=3, time_limit=10.0, seed=4)
    assert [e.f for e in nemesis_events(cfg)][:2] == ["start-freeze", "stop-freeze"]

    seen: list[Any] = []

    def run(spec: Any, workload: Any, nemesis_generator: Any, post_run: Any) -> _Outcome:
        seen.append(spec)
        return _Outcome(run_dir=tmp_path / "none", results={})

    system = BackendSystem(work_dir=tmp_path, backend="docker", run=run, outside=[fam])
    trial = system.trial(cfg)
    assert seen[0].nemesis == [FREEZER]
    assert "fault:freeze" in trial.coverage
    back = sched.load(sched.save(trial.schedule, tmp_path / "s.json"))
    assert back.outside == [fam] and back.families() == [FREEZER] and back.fault_count >= 1


def test_on_ssh_the_hosts_given_are_the_nodes_and_bound_the_node_counts() -> None:
    """The SSH backend makes no nodes: a search draws only node counts it has hosts for, and
    names what it cannot do in one line."""
    ssh, docker = backend_kind("ssh"), backend_kind("docker")
    three = {"ssh_host": ["db1=127.0.0.1:2201", "db2=127.0.0.1:2202", "db3=127.0.0.1:2203"]}
    assert host_node_counts(ssh, three, []) == (["db1", "db2", "db3"], (3,))
    assert host_node_counts(ssh, three, [3]) == (["db1", "db2", "db3"], (3,))
    five = {"ssh_host": [f"n{i}=h{i}" for i in range(1, 6)]}
    assert host_node_counts(ssh, five, [])[1] == (3, 5)
    assert host_node_counts(ssh, {"ssh_host": ["a=h", "b=h2"]}, []) == (["a", "b"], (2,))
    with pytest.raises(BadInput, match=r"^--node-count 5: --backend ssh has 3 host\(s\) \(db1, db2, db3\)"):
        host_node_counts(ssh, three, [3, 5])
    with pytest.raises(BadInput, match="explore runs on the hosts you name, one --ssh-host"):
        host_node_counts(ssh, {"ssh_host": []}, [])
    assert host_node_counts(docker, {}, [5]) == (None, (5,))


def test_a_trial_on_fewer_nodes_than_hosts_takes_the_first_and_names_only_them(tmp_path: Path) -> None:
    hosts = [f"db{i}" for i in range(1, 6)]
    options = {"ssh_host": [f"{h}=127.0.0.1:{2200 + i}" for i, h in enumerate(hosts, 1)], "ssh_key": "k"}
    seen: list[Any] = []

    def run(spec: Any, workload: Any, nemesis_generator: Any, post_run: Any) -> _Outcome:
        seen.append(spec)
        return _Outcome(run_dir=tmp_path / "none", results={})

    system = BackendSystem(work_dir=tmp_path, backend="ssh", run=run, backend_options=options, hosts=hosts)
    cfg = Config(workload="offsets", families=("partition",), shapes=("one",), targets=("one",), interval=2.0,
                 mode="cycle", read_mode="read-index", node_count=3, time_limit=10.0, seed=4)
    trial = system.trial(cfg)
    assert seen[0].nodes == ["db1", "db2", "db3"] == trial.schedule.nodes
    assert seen[0].options["ssh_host"] == options["ssh_host"][:3] and seen[0].options["ssh_key"] == "k"
    system.replay(trial.schedule.with_events(trial.schedule.events, nodes=["db1", "db2"]))
    assert seen[1].nodes == ["db1", "db2"] and seen[1].options["ssh_host"] == options["ssh_host"][:2]
