"""The cluster's four workloads' generators, driven in virtual time (jepsen_py.generator.simulate).
The generic workloads (register, set, append, queue) are in test_generic.py."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest
from jepsen_py.workloads import CLUSTER_WORKLOADS, WORKLOADS
from jepsen_py.workloads.client import split_key

from jepsen_py import protocols
from jepsen_py.generator import seq, simulate, time_limit

NODES = ("n1", "n2", "n3", "n4", "n5")


def spec(workload: str, **options) -> protocols.TestSpec:
    return protocols.TestSpec(
        name="t", workload=workload, nemesis=[], nodes=list(NODES), time_limit=5, concurrency=10,
        rate=0, nemesis_interval=5, seed=1, backend="docker", read_mode="read-index", bugs=[],
        db="jepsen_py.raftdb:RaftMetadataDB", results_dir=Path("/tmp"), options=options)


def run(workload: str, seconds: float = 5.0, seed: int = 7, **options):
    w = WORKLOADS[workload](spec(workload, **options))
    main = simulate(time_limit(seconds, w.generator), concurrency=10, latency=0.005, nodes=NODES, seed=seed)
    w2 = WORKLOADS[workload](spec(workload, **options))
    both = simulate(seq(time_limit(seconds, w2.generator), w2.final_generator), concurrency=10,
                    latency=0.005, nodes=NODES, seed=seed)
    return w, [o.template for o in main], [o.template for o in both[len(main):]]


def test_registry_and_checker_names_are_unique():
    assert set(CLUSTER_WORKLOADS) == {"offsets", "topics", "describe", "metadata"}
    assert set(WORKLOADS) == {*CLUSTER_WORKLOADS, "register", "set", "append", "queue", "list-append",
                              "rw-register", "kafka"}
    for name in CLUSTER_WORKLOADS:
        w = WORKLOADS[name](spec(name))
        names = [c.name for c in w.checkers]
        assert len(names) == len(set(names)), names
        assert {"availability", "crash", "stats"} <= set(names)
        assert any(n.startswith("linearizable") for n in names)
        assert any(n.startswith("staleness") for n in names)


def test_offsets_unique_values_bounded_keys_and_final_reads_everywhere():
    _, ops, final = run("offsets", ops_per_key=50)
    per_key = Counter(o.key for o in ops)
    assert len(per_key) > 10 and max(per_key.values()) <= 50  # keys rotate, each bounded
    written = defaultdict(list)
    for o in ops:
        assert o.f in ("commit", "fetch")
        split_key(o.key)
        if o.f == "commit":
            written[o.key].append(o.value)
    for vals in written.values():
        assert len(vals) == len(set(vals))  # every commit's value is new for its key
    assert 0.4 < sum(o.f == "fetch" for o in ops) / len(ops) < 0.6
    assert {(o.key, o.node) for o in final} == {(k, n) for k in per_key for n in NODES}
    assert all(o.f == "fetch" for o in final)


def test_offsets_is_deterministic_under_a_seed():
    _, a, _ = run("offsets", seconds=1, seed=3)
    _, b, _ = run("offsets", seconds=1, seed=3)
    _, c, _ = run("offsets", seconds=1, seed=4)
    assert a == b and a != c


def test_topics_creates_collide_and_final_reads_cover_names_and_lists():
    _, ops, final = run("topics")
    creates = Counter(o.key for o in ops if o.f == "create")
    assert len(creates) > 5 and sum(1 for n in creates.values() if n >= 2) >= len(creates) // 2
    assert {o.f for o in ops} == {"create", "describe", "list"}
    assert all(o.value["rf"] == 3 and 1 <= o.value["partitions"] <= 3 for o in ops if o.f == "create")
    names = {o.key for o in ops if o.key is not None}
    assert {(o.key, o.node) for o in final if o.f == "describe"} == {(k, n) for k in names for n in NODES}
    assert sorted(o.node for o in final if o.f == "list") == sorted(NODES)


def test_describe_asks_every_node_in_turn():
    _, ops, final = run("describe", seconds=2)
    describes = [o for o in ops if o.f == "describe"]
    assert Counter(o.node for o in describes).keys() == set(NODES)
    spread = Counter(o.node for o in describes).values()
    assert max(spread) - min(spread) <= 1
    assert 0 < sum(o.f == "create" for o in ops) < len(ops) * 0.15
    assert len(final) == 3 * len(NODES)


def test_metadata_mixes_all_families_with_separate_keys():
    w, ops, final = run("metadata")
    fs = Counter(o.f for o in ops)
    assert set(fs) == {"commit", "fetch", "create", "describe", "list"}
    assert 0.4 < (fs["commit"] + fs["fetch"]) / len(ops) < 0.6
    topic_keys = {o.key for o in ops if o.f in ("create", "describe")}
    assert all(k.startswith(("topic-", "desc-")) for k in topic_keys)
    assert {"linearizable-offsets", "linearizable-topics", "staleness-offsets", "staleness-topics",
            "leaders", "topics"} <= {c.name for c in w.checkers}
    assert {o.f for o in final} == {"fetch", "describe", "list"}


@pytest.mark.parametrize("name", sorted(CLUSTER_WORKLOADS))
def test_linearizable_checker_runs_on_a_sequential_history(name):
    """The workload's checkers accept a history a correct single-copy system produces."""
    from jepsen_py.history import Op

    _, ops, _ = run(name, seconds=0.5)
    state: dict = {}
    topics: dict = {}
    hist: list[Op] = []
    t = 0
    for i, o in enumerate(ops[:300]):
        hist.append(Op(len(hist), t, "invoke", 0, o.f, o.key, o.value, "n1"))
        t += 1000
        typ, err, val = "ok", None, o.value
        if o.f == "commit":
            state[o.key] = o.value
        elif o.f == "fetch":
            val = state.get(o.key)
        elif o.f == "create":
            if o.key in topics:
                typ, err, val = "fail", "already_exists", o.value
            else:
                topics[o.key] = {"name": o.key, "partitions": [
                    {"partition": p, "leader": "n1", "leader_epoch": 1} for p in range(3)]}
                val = {"created": True}
        elif o.f == "describe":
            val = topics.get(o.key)
        elif o.f == "list":
            val = sorted(topics)
        hist.append(Op(len(hist), t, typ, 0, o.f, o.key, val, "n1", err,
                       {"role": "leader", "term": 1, "leader": "n1"}))
        t += 1000 + i
    w = WORKLOADS[name](spec(name))
    for c in w.checkers:
        if c.name in ("crash",):
            continue
        r = c.check(None, hist)
        assert r["valid"] is True, (c.name, r)
