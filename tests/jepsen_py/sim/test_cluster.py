"""SimCluster: the real nodes of cluster/ elect, fail over, recover from their simulated disks, and a
seed fixes every delivered byte and every log line."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from typing import Any

from jepsen_py.cluster.framing import MAX_CLIENT_FRAME, encode, read_frame

from jepsen_py.sim.cluster import CLIENT_PORT, SimCluster, sim_node_config
from jepsen_py.sim.disk import DiskProfile

NODES = ["n1", "n2", "n3", "n4", "n5"]


async def call(c: SimCluster, node: str, req: dict[str, Any]) -> dict[str, Any] | None:
    """One request over the client wire protocol from the controller host."""
    reader, writer = await c.client_net.open_connection(node, CLIENT_PORT)
    try:
        writer.write(encode({"id": 1, **req}))
        await writer.drain()
        return await read_frame(reader, MAX_CLIENT_FRAME)
    finally:
        writer.close()


def create_topics(c: SimCluster, leader: str, names: list[str]) -> None:
    for name in names:
        resp = c.run_until_complete(call(c, leader, {"op": "create_topic", "name": name, "partitions": 1,
                                                     "rf": 1, "timeout_ms": 2000}), timeout=5)
        assert resp is not None and resp["ok"], resp


def wait_for_leader(c: SimCluster, among: list[str], within: float) -> str:
    deadline = c.now() + within
    while c.now() < deadline:
        c.run_for(0.1)
        leaders = [n for n in c.leaders() if n in among]
        others_agree = {(c.status(n) or {}).get("leader") for n in among if c.is_up(n)}
        if len(leaders) == 1 and others_agree == {leaders[0]}:
            return leaders[0]
    raise AssertionError(f"no leader among {among} by t={c.now():.1f}: {c.leaders()}")


def test_a_leader_is_elected_in_virtual_time() -> None:
    with SimCluster(1, NODES) as c:
        c.start_all()
        leader = wait_for_leader(c, NODES, within=5.0)
        assert c.now() < 5.0
        st = c.status(leader)
        assert st is not None and st["role"] == "leader"
        assert c.errors() == {}
        logs = c.node_logs()
        assert all(any("listening" in line for line in logs[n]) for n in NODES)


def test_cutting_the_leader_off_elects_another_and_it_serves_writes() -> None:
    with SimCluster(2, NODES) as c:
        c.start_all()
        old = wait_for_leader(c, NODES, within=5.0)
        rest = [n for n in NODES if n != old]
        c.cut([(old, n) for n in rest] + [(n, old) for n in rest])
        new = wait_for_leader(c, rest, within=5.0)
        assert new != old
        create_topics(c, new, ["t-after-cut"])
        c.run_for(3.0)
        assert (c.status(old) or {}).get("role") != "leader"  # CheckQuorum: it stepped down
        c.heal_network()
        c.run_for(3.0)
        assert (c.status(old) or {}).get("leader") == new


def test_kill_and_restart_recovers_the_synced_log_from_the_simulated_disk() -> None:
    with SimCluster(3, NODES) as c:
        c.start_all()
        leader = wait_for_leader(c, NODES, within=5.0)
        create_topics(c, leader, [f"t{i}" for i in range(5)])
        c.run_for(1.0)
        victim = next(n for n in NODES if n != leader)
        before = c.status(victim)
        assert before is not None
        c.kill(victim)
        assert c.status(victim) is None
        c.run_for(1.0)
        c.start(victim)
        c.run_for(0.01)
        after = c.status(victim)
        assert after is not None and after["last_index"] >= before["commit"] >= 6
        assert any("wal: replayed" in line for line in c.node_logs()[victim][-20:])
        c.run_for(3.0)
        assert (c.status(victim) or {}).get("leader") == wait_for_leader(c, NODES, within=5.0)


def test_a_node_without_fsync_loses_its_unsynced_log_in_a_kill() -> None:
    def config(name: str) -> Any:
        return sim_node_config(name, NODES, 4, fsync=name != "n5")

    with SimCluster(4, NODES, config, disk=DiskProfile(torn_p=0.0)) as c:
        c.start_all()
        leader = wait_for_leader(c, [n for n in NODES if n != "n5"], within=5.0)
        create_topics(c, leader, [f"t{i}" for i in range(5)])
        c.run_for(1.0)
        assert (c.status("n5") or {}).get("last_index", 0) >= 6
        c.kill("n5")
        c.start("n5")
        c.run_for(0.005)
        replays = [line for line in c.node_logs()["n5"] if "wal: replayed" in line]
        assert len(replays) == 2
        assert "entries -..-" in replays[1]  # nothing it wrote after the header was ever synced


def test_a_fatal_disk_error_exits_only_that_node_and_it_restarts() -> None:
    with SimCluster(5, NODES) as c:
        c.start_all()
        leader = wait_for_leader(c, NODES, within=5.0)
        victim = next(n for n in NODES if n != leader)
        c.hosts[victim].disk.io_error = True
        create_topics(c, leader, ["t"])
        c.run_for(1.0)
        assert [(n, code) for _, n, code in c.exits] == [(victim, 70)]
        assert not c.is_up(victim)
        assert all(c.is_up(n) for n in NODES if n != victim)
        assert any("FATAL" in line for line in c.node_logs()[victim])
        c.hosts[victim].disk.io_error = False
        c.start(victim)
        c.run_for(3.0)
        assert (c.status(victim) or {}).get("leader") is not None


def test_pause_and_clock_faults_reach_the_node() -> None:
    with SimCluster(6, NODES) as c:
        c.start_all()
        leader = wait_for_leader(c, NODES, within=5.0)
        c.pause(leader)
        assert c.status(leader) is None
        rest = [n for n in NODES if n != leader]
        new = wait_for_leader(c, rest, within=5.0)
        c.resume(leader)
        c.run_for(2.0)
        assert (c.status(leader) or {}).get("leader") == new
        node = c.node(new)
        assert node is not None
        before = node.clock.monotonic()
        c.set_clock(new, 30.0)
        assert abs(node.clock.monotonic() - before - 30.0) < 1e-6
        c.reset_clocks()
        c.run_for(3.0)
        assert c.leaders()


def scenario(seed: int) -> str:
    """A run with a partition, a kill and client writes; a digest of every delivered byte (with its
    time and link) and every node log line."""
    d = hashlib.sha256()
    with SimCluster(seed, NODES) as c:
        def tap(now: float, src: str, dst: str, chunk: bytes) -> None:
            d.update(f"{now!r} {src}>{dst} ".encode())
            d.update(chunk)

        c.net.on_deliver = tap
        c.start_all()
        leader = wait_for_leader(c, NODES, within=5.0)
        create_topics(c, leader, ["a", "b"])
        c.cut([(leader, n) for n in NODES if n != leader])
        c.run_for(3.0)
        c.heal_network()
        c.kill(NODES[0])
        c.run_for(1.0)
        c.start(NODES[0])
        c.run_for(3.0)
        d.update(c.fingerprint().encode())
        return d.hexdigest()


def test_same_seed_same_run_different_seed_different_run() -> None:
    assert scenario(11) == scenario(11)
    assert scenario(11) != scenario(12)


def test_the_run_does_not_depend_on_the_string_hash_seed() -> None:
    code = "import sys; from tests.jepsen_py.sim.test_cluster import scenario; print(scenario(11))"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    outs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        p = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                           timeout=600, check=True)
        outs.add(p.stdout.strip())
    assert outs == {scenario(11)}


def test_an_uncaught_error_in_a_node_ends_only_its_process_with_exit_1(monkeypatch: Any) -> None:
    import asyncio

    from jepsen_py.cluster.node import Node

    real_run = Node.run

    async def run(self: Node) -> None:
        if self.cfg.id == "n2":
            await asyncio.sleep(1.0)
            raise RuntimeError("boom")
        await real_run(self)

    monkeypatch.setattr(Node, "run", run)
    with SimCluster(8, NODES) as c:
        c.start_all()
        c.run_for(2.0)
        assert [(n, code) for _, n, code in c.exits] == [("n2", 1)]
        assert not c.is_up("n2") and all(c.is_up(n) for n in NODES if n != "n2")
        assert any("RuntimeError: boom" in line for line in c.node_logs()["n2"])
        assert wait_for_leader(c, [n for n in NODES if n != "n2"], within=5.0)
