"""The workload client in the simulator against real simulated nodes: an answer is ok and names its
server, a killed node's refusal is fail, a paused node's silence is info after the timeout."""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path

from jepsen_py.history import FAIL, INFO, INVOKE, OK, Op
from jepsen_py.protocols import Test, TestSpec
from jepsen_py.sim.client import SimClient
from jepsen_py.sim.cluster import SimCluster

NODES = ["n1", "n2", "n3"]


def make_test() -> Test:
    spec = TestSpec(name="t", workload="offsets", nemesis=[], nodes=list(NODES), time_limit=10, concurrency=1,
                    rate=0, nemesis_interval=10, seed=4, backend="sim", read_mode="read-index", bugs=[],
                    db="jepsen_py.raftdb:RaftMetadataDB", results_dir=Path("."))
    return Test(spec=spec, store_dir=Path("."), log=logging.getLogger("t"), rng=random.Random(4))


def inv(f: str, key: str, value: object = None, node: str | None = None) -> Op:
    return Op(0, 0, INVOKE, 0, f, key, value, node)


def test_ok_fail_and_info_as_on_docker() -> None:
    cluster = SimCluster(4, list(NODES))
    cluster.start_all()
    test = make_test()
    client = SimClient(cluster.client_net, port=9092, timeout=1.0)

    async def scenario() -> dict[str, Op]:
        while not cluster.leaders():
            await asyncio.sleep(0.1)
        leader = cluster.leaders()[0]
        follower = next(n for n in NODES if n != leader)
        other = next(n for n in NODES if n not in (leader, follower))
        out = {"commit": await client.open(test, leader).invoke(test, inv("commit", "g/t/0", 1))}
        out["fetch"] = await client.open(test, follower).invoke(test, inv("fetch", "g/t/0"))
        cluster.kill(other)
        out["killed"] = await client.open(test, other).invoke(test, inv("fetch", "g/t/0"))
        cluster.pause(follower)
        t0 = cluster.now()
        out["paused"] = await client.open(test, follower).invoke(test, inv("fetch", "g/t/0"))
        out["paused_s"] = Op(0, round((cluster.now() - t0) * 1e9), INFO, 0, "x")
        out["leader"] = Op(0, 0, INFO, 0, "x", leader)
        return out

    try:
        out = cluster.run_until_complete(scenario(), timeout=60)
    finally:
        cluster.close()
    leader = out["leader"].key
    assert out["commit"].type == OK and out["commit"].value == 1 and out["commit"].node == leader
    assert out["commit"].meta["role"] == "leader"
    assert out["fetch"].type == OK and out["fetch"].value == 1  # read-index: the follower asks the leader
    assert out["killed"].type == FAIL and out["killed"].error == "unavailable"
    assert out["paused"].type == INFO and out["paused"].error == "timeout"
    # the dial (a round trip) and then exactly the client's timeout, in virtual time
    assert 1_000_000_000 < out["paused_s"].time < 1_010_000_000
