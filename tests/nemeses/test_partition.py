"""Partitions: the grudge shapes (pure), and iptables really cutting traffic in containers."""

from __future__ import annotations

import random
from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jepsen_py.nemeses import partition
from jepsen_py.nemeses.net import CHAIN
from jepsen_py.nemeses.partition import (
    PartitionNemesis,
    bridge,
    complete_grudge,
    isolate,
    larger_side,
    majorities_ring,
    random_halves,
)

from jepsen_py.history import INFO, Op
from jepsen_py.protocols import ExecResult
from tests.nemeses.support import make_spec, make_test, peer_can_reach

NODES = ["n1", "n2", "n3", "n4", "n5"]


def symmetric(grudge: dict[str, list[str]]) -> bool:
    return all(a in grudge.get(b, []) for a, bs in grudge.items() for b in bs)


def visible(grudge: dict[str, list[str]], nodes: list[str], n: str) -> set[str]:
    return {m for m in nodes if m not in grudge.get(n, [])}


def test_isolate_cuts_one_node_from_all_others():
    g = isolate(NODES, ["n3"])
    assert g["n3"] == ["n1", "n2", "n4", "n5"]
    assert all(g[n] == ["n3"] for n in NODES if n != "n3")
    assert symmetric(g)


def test_random_halves_cover_all_nodes_and_are_disjoint():
    a, b = random_halves(NODES, random.Random(1))
    assert sorted(a + b) == NODES and not set(a) & set(b)
    assert {len(a), len(b)} == {2, 3}


@given(st.integers(min_value=4, max_value=11), st.integers(min_value=0, max_value=10_000))
def test_majorities_ring_every_node_sees_a_distinct_majority(n, seed):
    nodes = [f"n{i}" for i in range(1, n + 1)]
    g = majorities_ring(nodes, random.Random(seed))
    assert symmetric(g)
    views = [frozenset(visible(g, nodes, x)) for x in nodes]
    assert all(len(v) >= n // 2 + 1 for v in views)
    assert len(set(views)) == n, "no two nodes may see the same majority"
    assert all(len(v) < n for v in views), "every node must be cut from someone"


def test_majorities_ring_refuses_three_nodes():
    with pytest.raises(ValueError, match="at least 4"):
        majorities_ring(["n1", "n2", "n3"], random.Random(0))


@given(st.integers(min_value=3, max_value=11), st.integers(min_value=0, max_value=10_000))
def test_bridge_only_the_bridge_sees_both_halves(n, seed):
    nodes = [f"n{i}" for i in range(1, n + 1)]
    sides, g = bridge(nodes, random.Random(seed))
    (mid,) = set(sides[0]) & set(sides[1])
    assert mid not in g, "the bridge node drops no one"
    assert symmetric(g)
    for a, b in combinations([x for x in nodes if x != mid], 2):
        same_side = any(a in s and b in s for s in sides)
        assert (b in g.get(a, [])) != same_side


class ElectingDB:
    """Claims no leader for its first `quiet` asks, then n3: a cluster just restarted."""

    def __init__(self, quiet: int) -> None:
        self.quiet = quiet
        self.asked = 0

    def primaries(self, test: object) -> list[str]:
        self.asked += 1
        return [] if self.asked <= self.quiet else ["n3"]


def test_the_leader_shape_waits_for_a_leader_then_isolates_it(tmp_path):
    test = make_test(make_spec(NODES, tmp_path), tmp_path)
    test.db = ElectingDB(quiet=3)  # type: ignore[assignment]
    nem = PartitionNemesis(["leader"])
    leaders = nem.await_leaders(test)
    assert leaders == ["n3"] and test.db.asked == 4
    grudge, detail = nem.grudge_for("leader", test, test.rng, leaders)
    assert detail["leader"] == "n3" and grudge == isolate(NODES, ["n3"])


def test_the_leader_wait_is_bounded_and_then_a_random_node_is_isolated(tmp_path, monkeypatch):
    monkeypatch.setattr(partition, "LEADER_WAIT_S", 0.3)
    test = make_test(make_spec(NODES, tmp_path), tmp_path)
    test.db = ElectingDB(quiet=10**9)  # type: ignore[assignment]
    nem = PartitionNemesis(["leader"])
    assert nem.await_leaders(test) == [] and test.db.asked >= 2
    _, detail = nem.grudge_for("leader", test, test.rng, [])
    assert detail["leader"] is None and len(detail["sides"][0]) == 1


def test_a_db_that_cannot_name_leaders_is_not_waited_for(tmp_path):
    test = make_test(make_spec(NODES, tmp_path), tmp_path)
    assert test.db is None and PartitionNemesis(["leader"]).await_leaders(test) == []


def test_the_larger_side_is_the_nodes_cutting_fewer_peers():
    assert larger_side(isolate(NODES, ["n3"])) == ["n1", "n2", "n4", "n5"]
    assert larger_side(complete_grudge([["n1", "n2"], ["n3", "n4", "n5"]])) == ["n3", "n4", "n5"]
    assert larger_side(complete_grudge([["n1", "n2"], ["n3", "n4"]])) == []  # even: one wave
    assert larger_side({}) == []


class RecordingRemote:
    """Answers every command at once and logs which node ran it, in order."""

    def __init__(self, node: str, log: list[str]) -> None:
        self.node, self.log = node, log

    def exec(self, argv, *, timeout=None, check=True, env=None) -> ExecResult:
        self.log.append(self.node)
        return ExecResult(0, "", "")


class Addresses:
    def peer_address(self, node: str) -> str:
        return f"10.0.0.{node[1:]}"


def test_an_isolated_leader_is_cut_off_by_its_peers_before_it_stops_hearing_them(tmp_path):
    # A node's rule stops only what reaches it: the peers' rules go in first, so nothing the cut-off
    # leader appends after the cut reaches them, as in a partition that drops both ways at once
    test = make_test(make_spec(NODES, tmp_path), tmp_path)
    log: list[str] = []
    test.backend = Addresses()  # type: ignore[assignment]
    test.remotes = {n: RecordingRemote(n, log) for n in NODES}  # type: ignore[misc]
    done = PartitionNemesis(["leader"]).start(test, Op(0, 0, "invoke", "nemesis", "start-partition",
                                                       value="leader"), "leader", ["n3"])
    assert done.value["sides"] == [["n3"], ["n1", "n2", "n4", "n5"]]
    assert sorted(log[:4]) == ["n1", "n2", "n4", "n5"] and log[4:] == ["n3"]


def test_complete_grudge_of_disjoint_sides():
    assert complete_grudge([["n1"], ["n2", "n3"]]) == {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}


@pytest.mark.docker
def test_partition_cuts_peer_traffic_but_not_the_controller_and_heal_restores(probe_cluster):
    test = probe_cluster
    test.db.leader = "n1"
    nem = PartitionNemesis(["leader"])
    nem.setup(test)
    assert peer_can_reach(test, "n2", "n1") and peer_can_reach(test, "n1", "n3")
    try:
        done = nem.invoke(test, Op(0, 0, "invoke", "nemesis", "start-partition", value="leader"))
        assert done.type == INFO
        assert done.value["shape"] == "leader" and done.value["leader"] == "n1"
        assert done.value["grudge"] == {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}
        # Both directions are cut between the sides; the majority side still talks.
        assert not peer_can_reach(test, "n2", "n1")
        assert not peer_can_reach(test, "n1", "n3")
        assert peer_can_reach(test, "n2", "n3")
        # The controller still reaches the isolated node.
        assert test.db.status(test, "n1") is not None
        rules = test.remotes["n1"].exec(["iptables", "-S", CHAIN]).stdout
        assert rules.count("--comment jepsen-py -j DROP") == 2
        jumps = test.remotes["n1"].exec(["iptables", "-S", "INPUT"]).stdout
        assert "--comment jepsen-py -j JEPSEN-PY" in jumps
    finally:
        healed = nem.invoke(test, Op(1, 1, "invoke", "nemesis", "stop-partition"))
    assert healed.value["healed"] == {"n1": 2, "n2": 1, "n3": 1}
    assert peer_can_reach(test, "n2", "n1") and peer_can_reach(test, "n1", "n3")
    assert "DROP" not in test.remotes["n1"].exec(["iptables", "-S", CHAIN]).stdout
    nem.teardown(test)
    assert all("jepsen-py" not in test.remotes[n].exec(["iptables", "-S"]).stdout for n in test.nodes)


@pytest.mark.docker
def test_heal_leaves_rules_it_did_not_make(probe_cluster):
    test = probe_cluster
    r = test.remotes["n3"]
    foreign = ["iptables", "-A", "INPUT", "-s", "192.0.2.7", "-j", "DROP"]  # TEST-NET, never routed
    r.exec(foreign)
    try:
        nem = PartitionNemesis(["one"])
        nem.invoke(test, Op(0, 0, "invoke", "nemesis", "start-partition", value="one"))
        nem.heal(test)
        assert "192.0.2.7" in r.exec(["iptables", "-S", "INPUT"]).stdout
        nem.teardown(test)
        rules = r.exec(["iptables", "-S"]).stdout
        assert "192.0.2.7" in rules and "jepsen-py" not in rules and CHAIN not in rules
    finally:
        r.exec(["iptables", "-D", "INPUT", "-s", "192.0.2.7", "-j", "DROP"], check=False)
