"""The workload client against a real 3-node cluster of node processes on 127.0.0.1: every outcome
classified as Jepsen's rules say, every completion naming its server."""

from __future__ import annotations

import logging
import os
import random
import signal
import time
from pathlib import Path

import pytest
from jepsen_py.workloads import cluster_client

from jepsen_py import protocols
from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from jepsen_py.raftdb.local import LocalCluster


class LoopbackEndpoints:
    """Where each local node's client port listens (the part of a Backend the client uses)."""

    name = "loopback"

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    def client_endpoint(self, node: str, port: int) -> tuple[str, int]:
        return "127.0.0.1", self.cluster.nodes[node].client_port


def make_test(tmp_path: Path, cluster: LocalCluster) -> protocols.Test:
    spec = protocols.TestSpec(name="t", workload="metadata", nemesis=[], nodes=list(cluster.nodes),
                    time_limit=1, concurrency=1, rate=0, nemesis_interval=1, seed=1, backend="local",
                    read_mode="read-index", bugs=[], db="jepsen_py.raftdb:RaftMetadataDB",
                    results_dir=tmp_path)
    spec.op_timeout = 1.5
    return protocols.Test(spec=spec, store_dir=tmp_path, log=logging.getLogger("t"), rng=random.Random(1),
                backend=LoopbackEndpoints(cluster))  # type: ignore[arg-type]


def inv(f: str, key: object = None, value: object = None, node: str | None = None) -> Op:
    return Op(index=0, time=0, type="invoke", process=0, f=f, key=key, value=value, node=node)


def until_ok(client, test, op, seconds: float = 60.0) -> Op:  # a bound on a hang, not an expectation
    deadline = time.monotonic() + seconds
    while True:
        c = client.invoke(test, op)
        if c.type == "ok" or time.monotonic() > deadline:
            return c
        time.sleep(0.1)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(3, str(tmp_path_factory.mktemp("cluster")), tick_ms=50, election_tick=10) as c:
        c.start_all()
        c.wait_for_leader(20)
        yield c


def test_ok_outcomes_name_node_role_term_and_leader(tmp_path, cluster):
    test = make_test(tmp_path, cluster)
    template = cluster_client("metadata", None)
    client = template.open(test, "n1")
    try:
        c = until_ok(client, test, inv("commit", "billing/orders/0", 7))
        assert (c.type, c.value, c.node) == ("ok", 7, "n1")
        assert c.meta["role"] in ("leader", "follower") and c.meta["term"] >= 1 and c.meta["leader"]
        c = client.invoke(test, inv("fetch", "billing/orders/0"))
        assert (c.type, c.value) == ("ok", 7)
        c = client.invoke(test, inv("fetch", "billing/orders/1"))
        assert (c.type, c.value) == ("ok", None)  # nothing committed: None, and still ok

        c = client.invoke(test, inv("describe", "topic-1"))
        assert (c.type, c.value) == ("ok", None)
        c = until_ok(client, test, inv("create", "topic-1", {"partitions": 2, "rf": 3}))
        assert c.type == "ok" and c.value == {"created": True}
        c = client.invoke(test, inv("create", "topic-1", {"partitions": 2, "rf": 3}))
        assert (c.type, c.error) == ("fail", "already_exists") and c.node == "n1" and c.meta["term"] >= 1
        c = client.invoke(test, inv("describe", "topic-1"))
        assert c.type == "ok" and len(c.value["partitions"]) == 2
        assert {p["leader"] for p in c.value["partitions"]} == {c.meta["leader"]}
        c = client.invoke(test, inv("list"))
        assert c.type == "ok" and "topic-1" in c.value

        # An invocation naming another node goes there (final reads).
        c = client.invoke(test, inv("fetch", "billing/orders/0", node="n3"))
        assert (c.type, c.value, c.node) == ("ok", 7, "n3")

        c = client.invoke(test, inv("create", "topic-2", {"partitions": 1, "rf": 9}))
        assert c.type == "fail" and c.error == "invalid_replication_factor"
    finally:
        client.close(test)


def test_a_paused_node_times_out_as_info_and_a_dead_one_fails(tmp_path, cluster):
    test = make_test(tmp_path, cluster)
    client = cluster_client("offsets", None).open(test, "n2")
    proc = cluster.nodes["n2"].proc
    assert proc is not None
    try:
        assert until_ok(client, test, inv("fetch", "audit/orders/0")).type == "ok"
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            c = client.invoke(test, inv("commit", "audit/orders/0", 1))
            assert (c.type, c.error) == ("info", "timeout")  # sent, no answer: may or may not apply
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        cluster.kill("n2")
        c = client.invoke(test, inv("commit", "audit/orders/0", 2))
        assert (c.type, c.error, c.node) == ("fail", "unavailable", "n2")  # never reached it
    finally:
        client.close(test)
        cluster.start("n2")


def test_unknown_workload_and_op_are_bad_input(tmp_path, cluster):
    with pytest.raises(BadInput, match="no client for 'bank'"):
        cluster_client("bank", None)
    test = make_test(tmp_path, cluster)
    client = cluster_client("offsets", None).open(test, "n1")
    with pytest.raises(BadInput, match="cannot perform 'transfer'"):
        client.invoke(test, inv("transfer", "x"))
