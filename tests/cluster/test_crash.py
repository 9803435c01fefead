"""kill -9 node processes at random moments under load: every acknowledged write survives, on every node.

Each writer owns one key and writes 1, 2, 3, ... to it through random nodes. A write the cluster
acknowledged must be visible after any crash; a write that timed out may or may not be. After the
chaos every node (restarted from its own disk) must hold, for every key, the last acknowledged value
or a later indeterminate one, and all nodes must agree. Small snapshot intervals make restarts go
through snapshot recovery, WAL compaction and InstallSnapshot too.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from jepsen_py.cluster.client import ClusterError
from jepsen_py.cluster.realio import OSDisk, real_env

from jepsen_py.raftdb.local import LocalCluster

WRITERS = 6
CHAOS_SECONDS = 14.0
SNAPSHOT_ENTRIES = 150
# Acknowledged writes the chaos must have let through: two snapshot intervals, so the final restart
# goes through snapshot recovery however few writes a loaded machine managed in CHAOS_SECONDS (225
# with two busy loops on the 2 cores, where 100 could leave no snapshot to recover).
MIN_OK = 2 * SNAPSHOT_ENTRIES
SEED = 20261122

DISK = OSDisk()


@dataclass
class KeyLog:
    acked: int = 0
    maybe: set[int] = field(default_factory=set)
    ok: int = 0
    failed: int = 0


def writer(c: LocalCluster, w: int, log: KeyLog, stop: threading.Event, rng: random.Random) -> None:
    value = 0
    clients = {nid: c.client(nid, timeout=1.5) for nid in c.nodes}
    try:
        while not stop.is_set():
            value += 1
            nid = rng.choice(list(c.nodes))
            try:
                clients[nid].commit_offset("crash", "orders", w, value)
                log.acked = value
                log.maybe.clear()  # values before an acknowledged one can no longer be the final one
                log.ok += 1
            except ClusterError as e:
                if e.definite:
                    log.failed += 1
                else:
                    log.maybe.add(value)
                time.sleep(0.02)
    finally:
        for cl in clients.values():
            cl.close()


def wait_converged(c: LocalCluster, timeout: float = 30.0) -> int:
    """Waits until every node has applied the leader's commit index; returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leader = c.wait_for_leader(20)
        with c.client(leader) as cl:
            try:
                cl.commit_offset("crash", "barrier", 0, 1)  # commits an entry of the current term
            except ClusterError:
                continue
        sts = [c.status(n) for n in c.nodes]
        if all(s is not None for s in sts):
            commit = max(s["commit"] for s in sts)
            if all(s["applied"] == commit for s in sts):
                return commit
        time.sleep(0.1)
    raise AssertionError(f"nodes did not converge: {[c.status(n) for n in c.nodes]}")


def check_every_node(c: LocalCluster, logs: list[KeyLog]) -> None:
    for nid in c.nodes:
        with c.client(nid) as cl:
            for w, log in enumerate(logs):
                got = cl.fetch_offset("crash", "orders", w, local=True)["offset"]
                allowed = {log.acked} | {v for v in log.maybe if v > log.acked}
                if log.acked == 0:
                    allowed.add(None)
                assert got in allowed, (
                    f"{nid} key {w}: holds {got}, last acknowledged {log.acked}, "
                    f"indeterminate {sorted(log.maybe)}"
                )
    finals = {nid: [c.client(nid).fetch_offset("crash", "orders", w, local=True)["offset"]
                    for w in range(len(logs))] for nid in c.nodes}
    assert len({tuple(v) for v in finals.values()}) == 1, f"nodes disagree: {finals}"


def test_kill9_at_random_moments_loses_no_acknowledged_write(tmp_path):
    rng = random.Random(SEED)
    extra = ["--snapshot-entries", str(SNAPSHOT_ENTRIES), "--retain-entries", "20"]
    with LocalCluster(3, str(tmp_path), extra_args=extra) as c:
        c.start_all()
        c.wait_for_leader(20)
        logs = [KeyLog() for _ in range(WRITERS)]
        stop = threading.Event()
        threads = [threading.Thread(target=writer, args=(c, w, logs[w], stop, random.Random(SEED + w)))
                   for w in range(WRITERS)]
        for t in threads:
            t.start()
        kills = 0
        try:
            # The chaos lasts CHAOS_SECONDS, and on a loaded machine longer, until enough writes were
            # acknowledged to mean anything (bounded): the ops asserted below, not the clock, end it.
            end = time.monotonic() + CHAOS_SECONDS
            give_up = end + 4 * CHAOS_SECONDS
            while time.monotonic() < end or (sum(k.ok for k in logs) <= MIN_OK
                                             and time.monotonic() < give_up):
                time.sleep(rng.uniform(0.2, 0.9))
                if rng.random() < 0.5:
                    leader = next((n for n in c.nodes if (c.status(n, 0.3) or {}).get("role") == "leader"),
                                  None)
                    victim = leader or rng.choice(list(c.nodes))
                else:
                    victim = rng.choice(list(c.nodes))
                c.kill(victim)
                kills += 1
                time.sleep(rng.uniform(0.0, 1.2))
                c.start(victim)
            # finally all three at once: only what was fsync'd survives, and that must be enough
            time.sleep(0.5)
            for nid in c.nodes:
                c.kill(nid)
            kills += 3
            for nid in c.nodes:
                c.start(nid)
            time.sleep(1.5)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert kills >= 6  # at least 3 single kills, then all three at once
        total_ok = sum(k.ok for k in logs)
        assert total_ok > MIN_OK, f"too few acknowledged writes to mean anything: {total_ok}"
        wait_converged(c)
        check_every_node(c, logs)
        # restarts went through snapshot recovery; no node crashed by itself
        assert any("recovered snapshot" in c.log_text(n) for n in c.nodes)
        for nid in c.nodes:
            assert "Traceback" not in c.stderr_text(nid)


def _node(data_dir: str, logs: list[str]):
    from jepsen_py.cluster.node import Node, NodeConfig

    cfg = NodeConfig(id="n1", peers={"n1": ("127.0.0.1", 1), "n2": ("127.0.0.1", 2), "n3": ("127.0.0.1", 3)},
                     data_dir=data_dir, client_port=4, cluster_id="c")
    return Node(cfg, logs.append, env=real_env())


def test_crash_between_snapshot_install_and_wal_rewrite(tmp_path):
    """The leader's snapshot (index 8, term 3) replaced a divergent log (entries of term 2 up to 10).
    If the node dies after the snapshot file is durable but before the WAL is rewritten, recovery
    must not stitch the old term-2 entries 9..10 behind the term-3 snapshot."""
    from jepsen_py.cluster import snapshots
    from jepsen_py.cluster.raft.messages import Entry, HardState, Snapshot
    from jepsen_py.cluster.state_machine import MetadataState
    from jepsen_py.cluster.wal import WAL

    d = str(tmp_path / "n1")
    wal, _ = WAL.open(DISK, d, "c", "n1")
    wal.save(HardState(term=2, vote="n2", commit=4), [Entry(2, i, {"op": "noop"}) for i in range(1, 11)])
    wal.close()
    state = MetadataState()
    for i in range(1, 9):
        state.apply(i, 3, {"op": "commit_offset", "group": "g", "topic": "t", "partition": 0, "offset": i})
    snapshots.save(DISK, d, "c", Snapshot(index=8, term=3, peers=("n1", "n2", "n3"), data=state.snapshot()))
    logs: list[str] = []
    node = _node(d, logs)
    try:
        assert node.storage.last_index() == 8 and node.storage.term(8) == 3
        assert node.state.fetch_offset("g", "t", 0) == 8
        assert any("dropping 2 WAL entries after snapshot 8" in m for m in logs)
    finally:
        node.wal.close()


def test_own_compaction_snapshot_keeps_the_wal_tail(tmp_path):
    """The node's own snapshot at 6 agrees with its WAL: entries 7..10 are kept on recovery."""
    from jepsen_py.cluster import snapshots
    from jepsen_py.cluster.raft.messages import Entry, HardState, Snapshot
    from jepsen_py.cluster.state_machine import MetadataState
    from jepsen_py.cluster.wal import WAL

    d = str(tmp_path / "n1")
    wal, _ = WAL.open(DISK, d, "c", "n1")
    wal.save(HardState(term=2, vote="n2", commit=10), [Entry(2, i, None) for i in range(1, 11)])
    wal.close()
    state = MetadataState()
    for i in range(1, 7):
        state.apply(i, 2, None)
    snapshots.save(DISK, d, "c", Snapshot(index=6, term=2, peers=("n1", "n2", "n3"), data=state.snapshot()))
    node = _node(d, [])
    try:
        assert node.storage.first_index() == 7 and node.storage.last_index() == 10
    finally:
        node.wal.close()
