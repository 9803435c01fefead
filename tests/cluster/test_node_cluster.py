"""3- and 5-node clusters of real node processes on 127.0.0.1: election, the API, leader death."""

from __future__ import annotations

import threading
import time

import pytest
from jepsen_py.cluster.client import AlreadyExists, ClusterError, InvalidRequest
from jepsen_py.cluster.framing import encode

from jepsen_py.raftdb.local import LocalCluster

TICK_MS = 50
ELECTION_TICK = 10
ELECTION_TIMEOUT_S = TICK_MS * ELECTION_TICK / 1000  # the randomized timeout is in [1x, 2x)


def retry(fn, seconds: float = 60.0):
    """Retries a client call across the brief unavailability of an election (well under a second
    on an idle machine; the bound only ends a hang on a loaded one)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except ClusterError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.parametrize("n", [3, 5])
def test_cluster_elects_serves_and_survives_leader_death(tmp_path, n):
    with LocalCluster(n, str(tmp_path), tick_ms=TICK_MS, election_tick=ELECTION_TICK) as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        statuses = {nid: c.status(nid) for nid in c.nodes}
        assert sum(s["role"] == "leader" for s in statuses.values()) == 1
        assert len({s["term"] for s in statuses.values()}) == 1

        # the API works through every node: followers forward writes to the leader
        for i, nid in enumerate(c.nodes):
            with c.client(nid) as cl:
                ans = retry(lambda cl=cl, i=i: cl.commit_offset("g1", "orders", i, 100 + i))
                assert ans["offset"] == 100 + i and ans["node"] == nid and ans["term"] >= 1
                assert ans["role"] in ("leader", "follower")
        follower = next(nid for nid in c.nodes if nid != leader)
        with c.client(follower) as cl:
            created = cl.create_topic("orders", partitions=3, rf=min(3, n))
            assert created["created"] and created["node"] == follower and created["leader"] == leader
            with pytest.raises(AlreadyExists) as e:
                cl.create_topic("orders", partitions=1, rf=1)
            assert e.value.node == follower and e.value.term is not None
            with pytest.raises(InvalidRequest):
                cl.create_topic("too-replicated", partitions=1, rf=n + 1)
            desc = cl.describe_topic("orders")["topic"]
            assert [p["leader"] for p in desc["partitions"]] == [leader] * 3
            assert cl.list_topics()["topics"] == ["orders"]
            assert cl.fetch_offset("g1", "orders", 0)["offset"] == 100
            assert cl.fetch_offset("g1", "orders", 99)["offset"] is None
            # a linearizable read at a follower reflects a write acknowledged just before via another node
            with c.client(leader) as lc:
                lc.commit_offset("g1", "orders", 0, 555)
            got = cl.fetch_offset("g1", "orders", 0)
            assert got["offset"] == 555 and got["read_index"] <= got["applied"]

        # kill the leader: the rest elect a new one in a round or two
        old_term = c.status(leader)["term"]
        c.kill(leader)
        survivors = [nid for nid in c.nodes if nid != leader]
        new_leader = c.wait_for_leader(20, among=survivors)
        assert new_leader != leader
        # Promptness judged by events, not the wall clock (a loaded 2-core machine stretched a
        # seconds bound): PreVote lets only a node that lost its leader stand, so the survivors need
        # one election, a few with split votes, never a string of failed ones.
        new_term = c.status(new_leader)["term"]
        assert old_term < new_term <= old_term + 5, (old_term, new_term)
        with c.client(new_leader) as cl:
            # everything acknowledged before the crash is there
            assert cl.fetch_offset("g1", "orders", 0)["offset"] == 555
            assert [cl.fetch_offset("g1", "orders", i)["offset"] for i in range(1, n)] == [
                100 + i for i in range(1, n)
            ]
            # partition leadership followed the Raft leader, with a new epoch
            parts = retry(lambda cl=cl: _moved(cl, new_leader))
            assert all(p["leader_epoch"] >= 2 for p in parts)
            retry(lambda cl=cl: cl.commit_offset("g2", "orders", 0, 1))

        # the old leader restarts from its disk and catches up as a follower
        c.start(leader)
        final = c.wait_for_leader(20)
        with c.client(leader) as cl:
            got = retry(lambda cl=cl: cl.fetch_offset("g2", "orders", 0))
            assert got["offset"] == 1 and got["node"] == leader and got["role"] == "follower"
            assert got["leader"] == final
        log = c.log_text(leader)
        assert "role leader" in log and "role follower" in log
        for nid in c.nodes:
            assert "Traceback" not in c.stderr_text(nid)


def _moved(cl, new_leader: str) -> list[dict]:
    parts = cl.describe_topic("orders")["topic"]["partitions"]
    if any(p["leader"] != new_leader for p in parts):
        raise ClusterError("partition leadership has not moved yet")
    return parts


@pytest.mark.parametrize("mode", ["lease", "local"])
def test_other_read_modes_serve_reads(tmp_path, mode):
    with LocalCluster(3, str(tmp_path), read_mode=mode, tick_ms=TICK_MS) as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        with c.client(leader) as cl:
            retry(lambda: cl.commit_offset("g", "t", 0, 42))
            ans = retry(lambda: cl.fetch_offset("g", "t", 0))
            assert ans["offset"] == 42 and ans["role"] == "leader"
            assert cl.status()["read_mode"] == mode
        if mode == "local":
            # local reads never wait for a leader: a follower answers from what it has applied
            follower = next(n for n in c.nodes if n != leader)
            with c.client(follower) as cl:
                deadline = time.monotonic() + 30  # a bound, not the expectation: a loaded machine is slow
                while cl.fetch_offset("g", "t", 0)["offset"] != 42 and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert cl.fetch_offset("g", "t", 0)["offset"] == 42


def test_minority_side_answers_definitely_or_times_out(tmp_path):
    """With a quorum gone, writes at the survivor must not be acknowledged."""
    with LocalCluster(3, str(tmp_path), tick_ms=TICK_MS) as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        others = [n for n in c.nodes if n != leader]
        for o in others:
            c.kill(o)
        with c.client(leader, timeout=2.0) as cl:
            with pytest.raises(ClusterError) as e:
                cl.commit_offset("g", "t", 0, 7)
            # check-quorum makes the lone leader step down: either not accepted, or indeterminate
            assert e.value.error in ("timeout", "unavailable", "not_leader") or not e.value.definite
        # once it stepped down it answers at once with a definite unavailable
        deadline = time.monotonic() + 30  # a bound, not the expectation: a loaded machine is slow
        while time.monotonic() < deadline:
            st = c.status(leader)
            if st and st["role"] != "leader":
                break
            time.sleep(0.05)
        assert st and st["role"] != "leader"
        with c.client(leader, timeout=2.0) as cl, pytest.raises(ClusterError) as e:
            cl.fetch_offset("g", "t", 0)
        assert e.value.error in ("unavailable", "timeout")


def test_snapshots_keep_the_wal_and_restart_bounded(tmp_path):
    """Many writes with a snapshot every 100 entries: the WAL stays small and a restart replays at
    most about one snapshot interval of records, with the state intact."""
    import os
    import re

    extra = ["--snapshot-entries", "100", "--retain-entries", "20"]
    with LocalCluster(3, str(tmp_path), tick_ms=TICK_MS, extra_args=extra) as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        def load(p: int) -> None:  # one writer per key, 70 commits each, in parallel
            with c.client(leader) as cl:
                for i in range(p, 700, 10):
                    retry(lambda i=i: cl.commit_offset("g", "t", p, i))

        writers = [threading.Thread(target=load, args=(p,)) for p in range(10)]
        for w in writers:
            w.start()
        for w in writers:
            w.join(120)
        sizes = {nid: os.path.getsize(os.path.join(c.nodes[nid].data_dir, "wal.log")) for nid in c.nodes}
        assert all(s < 60_000 for s in sizes.values()), sizes
        for nid in c.nodes:
            snaps = [f for f in os.listdir(c.nodes[nid].data_dir) if f.endswith(".snap")]
            assert 1 <= len(snaps) <= 2, snaps
        victim = next(n for n in c.nodes if n != leader)
        c.stop(victim)
        c.start(victim)
        c.wait_for_leader(20)
        replayed = [int(m) for m in re.findall(r"wal: replayed (\d+) records", c.log_text(victim))]
        assert replayed[-1] <= 2 * 100 + 10, replayed
        with c.client(victim) as cl:
            assert [retry(lambda p=p: cl.fetch_offset("g", "t", p))["offset"] for p in range(10)] == [
                690 + p for p in range(10)
            ]


@pytest.mark.parametrize("mode", ["read-index", "lease"])
def test_paused_leader_never_serves_a_stale_read(tmp_path, mode):
    """SIGSTOP the leader, write through the new one, SIGCONT the old: the old leader must not answer
    a read with the overwritten value (the zombie-leader scenario). In lease mode this holds because
    the ticks that elapsed during the pause reach the core before the first request is served."""
    import signal

    with LocalCluster(3, str(tmp_path), tick_ms=TICK_MS, read_mode=mode) as c:
        c.start_all()
        old = c.wait_for_leader(20)
        with c.client(old) as cl:
            retry(lambda: cl.commit_offset("g", "z", 0, 1))
        early = c.client(old, timeout=5.0)
        early.status()  # connected before the pause
        c.nodes[old].proc.send_signal(signal.SIGSTOP)
        try:
            survivors = [n for n in c.nodes if n != old]
            new = c.wait_for_leader(20, among=survivors)
            with c.client(new) as cl:
                retry(lambda: cl.commit_offset("g", "z", 0, 2))
            # a read already waiting in the socket when the old leader wakes up: the hardest case
            early._sock.sendall(encode({"id": 99, "op": "fetch_offset", "group": "g", "topic": "z",
                                        "partition": 0, "timeout_ms": 4000}))
        finally:
            c.nodes[old].proc.send_signal(signal.SIGCONT)
        try:
            first = early._outcome(early._read_frame(early._sock))
            assert first["offset"] == 2, f"stale read from the woken leader: {first}"
        except ClusterError:
            pass  # refusing or timing out is fine; answering 1 is not
        finally:
            early.close()
        with c.client(old, timeout=3.0) as cl:
            # straight after waking up it still believes it leads; a read must not return 1
            for _ in range(20):
                try:
                    ans = cl.fetch_offset("g", "z", 0)
                except ClusterError:
                    continue
                assert ans["offset"] == 2, f"stale read from the woken leader: {ans}"
        assert "role follower" in c.log_text(old)


def test_a_transaction_is_one_entry_through_any_node(tmp_path):
    with LocalCluster(3, str(tmp_path), tick_ms=TICK_MS, election_tick=ELECTION_TICK) as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        follower = next(nid for nid in c.nodes if nid != leader)
        with c.client(follower) as cl:
            first = retry(lambda: cl.txn([["append", 1, 1], ["w", 2, 5], ["r", 1, None]]))
            assert first["mops"] == [["append", 1, 1], ["w", 2, 5], ["r", 1, [1]]]
            applied = cl.status()["applied"]
            ans = cl.txn([["r", 1, None], ["append", 1, 2], ["r", 1, None], ["r", 2, None],
                          ["r", 3, None]])
            assert ans["mops"] == [["r", 1, [1]], ["append", 1, 2], ["r", 1, [1, 2]], ["r", 2, 5],
                                   ["r", 3, None]]
            assert cl.status()["applied"] == applied + 1  # the whole transaction: one entry
            with pytest.raises(InvalidRequest):
                cl.txn([["append", 4, 1], ["append", 2, 6]])  # 2 holds a register value
        with c.client(leader) as cl:
            applied = cl.status()["applied"]
            reads = cl.txn([["r", 4, None], ["r", 1, None]])  # reads only: a read barrier, no entry
            assert reads["mops"] == [["r", 4, None], ["r", 1, [1, 2]]] and reads["read_index"] >= applied
            assert cl.status()["applied"] == applied
