"""The Docker nemeses carried out on a simulated cluster: same op names and values, faults as cut
links, virtual clocks and loop states, process faults applied in node order."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.nemeses import build
from jepsen_py.nemeses.partition import LEADER_POLL_S, LEADER_WAIT_S, PartitionNemesis
from jepsen_py.nemeses.pause import PauseNemesis

from jepsen_py.errors import BadInput
from jepsen_py.history import INFO, INVOKE, NEMESIS, Op
from jepsen_py.protocols import Test, TestSpec
from jepsen_py.sim.nemesis import SimClocks, SimDB, SimNemesis, SimNet, check_names, grudge_cuts
from tests.jepsen_py.sim.vloop import VirtualLoop

NODES = ["n1", "n2", "n3", "n4", "n5"]


class FakeCluster:
    """Records what the nemeses do; `leader` (n2) claims leadership, whatever is done to it."""

    def __init__(self) -> None:
        self.leader: str | None = "n2"
        self.calls: list[tuple[Any, ...]] = []
        self.cuts: set[tuple[str, str]] = set()
        self.clocks: dict[str, float] = {}

    def kill(self, node: str) -> None:
        self.calls.append(("kill", node))

    def start(self, node: str) -> None:
        self.calls.append(("start", node))

    def pause(self, node: str) -> None:
        self.calls.append(("pause", node))

    def resume(self, node: str) -> None:
        self.calls.append(("resume", node))

    def cut(self, pairs: Iterable[tuple[str, str]]) -> None:
        pairs = list(pairs)
        self.calls.append(("cut", tuple(pairs)))
        self.cuts.update(pairs)

    def heal_network(self) -> None:
        self.calls.append(("heal",))
        self.cuts.clear()

    def set_clock(self, node: str, offset_s: float, drift: float = 0.0) -> None:
        self.calls.append(("clock", node, offset_s))
        self.clocks[node] = offset_s

    def status(self, node: str) -> dict[str, Any] | None:
        return {"id": node, "role": "leader" if node == self.leader else "follower", "term": 3,
                "leader": self.leader, "bugs": ()}


def setup(names: str, *, seed: int = 5, targets: list[str] | None = None,
          interval: float = 10.0) -> tuple[Test, SimNemesis, FakeCluster, SimDB, Any]:
    spec = TestSpec(name="t", workload="offsets", nemesis=names.split(","), nodes=list(NODES), time_limit=60,
                    concurrency=10, rate=100, nemesis_interval=interval, seed=seed, backend="sim",
                    read_mode="read-index", bugs=[], db="jepsen_py.raftdb:RaftMetadataDB",
                    results_dir=Path("."), fault_targets=targets or [])
    cluster = FakeCluster()
    db = SimDB(cluster, NODES)
    test = Test(spec=spec, store_dir=Path("."), log=logging.getLogger("t"), rng=random.Random(seed), db=db,  # type: ignore[arg-type]
                net=SimNet(cluster), clocks=SimClocks(cluster))
    nemesis, schedule = build(spec.nemesis, spec)
    sim = SimNemesis(nemesis, db)
    sim.setup(test)
    assert set(cluster.clocks.values()) <= {0.0} and not cluster.cuts  # setup starts from no fault
    cluster.calls.clear()
    cluster.clocks.clear()
    return test, sim, cluster, db, schedule


def run(sim: SimNemesis, test: Test, f: str, value: Any = None,
        elected: tuple[float, str, FakeCluster] | None = None) -> Op:
    """The op carried out in virtual time; `elected` = (when, who, cluster): who claims leadership
    from that virtual second on. The op's completion time is in its meta["done-at"]."""
    loop = VirtualLoop()
    try:
        if elected is not None:
            at, who, cluster = elected
            loop.call_at(at, setattr, cluster, "leader", who)
        done = loop.run_until_complete(sim.invoke(test, Op(0, 0, INVOKE, NEMESIS, f, None, value)))
        done.meta["done-at"] = loop.time()
        return done
    finally:
        loop.close()


def test_partition_leader_cuts_the_leader_off_both_ways_and_records_docker_s_value() -> None:
    test, sim, cluster, _, _ = setup("partition-leader")
    done = run(sim, test, "start-partition", "leader")
    assert done.type == INFO
    assert done.value["shape"] == "leader" and done.value["leader"] == "n2"
    assert done.value["sides"] == [["n2"], ["n1", "n3", "n4", "n5"]]
    assert cluster.cuts == {(a, b) for a in NODES for b in NODES if (a == "n2") != (b == "n2")}
    assert test.state["partition"] == done.value["grudge"]
    stop = run(sim, test, "stop-partition")
    assert stop.value == {"healed": {n: len(g) for n, g in done.value["grudge"].items()}}
    assert cluster.cuts == set() and cluster.calls[-1] == ("heal",)


def test_partition_leader_waits_in_virtual_time_for_a_leader_to_be_claimed() -> None:
    test, sim, cluster, _, _ = setup("partition-leader")
    cluster.leader = None  # just restarted: nobody leads yet
    done = run(sim, test, "start-partition", "leader", elected=(2.5, "n4", cluster))
    assert done.value["leader"] == "n4" and done.value["sides"] == [["n4"], ["n1", "n2", "n3", "n5"]]
    assert 2.5 - 1e-6 <= done.meta["done-at"] <= 2.5 + LEADER_POLL_S + 1e-9


def test_partition_leader_gives_up_after_its_bound_and_isolates_a_random_node() -> None:
    test, sim, cluster, _, _ = setup("partition-leader")
    cluster.leader = None
    done = run(sim, test, "start-partition", "leader")
    assert done.value["leader"] is None and len(done.value["sides"][0]) == 1
    assert LEADER_WAIT_S - 1e-6 <= done.meta["done-at"] <= LEADER_WAIT_S + LEADER_POLL_S + 1e-9


def test_grudge_cuts_are_the_links_into_the_node_holding_the_grudge() -> None:
    assert grudge_cuts({"n1": ["n2", "n3"], "n2": ["n1"]}) == [("n1", "n2"), ("n2", "n1"), ("n3", "n1")]


def test_a_partition_value_is_the_one_docker_s_nemesis_computes_from_the_same_seed() -> None:
    test, sim, _, _, _ = setup("partition")
    ours = [run(sim, test, "start-partition", shape).value for shape in ("random", "ring", "bridge", "one")]
    docker = PartitionNemesis()
    rng = random.Random(5)
    theirs = []
    for shape in ("random", "ring", "bridge", "one"):
        grudge, detail = docker.grudge_for(shape, test, rng)
        theirs.append({"shape": shape, "grudge": grudge, **detail})
    assert ours == theirs


def test_kill_hits_its_targets_in_node_order_and_start_revives_them() -> None:
    test, sim, cluster, db, _ = setup("kill", targets=["majority"])
    done = run(sim, test, "kill", "majority")
    assert done.value["target"] == "majority" and len(done.value["nodes"]) == 3
    assert cluster.calls == [("kill", n) for n in sorted(done.value["nodes"])]
    assert all(db.status(test, n) is None for n in done.value["nodes"])
    assert db.primaries(test) == ([] if "n2" in done.value["nodes"] else ["n2"])
    cluster.calls.clear()
    run(sim, test, "start")
    assert cluster.calls == [("start", n) for n in sorted(done.value["nodes"])]
    assert db.killed == set()


def test_pause_freezes_the_leader_and_resume_and_heal_thaw_it() -> None:
    test, sim, cluster, db, _ = setup("pause", targets=["leader"])
    done = run(sim, test, "pause", "leader")
    assert done.value["nodes"] == ["n2"] and cluster.calls == [("pause", "n2")]
    assert db.status(test, "n2") is None and db.paused == {"n2"}
    sim.heal(test)
    assert cluster.calls[-1] == ("resume", "n2") and db.paused == set()


def test_a_start_does_not_restart_a_paused_node_and_a_kill_ends_a_paused_one() -> None:
    cluster = FakeCluster()
    db = SimDB(cluster, NODES)
    db.pause(None, "n1")  # type: ignore[arg-type]
    db.start(None, "n1")  # type: ignore[arg-type]
    db.kill(None, "n1")  # type: ignore[arg-type]
    db.resume(None, "n1")  # type: ignore[arg-type]
    db.flush()
    assert cluster.calls == [("pause", "n1"), ("kill", "n1")]
    db.reset()
    assert cluster.calls[-1] == ("start", "n1")


def test_clock_bumps_move_virtual_clocks_and_reset_returns_every_node_to_zero() -> None:
    test, sim, cluster, _, _ = setup("clock")
    done = run(sim, test, "bump-clock", {"n1": 1500, "n3": -250})
    assert done.value == {"bumped-ms": {"n1": 1500, "n3": -250}, "offsets-ms": {"n1": 1500, "n3": -250}}
    assert cluster.clocks == {"n1": 1.5, "n3": -0.25}
    reset = run(sim, test, "reset-clock")
    assert reset.value == {"reset": NODES}
    assert cluster.clocks == dict.fromkeys(NODES, 0.0)


def test_a_strobe_flips_the_clock_for_its_duration_in_virtual_time() -> None:
    test, sim, cluster, _, _ = setup("clock", interval=2.0)
    loop = VirtualLoop()
    try:
        t0 = loop.time()
        done = loop.run_until_complete(sim.invoke(test, Op(0, 0, INVOKE, NEMESIS, "strobe-clock")))
        elapsed = loop.time() - t0
    finally:
        loop.close()
    v = done.value
    assert v["duration-s"] == 2.0 and 2.0 <= elapsed <= 2.0 + v["period-ms"] / 1000 + 1e-6
    flips = [c for c in cluster.calls if c[0] == "clock" and c[1] == v["nodes"][0]]
    assert len(flips) >= int(2.0 / (v["period-ms"] / 1000))
    assert {c[2] for c in flips} == {0.0, v["delta-ms"] / 1000}
    assert flips[-1][2] == 0.0  # left at its base


def test_leader_clock_isolates_the_leader_and_steps_its_clock_back_until_stopped() -> None:
    test, sim, cluster, db, _ = setup("leader-clock")
    done = run(sim, test, "start-leader-clock")
    assert done.value["node"] == "n2" and done.value["clock-back-ms"] >= 20_000
    assert cluster.clocks == {"n2": -done.value["clock-back-ms"] / 1000}
    assert {p for p in cluster.cuts if "n2" in p} == cluster.cuts and len(cluster.cuts) == 8
    assert db.paused == set()  # frozen only while the cut and the step were made
    run(sim, test, "stop-leader-clock")
    assert cluster.cuts == set() and cluster.clocks["n2"] == 0.0


def test_leader_clock_waits_for_a_leader_too() -> None:
    test, sim, cluster, _, _ = setup("leader-clock")
    cluster.leader = None
    done = run(sim, test, "start-leader-clock", elected=(1.0, "n5", cluster))
    assert done.value["node"] == "n5" and cluster.clocks == {"n5": -done.value["clock-back-ms"] / 1000}
    assert 1.0 - 1e-6 <= done.meta["done-at"] <= 1.0 + LEADER_POLL_S + 1e-9


def test_all_routes_every_family() -> None:
    test, sim, _, _, _ = setup("all")
    assert set(sim.route) >= {"start-partition", "bump-clock", "strobe-clock", "pause", "kill", "start"}
    for f in ("start-partition", "bump-clock", "pause", "kill", "resume", "start", "stop-partition"):
        assert run(sim, test, f).type == INFO


def test_a_nemesis_from_outside_runs_and_one_of_ours_it_does_not_model_is_refused() -> None:
    class Outside:
        def fs(self) -> frozenset[str]:
            return frozenset({"zap"})

        def invoke(self, test: Any, op: Op) -> Op:
            return replace(op, type=INFO, value="zapped")

    Outside.__module__ = "mymod"  # defined outside the project, as a --nemesis MODULE:NAME is
    test, *_ = setup("partition")
    sim = SimNemesis(Outside(), SimDB(FakeCluster(), NODES))  # type: ignore[arg-type]
    assert run(sim, test, "zap").value == "zapped"

    class Ours(PauseNemesis):  # a subclass of ours may do something the simulator does not model
        pass

    with pytest.raises(BadInput, match="cannot carry out the nemesis Ours"):
        SimNemesis(Ours(), SimDB(FakeCluster(), NODES))  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="--nemesis bogus: the simulator cannot model"):
        check_names(["partition", "bogus"])
    check_names(["none", "all", "leader-clock", "mymod:Zap"])


def test_the_same_seed_makes_the_same_faults() -> None:
    def values(seed: int) -> list[Any]:
        test, sim, _, _, _ = setup("all", seed=seed)
        return [run(sim, test, f).value for f in ("start-partition", "bump-clock", "pause", "kill")]

    assert values(11) == values(11)
    assert values(11) != values(12)


def test_an_unknown_op_fails_and_the_queue_is_still_applied() -> None:
    test, sim, _, _, _ = setup("kill")
    with pytest.raises(ValueError, match="no nemesis handles 'zap'"):
        asyncio.run(sim.invoke(test, Op(0, 0, INVOKE, NEMESIS, "zap")))


def test_status_is_what_the_wire_gives_without_a_json_round_trip_when_plain(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SimDB.status answers as a client of the node's API would (JSON's types: tuples as lists, keys
    as strings), and a copy: the node's own dict is never handed out. A plain status (the node's)
    is copied without the text in between; anything else still takes the round trip."""
    import json

    import jepsen_py.sim.nemesis as simnemesis

    class Cluster:
        def __init__(self, st: dict[str, Any]) -> None:
            self.st = st

        def status(self, node: str) -> dict[str, Any]:
            return self.st

    plain = {"id": "n1", "role": "leader", "term": 3, "leader": "n1", "uptime_s": 1.25, "bugs": ("a",),
             "progress": {"n2": {"match": 7, "ok": True, "x": None}}, "transport": [[1, 2.5], ("n3",)]}
    odd = {"id": "n1", "role": "follower", "term": 2, "progress": {2: {"match": 1}}}
    wire = {name: json.loads(json.dumps(st)) for name, st in (("plain", plain), ("odd", odd))}

    calls: list[str] = []
    real_loads = json.loads

    def loads(text: str) -> Any:
        calls.append(text)
        return real_loads(text)

    monkeypatch.setattr(simnemesis.json, "loads", loads)
    got = SimDB(Cluster(plain), ["n1"]).status(None, "n1")  # type: ignore[arg-type]
    assert got == {**wire["plain"], "node": "n1"} and calls == []
    assert got is not None and got["progress"] is not plain["progress"]
    got["progress"]["n2"]["match"] = 0
    assert plain["progress"]["n2"]["match"] == 7  # type: ignore[index]
    odd_got = SimDB(Cluster(odd), ["n1"]).status(None, "n1")  # type: ignore[arg-type]
    assert odd_got == {**wire["odd"], "node": "n1", "leader": None} and len(calls) == 1
    assert odd_got["progress"] == {"2": {"match": 1}}
