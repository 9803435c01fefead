"""Each --bug flag does what its post-mortem says, and only that: on real node processes on loopback
(and the transport / WAL directly where the effect is below the API). Fast: no Docker."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest
from jepsen_py.cluster.bugs import BUGS, NAMES, Bugs
from jepsen_py.cluster.client import AlreadyExists, ClusterError, Unavailable
from jepsen_py.cluster.node import Node, NodeConfig
from jepsen_py.cluster.raft.messages import MSG_APP, MSG_APP_RESP, HardState
from jepsen_py.cluster.realio import OSDisk, real_env
from jepsen_py.cluster.state_machine import MetadataState, round_robin_leader
from jepsen_py.cluster.wal import WAL

from jepsen_py.raftdb.local import LocalCluster
from tests.cluster.test_transport import Endpoint, app, peers, until

TICK_MS = 50
ELECTION_TICK = 10
# How long a test waits for something that takes well under a second on an idle machine: a bound
# on a hang, not an expectation (three node processes share 2 cores with the rest of the suite).
PATIENCE_S = 60.0
STATUS_TIMEOUT_S = 10.0  # a node asked for its status answers from memory; LocalCluster's 1 s is short

DISK = OSDisk()


def retry(fn, seconds: float = PATIENCE_S):
    deadline = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except ClusterError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def cluster(tmp_path, *bugs: str, n: int = 3, read_mode: str = "read-index",
            election_tick: int = ELECTION_TICK) -> LocalCluster:
    extra = [a for b in bugs for a in ("--bug", b)]
    return LocalCluster(n, str(tmp_path), read_mode=read_mode, tick_ms=TICK_MS, election_tick=election_tick,
                        extra_args=extra)


def owned_partition(leader: str, nodes: list[str], want_owner: bool, topic: str = "orders") -> int:
    """A partition of `topic` whose round-robin leader is (or is not) the Raft leader."""
    for p in range(50):
        if (round_robin_leader(MetadataState(), topic, p, sorted(nodes)) == leader) == want_owner:
            return p
    raise AssertionError("no such partition")


def test_help_lists_every_bug_on_one_line():
    out = subprocess.run([sys.executable, "-m", "cluster.node", "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert len(NAMES) == 9
    lines = out.splitlines()
    for bug in BUGS:
        at = [i for i, ln in enumerate(lines) if ln.strip().startswith(bug.name + " ")]
        assert len(at) == 1, bug.name
        assert bug.description[:40] in lines[at[0]]
        assert lines[at[0] + 1].strip() == f"post-mortem: {bug.post_mortem}"


def test_an_unknown_bug_is_refused():
    r = subprocess.run([sys.executable, "-m", "cluster.node", "--id", "n1", "--peers", "n1=127.0.0.1:1",
                        "--data-dir", "/nonexistent", "--client-port", "2", "--bug", "no-such-bug"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no-such-bug" in r.stderr


def serve_somewhere(c: LocalCluster, op, seconds: float):
    """Retries op(client) on every node in turn until one answers: a client with retry logic."""
    deadline = time.monotonic() + seconds
    while True:
        for nid in c.nodes:
            try:
                with c.client(nid, timeout=3) as cl:
                    return op(cl)
            except ClusterError:
                if time.monotonic() > deadline:
                    raise
        time.sleep(0.05)


def create_t1(cl) -> dict:
    """create_topic that counts "already exists" as done (an earlier attempt timed out but landed)."""
    try:
        return cl.create_topic("t1", partitions=1, rf=1)
    except AlreadyExists:
        return {"created": True}


@pytest.mark.parametrize("bug", NAMES)
def test_with_the_bug_and_no_faults_a_leader_is_elected_and_serves(tmp_path, bug):
    """The flags break only what their post-mortem broke: no fault, the cluster elects and serves.
    (unordered-send's post-mortem: clients that retry get through, slowly, through the churn.)"""
    mode = "lease" if bug == "lease-no-drift-bound" else "read-index"
    # unordered-send: with 0.5-1 s election timeouts and sends stalled 0.5 s on average, only 1-3% of
    # ops got through the churn, so three ops took ~100 s of a 120 s patience and failed now and then
    # on a loaded machine. Elections 4x slower than the mean stall leave the leader time to commit
    # while its messages are still reordered; the patience stays a generous bound, not the expectation.
    election_tick = 4 * ELECTION_TICK if bug == "unordered-send" else ELECTION_TICK
    patience = 120.0 if bug == "unordered-send" else PATIENCE_S
    with cluster(tmp_path, bug, read_mode=mode, election_tick=election_tick) as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        if bug == "split-brain-metadata":  # the node-local store answers on the node written to
            with c.client(leader) as cl:
                assert cl.commit_offset("g", "orders", 0, 7)["offset"] == 7
                assert cl.fetch_offset("g", "orders", 0)["offset"] == 7
        else:
            part = owned_partition(leader, list(c.nodes), True)
            if bug == "leader-on-follower":  # only the Raft leader can propose its partitions
                with c.client(leader) as cl:
                    assert retry(lambda: cl.commit_offset("g", "orders", part, 7))["offset"] == 7
            else:
                assert serve_somewhere(c, lambda cl: cl.commit_offset("g", "orders", part, 7),
                                       patience)["offset"] == 7
            got = serve_somewhere(c, lambda cl: cl.fetch_offset("g", "orders", part), patience)
            assert got["offset"] == 7
        assert serve_somewhere(c, create_t1, patience)["created"]
        assert c.status(leader, STATUS_TIMEOUT_S)["bugs"] == [bug]


def test_split_brain_metadata_each_node_has_its_own_topics_and_offsets(tmp_path):
    with cluster(tmp_path, "split-brain-metadata") as c:
        c.start_all()
        c.wait_for_leader(20)
        n1, n2, n3 = c.nodes
        with c.client(n1) as a, c.client(n2) as b, c.client(n3) as d:
            assert a.create_topic("orders", partitions=1, rf=3)["created"]
            # the same name created again on another node: no consensus, no "already exists"
            assert b.create_topic("orders", partitions=2, rf=3)["created"]
            with pytest.raises(AlreadyExists):
                a.create_topic("orders", partitions=1, rf=1)  # each store is consistent with itself
            assert d.describe_topic("orders")["topic"] is None  # invisible on the third node
            assert a.describe_topic("orders")["topic"]["partitions"][0]["leader"] == n1  # leads its own
            a.commit_offset("g", "orders", 0, 1000)
            assert d.fetch_offset("g", "orders", 0)["offset"] is None  # the consumer starts over


def test_volatile_offsets_are_lost_on_restart_while_topics_survive(tmp_path):
    with cluster(tmp_path, "volatile-offsets") as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        with c.client(leader) as cl:
            retry(lambda: cl.commit_offset("g", "orders", 0, 1000))
            retry(lambda: cl.create_topic("orders", partitions=1, rf=1))
            assert cl.fetch_offset("g", "orders", 0)["offset"] == 1000  # in memory, it is there
        for nid in c.nodes:
            c.kill(nid)
        c.start_all()
        leader = c.wait_for_leader(20)
        with c.client(leader) as cl:
            assert retry(lambda: cl.describe_topic("orders"))["topic"] is not None  # in the WAL
            assert cl.fetch_offset("g", "orders", 0)["offset"] is None  # acknowledged, then lost


def test_leader_on_follower_partitions_led_by_followers_refuse_every_commit(tmp_path):
    with cluster(tmp_path, "leader-on-follower") as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        bad = owned_partition(leader, list(c.nodes), False)
        good = owned_partition(leader, list(c.nodes), True)
        for nid in c.nodes:  # wherever the client goes: no forwarding
            with c.client(nid) as cl:
                with pytest.raises(Unavailable, match="not the Raft leader"):
                    cl.commit_offset("g", "orders", bad, 1)
                assert retry(lambda cl=cl: cl.commit_offset("g", "orders", good, 1))["offset"] == 1


def test_drop_unconnected_a_restarted_follower_never_gets_what_it_missed(tmp_path):
    with cluster(tmp_path, "drop-unconnected") as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        follower = next(n for n in c.nodes if n != leader)
        c.kill(follower)
        with c.client(leader) as cl:
            for i in range(20):
                retry(lambda i=i: cl.commit_offset("g", "orders", 0, i))
        c.start(follower)
        time.sleep(3.0)  # dozens of heartbeat rounds: a correct leader would have repaired it by now
        with c.client(follower) as fl:
            assert fl.fetch_offset("g", "orders", 0, local=True)["offset"] != 19
        st = c.status(leader, STATUS_TIMEOUT_S)
        assert st["progress"][follower]["match"] >= st["last_index"] - 1  # counted as delivered
        assert c.status(follower, STATUS_TIMEOUT_S)["applied"] < st["commit"]


def test_drop_unconnected_counts_a_dropped_append_as_acknowledged():
    async def main():
        ps = peers(2)
        a = Endpoint("n1", ps, bugs=Bugs.parse(["drop-unconnected"]))
        await a.t.start()  # n2 never listens
        try:
            a.t.send([app(5)])
            await until(lambda: any(m.type == MSG_APP_RESP for m in a.got))
            ack = next(m for m in a.got if m.type == MSG_APP_RESP)
            assert ack.src == "n2" and ack.index == 5 and not ack.reject
            assert a.unreachable == []  # and the core was told nothing went wrong
        finally:
            await a.t.stop()

    asyncio.run(main())


def test_unordered_send_reorders_messages_to_one_peer():
    async def main():
        ps = peers(2)
        a, b = Endpoint("n1", ps, bugs=Bugs.parse(["unordered-send"])), Endpoint("n2", ps)
        await a.t.start()
        await b.t.start()
        try:
            await until(lambda: a.t.connected()["n2"])
            a.t.send([app(i) for i in range(1, 101)])
            await until(lambda: len(b.got) == 100)  # each stalls at most 3 s; the bound is 30 s
            got = [m.entries[0].index for m in b.got if m.type == MSG_APP]
            assert sorted(got) == list(range(1, 101)) and got != sorted(got)
        finally:
            await a.t.stop()
            await b.t.stop()

    asyncio.run(main())


def _wal_with_a_conflict(data_dir: str) -> None:
    from jepsen_py.cluster.raft.messages import Entry

    wal, _ = WAL.open(DISK, data_dir, "cid", "n1", fsync=False)
    wal.save(HardState(term=1, vote="n1", commit=1), [Entry(1, i, None) for i in (1, 2, 3)])
    # a new leader of term 2 overwrote indices 2.. (Raft conflict resolution)
    wal.save(HardState(term=2, vote="n2", commit=1), [Entry(2, i, None) for i in (2, 3, 4)])
    wal.close()


def test_recovery_duplicates_keeps_every_version_of_an_index(tmp_path):
    _wal_with_a_conflict(str(tmp_path))
    _, good = WAL.open(DISK, str(tmp_path), "cid", "n1", fsync=False)
    assert [(e.index, e.term) for e in good.entries] == [(1, 1), (2, 2), (3, 2), (4, 2)]
    _, bad = WAL.open(DISK, str(tmp_path), "cid", "n1", fsync=False,
                      bugs=Bugs(recovery_duplicates=True))
    assert [e.index for e in bad.entries] == [1, 2, 3, 2, 3, 4]
    # Chronik's symptom: first + len - 1 overstates the last index
    assert bad.entries[0].index + len(bad.entries) - 1 == 6 != bad.entries[-1].index


def test_recovery_duplicates_the_restarted_node_diverges_or_dies(tmp_path):
    data = tmp_path / "n1"
    _wal_with_a_conflict(str(data))
    peers_ = {"n1": ("127.0.0.1", 1), "n2": ("127.0.0.1", 2), "n3": ("127.0.0.1", 3)}
    env = real_env()
    good = Node(NodeConfig(id="n1", peers=peers_, data_dir=str(data), client_port=9, cluster_id="cid"),
                log=lambda _m: None, env=env)
    assert good.storage.last_index() == 4
    good.wal.close()
    env.disk.unlock_all()
    bad = Node(NodeConfig(id="n1", peers=peers_, data_dir=str(data), client_port=9, cluster_id="cid",
                          bugs=Bugs.parse(["recovery-duplicates"])), log=lambda _m: None, env=real_env())
    assert bad.storage.last_index() == 6  # the log claims entries that do not exist
    assert bad.storage.term(6) == 2 and bad.storage.entries(5, 7)[0].index != 5


def test_zombie_leader_a_leader_cut_off_from_everyone_keeps_leading_and_serving(tmp_path):
    for bugs, keeps in (((), False), (("zombie-leader",), True)):
        base = tmp_path / ("bug" if bugs else "ok")
        with cluster(base, *bugs) as c:
            c.start_all()
            leader = c.wait_for_leader(20)
            with c.client(leader) as cl:
                retry(lambda cl=cl: cl.commit_offset("g", "orders", 0, 1))
            followers = [n for n in c.nodes if n != leader]
            for f in followers:  # the leader hears from no one
                os.kill(c.nodes[f].proc.pid, signal.SIGSTOP)
            try:
                if keeps:  # it never steps down: look after the time a correct leader needs
                    time.sleep(4 * ELECTION_TICK * TICK_MS / 1000)
                    st = c.status(leader, STATUS_TIMEOUT_S)
                else:  # CheckQuorum steps it down: wait for that, bounded (a loaded machine ticks late)
                    deadline = time.monotonic() + 30
                    while ((st := c.status(leader, STATUS_TIMEOUT_S)) is None or st["role"] == "leader") \
                            and time.monotonic() < deadline:
                        time.sleep(0.05)
                assert st is not None and (st["role"] == "leader") is keeps
                if keeps:  # and answers reads from its own state, with no quorum behind it
                    with c.client(leader, timeout=STATUS_TIMEOUT_S) as cl:
                        assert cl.fetch_offset("g", "orders", 0)["offset"] == 1
            finally:
                for f in followers:
                    os.kill(c.nodes[f].proc.pid, signal.SIGCONT)


def test_lease_no_drift_bound_trusts_the_tick_count_after_a_stall(tmp_path):
    """After a stall (SIGSTOP, a clock going back) the correct node catches up the ticks that real
    time says are due before it handles anything; the buggy one counts one tick per timer firing, so
    its lease still looks fresh, and its lease has no margin for drift."""
    peers_ = {"n1": ("127.0.0.1", 1)}
    seen = {}
    for bugs in ((), ("lease-no-drift-bound",)):
        d = tmp_path / ("bug" if bugs else "ok")
        node = Node(NodeConfig(id="n1", peers=peers_, data_dir=str(d), client_port=9, read_mode="lease",
                               bugs=Bugs.parse(bugs)), log=lambda _m: None, env=real_env())
        node.schedule_ready = lambda: None  # no event loop here: the Ready is not needed
        node.raw.campaign()  # the only voter: it leads, and its lease is what the stall must end
        before = node.raw.raft.ticks
        node._last_tick -= 3.0  # three seconds passed unseen (a pause)
        node.catch_up_ticks()  # the first input after the pause
        after_input = node.raw.raft.ticks - before
        node.tick()  # the timer fires once
        seen[bugs] = (node.raw.raft.config.lease_margin_ticks, after_input, node.raw.raft.ticks - before)
        node.wal.close()
    margin, on_input, total = seen[()]
    assert margin > 0 and on_input == ELECTION_TICK and total == on_input  # a timeout: the lease ends
    assert seen[("lease-no-drift-bound",)] == (0, 0, 1)
