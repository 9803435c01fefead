"""The metadata state machine: deterministic, total, snapshot/restore round trip."""

from __future__ import annotations

import json
import random

import pytest
from jepsen_py.cluster.state_machine import CommandError, MetadataState, validate


def leader_change(leader: str, term: int, alive: list[str] | None = None) -> dict:
    brokers = ["n1", "n2", "n3"]
    return {"op": "leader_change", "leader": leader, "term": term, "brokers": brokers,
            "alive": alive if alive is not None else brokers}


def build(cmds: list[dict | None]) -> tuple[MetadataState, list[dict]]:
    s = MetadataState()
    results = [s.apply(i + 1, 1, c) for i, c in enumerate(cmds)]
    return s, results


def test_create_topic_then_second_create_is_already_exists():
    s, r = build([
        leader_change("n1", 1),
        {"op": "create_topic", "name": "orders", "partitions": 3, "rf": 2},
        {"op": "create_topic", "name": "orders", "partitions": 5, "rf": 1},
    ])
    assert r[1]["ok"] and r[1]["created"]
    assert r[2] == {"ok": False, "error": "already_exists", "message": "topic 'orders' already exists"}
    d = s.describe("orders")
    assert d is not None and len(d["partitions"]) == 3 and d["rf"] == 2
    for p in d["partitions"]:
        assert len(p["replicas"]) == 2 and len(set(p["replicas"])) == 2
        assert p["leader"] == "n1" and p["leader_epoch"] == 1
        assert "n1" in p["isr"]
    assert s.list_topics() == ["orders"]


def test_partition_leadership_follows_the_raft_leader_with_epochs():
    s, _ = build([
        leader_change("n1", 1),
        {"op": "create_topic", "name": "t", "partitions": 2, "rf": 3},
        leader_change("n2", 2, alive=["n2", "n3"]),
    ])
    for p in s.describe("t")["partitions"]:
        assert p["leader"] == "n2" and p["leader_epoch"] == 2
        assert set(p["isr"]) == {"n2", "n3"}
    # a leader_change from an older term (delayed in the log) does not roll leadership back
    r = s.apply(s.applied_index + 1, 1, leader_change("n1", 1))
    assert r["error"] == "stale" and s.describe("t")["partitions"][0]["leader"] == "n2"


def test_offsets_are_per_group_topic_partition_and_overwrite():
    s, r = build([
        {"op": "commit_offset", "group": "g1", "topic": "orders", "partition": 0, "offset": 5},
        {"op": "commit_offset", "group": "g1", "topic": "orders", "partition": 1, "offset": 7},
        {"op": "commit_offset", "group": "g2", "topic": "orders", "partition": 0, "offset": 9},
        {"op": "commit_offset", "group": "g1", "topic": "orders", "partition": 0, "offset": 3},
    ])
    assert all(x["ok"] for x in r)
    assert s.fetch_offset("g1", "orders", 0) == 3
    assert s.fetch_offset("g1", "orders", 1) == 7
    assert s.fetch_offset("g2", "orders", 0) == 9
    assert s.fetch_offset("g3", "orders", 0) is None
    assert s.groups() == ["g1", "g2"]


def test_commit_to_a_partition_past_the_topic_is_rejected():
    s, r = build([
        leader_change("n1", 1),
        {"op": "create_topic", "name": "t", "partitions": 2, "rf": 1},
        {"op": "commit_offset", "group": "g", "topic": "t", "partition": 2, "offset": 1},
    ])
    assert r[2]["error"] == "invalid_partition" and s.fetch_offset("g", "t", 2) is None


@pytest.mark.parametrize("cmd,code", [
    ({"op": "drop_database"}, "unknown_op"),
    ({}, "unknown_op"),
    ({"op": "create_topic", "name": "", "partitions": 1, "rf": 1}, "invalid"),
    ({"op": "create_topic", "name": "a/b", "partitions": 1, "rf": 1}, "invalid"),
    ({"op": "create_topic", "name": "t", "partitions": 0, "rf": 1}, "invalid"),
    ({"op": "create_topic", "name": "t", "partitions": True, "rf": 1}, "invalid"),
    ({"op": "create_topic", "name": "t", "partitions": "3", "rf": 1}, "invalid"),
    ({"op": "commit_offset", "group": "g", "topic": "t", "partition": -1, "offset": 1}, "invalid"),
    ({"op": "commit_offset", "group": "g", "topic": "t", "partition": 0, "offset": 2**70}, "invalid"),
    ({"op": "commit_offset", "group": None, "topic": "t", "partition": 0, "offset": 1}, "invalid"),
    ({"op": "leader_change", "leader": "n1", "term": 1, "brokers": "n1", "alive": []}, "invalid"),
])
def test_malformed_commands_are_errors_not_exceptions(cmd, code):
    with pytest.raises(CommandError) as e:
        validate(cmd)
    assert e.value.code == code
    s = MetadataState()
    r = s.apply(1, 1, cmd)
    assert r["ok"] is False and r["error"] == code and s.applied_index == 1


def test_rf_larger_than_brokers_is_rejected():
    _, r = build([leader_change("n1", 1), {"op": "create_topic", "name": "t", "partitions": 1, "rf": 4}])
    assert r[1]["error"] == "invalid_replication_factor"


def test_out_of_order_apply_raises():
    s = MetadataState()
    s.apply(1, 1, None)
    with pytest.raises(RuntimeError, match="out of order"):
        s.apply(3, 1, None)


def random_commands(rng: random.Random, n: int) -> list[dict | None]:
    out: list[dict | None] = []
    for i in range(n):
        k = rng.random()
        if k < 0.1:
            out.append(leader_change(rng.choice(["n1", "n2", "n3"]), i, rng.sample(["n1", "n2", "n3"], 2)))
        elif k < 0.3:
            out.append({"op": "create_topic", "name": f"t{rng.randrange(20)}",
                        "partitions": rng.randrange(1, 5), "rf": rng.randrange(1, 4)})
        elif k < 0.9:
            out.append({"op": "commit_offset", "group": f"g{rng.randrange(3)}",
                        "topic": f"t{rng.randrange(20)}", "partition": rng.randrange(4),
                        "offset": rng.randrange(1000)})
        elif k < 0.95:
            out.append(None)
        else:
            out.append({"op": "bogus", "x": i})
    return out


def test_deterministic_and_snapshot_restore_is_exact():
    rng = random.Random(7)
    cmds = random_commands(rng, 2000)
    a, ra = build(cmds)
    b, rb = build(cmds)
    assert ra == rb and a.snapshot() == b.snapshot()
    # restore a snapshot taken halfway (through JSON, as on disk), apply the rest: same final state
    half = MetadataState()
    for i, c in enumerate(cmds[:1000]):
        half.apply(i + 1, 1, c)
    restored = MetadataState.restore(json.loads(json.dumps(half.snapshot())))
    assert restored.snapshot() == half.snapshot()
    rest = [restored.apply(i + 1001, 1, c) for i, c in enumerate(cmds[1000:])]
    assert rest == ra[1000:]
    assert restored.snapshot() == a.snapshot()


def txn(*mops: list) -> dict:
    return {"op": "txn", "mops": [list(m) for m in mops]}


def test_a_txn_applies_whole_and_its_reads_see_its_own_earlier_writes():
    s, r = build([
        txn(["append", 1, 10], ["w", "x", 5]),
        txn(["r", 1, None], ["append", 1, 11], ["r", 1, None], ["r", "x", None], ["w", "x", 6],
            ["r", "x", None], ["r", 2, None]),
    ])
    assert r[0] == {"ok": True, "mops": [["append", 1, 10], ["w", "x", 5]]}
    assert r[1]["mops"] == [["r", 1, [10]], ["append", 1, 11], ["r", 1, [10, 11]], ["r", "x", 5],
                            ["w", "x", 6], ["r", "x", 6], ["r", 2, None]]
    assert s.kv == {"1": [10, 11], "x": 6}
    assert s.read_txn([["r", 1, None], ["r", "y", None]]) == [["r", 1, [10, 11]], ["r", "y", None]]


def test_a_txn_whose_later_micro_op_cannot_apply_leaves_nothing_behind():
    s, r = build([txn(["w", "reg", 1]), txn(["append", "l", 1], ["w", "x", 2], ["append", "reg", 3])])
    assert r[1]["ok"] is False and r[1]["error"] == "invalid" and "register" in r[1]["message"]
    assert s.kv == {"reg": 1}  # neither the append to l nor the write of x happened


@pytest.mark.parametrize("cmd", [
    {"op": "txn"}, {"op": "txn", "mops": []}, {"op": "txn", "mops": [["x", 1, 1]]},
    {"op": "txn", "mops": [["append", 1, "a"]]}, {"op": "txn", "mops": [["w", None, 1]]},
    {"op": "txn", "mops": [["r", 1]]}, {"op": "txn", "mops": [["w", True, 1]]},
    {"op": "txn", "mops": [["append", 1, 1]] * 1001},
])
def test_malformed_txns_are_invalid_before_they_reach_the_log(cmd):
    with pytest.raises(CommandError):
        validate(cmd)
    s, r = build([cmd])
    assert r[0]["ok"] is False and s.kv == {}


def test_the_keyspace_survives_a_snapshot_and_is_absent_from_one_without_txns():
    s, _ = build([txn(["append", 1, 1], ["w", 2, 7])])
    snap = json.loads(json.dumps(s.snapshot()))
    assert MetadataState.restore(snap).kv == {"1": [1], "2": 7}
    assert "kv" not in build([None])[0].snapshot()
