"""Raft paper section 7, log compaction: snapshots in storage, MsgSnap to a follower behind the
compacted log, restore, restart from a snapshot, and the transport's snapshot reports."""

from __future__ import annotations

import pytest
from jepsen_py.cluster.raft import (
    CompactedError,
    Config,
    Entry,
    HardState,
    MemoryStorage,
    Message,
    SnapOutOfDateError,
    Snapshot,
    UnavailableError,
)
from jepsen_py.cluster.raft.messages import MSG_APP, MSG_APP_RESP, MSG_HEARTBEAT_RESP, MSG_SNAP, MSG_VOTE_RESP
from jepsen_py.cluster.raft.progress import PROBE, REPLICATE, SNAPSHOT

from .sim import Cluster, drain, make_node, storage_with_log

PEERS = ["n1", "n2", "n3"]


def test_storage_compaction_and_its_errors():
    st = storage_with_log(PEERS, [1, 1, 2, 2, 3])
    snap = st.create_snapshot(3, PEERS, {"state": "at 3"})
    st.compact(3)
    assert (st.first_index(), st.last_index(), st.term(3)) == (4, 5, 2)
    assert snap.index == 3 and snap.term == 2 and st.snapshot() == snap
    with pytest.raises(CompactedError):
        st.entries(3, 5)
    with pytest.raises(CompactedError):
        st.term(2)
    with pytest.raises(UnavailableError):
        st.term(6)
    with pytest.raises(CompactedError):
        st.compact(2)
    with pytest.raises(SnapOutOfDateError):
        st.create_snapshot(2, PEERS, {})


def test_storage_append_replaces_a_conflicting_suffix_and_ignores_compacted_entries():
    st = storage_with_log(PEERS, [1, 1, 1, 1])
    st.create_snapshot(2, PEERS, {})
    st.compact(2)
    st.append([Entry(1, 2), Entry(2, 3, {"x": 1})])
    assert [(e.index, e.term) for e in st.entries(3, st.last_index() + 1)] == [(3, 2)]
    with pytest.raises(ValueError, match="missing log entry"):
        st.append([Entry(2, 9)])


def test_storage_apply_snapshot_replaces_the_log():
    st = storage_with_log(PEERS, [1, 1])
    st.apply_snapshot(Snapshot(index=10, term=4, peers=tuple(PEERS), data={"k": 1}))
    assert (st.first_index(), st.last_index(), st.term(10)) == (11, 10, 4)
    with pytest.raises(SnapOutOfDateError):
        st.apply_snapshot(Snapshot(index=5, term=3, peers=tuple(PEERS)))


def compacted_leader():
    """n1 leads term 2 over entries 1..6, compacted up to 5; n2 has nothing."""
    st = storage_with_log(PEERS, [1, 1, 1, 1, 1], hard_term=1)
    raw, _ = make_node("n1", PEERS, storage=st)
    raw.campaign()
    raw.step(Message(type=MSG_VOTE_RESP, src="n3", dst="n1", term=2))
    drain(raw, st)
    raw.step(Message(type=MSG_APP_RESP, src="n3", dst="n1", term=2, index=6))
    drain(raw, st)
    assert raw.raft.raft_log.committed == 6
    st.create_snapshot(5, PEERS, {"digest": "five"})
    st.compact(5)
    return raw, st


def test_leader_sends_a_snapshot_to_a_follower_behind_the_compacted_log():
    lead, st = compacted_leader()
    pr = lead.raft.prs["n2"]
    pr.recent_active = True
    # n2 rejects the probe at index 5: it has nothing.
    lead.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=2, index=5, reject=True, reject_hint=0))
    msgs, _, _ = drain(lead, st)
    [snap_msg] = [m for m in msgs if m.dst == "n2"]
    assert snap_msg.type == MSG_SNAP and snap_msg.snapshot.index == 5
    assert pr.state == SNAPSHOT and pr.is_paused()

    fol, fst = make_node("n2", PEERS)
    fol.step(snap_msg)
    rd = fol.ready()
    assert rd.snapshot == snap_msg.snapshot and rd.hard_state.commit == 5
    fst.apply_snapshot(rd.snapshot)
    fst.append(rd.entries)
    fst.set_hard_state(rd.hard_state)
    fol.advance(rd)
    assert fol.status()["applied"] == 5 and fol.status()["commit"] == 5
    [resp] = rd.messages
    assert (resp.type, resp.index) == (MSG_APP_RESP, 5)

    lead.step(resp)
    assert pr.state == REPLICATE and pr.match == 5
    msgs, _, _ = drain(lead, st)
    [app] = [m for m in msgs if m.dst == "n2"]
    assert app.type == MSG_APP and [e.index for e in app.entries] == [6]
    fol.step(app)
    msgs, _applied, _ = drain(fol, fst)
    assert fst.last_index() == 6 and msgs[0].index == 6


def test_snapshot_not_sent_to_an_inactive_peer():
    lead, st = compacted_leader()
    pr = lead.raft.prs["n2"]
    drain(lead, st)
    pr.probe_sent, pr.next = False, 3  # backed off below the compacted index, peer silent
    assert not pr.recent_active
    lead.raft._send_append("n2")
    msgs, _, _ = drain(lead, st)
    assert not [m for m in msgs if m.dst == "n2"] and pr.state == PROBE


@pytest.mark.parametrize("failed", [True, False])
def test_snapshot_status_report_moves_the_peer_back_to_probe(failed):
    lead, st = compacted_leader()
    pr = lead.raft.prs["n2"]
    lead.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=2, index=5, reject=True, reject_hint=0))
    drain(lead, st)
    assert pr.state == SNAPSHOT
    lead.report_snapshot("n2", failed=failed)
    assert pr.state == PROBE and pr.probe_sent  # waits for an answer before probing again
    assert pr.next == (1 if failed else 6)


def test_an_unreported_lost_snapshot_is_retried():
    """If the transport never reports the MsgSnap's fate, the leader gives up waiting after two
    election timeouts and probes again: no peer is parked forever."""
    lead, st = compacted_leader()
    pr = lead.raft.prs["n2"]
    lead.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=2, index=5, reject=True, reject_hint=0))
    drain(lead, st)
    assert pr.state == SNAPSHOT
    for _ in range(2 * 10):
        lead.step(Message(type=MSG_APP_RESP, src="n3", dst="n1", term=2, index=6))  # n3 keeps the quorum
        lead.tick()
        drain(lead, st)
    assert pr.state == PROBE
    lead.step(Message(type=MSG_HEARTBEAT_RESP, src="n2", dst="n1", term=2))
    msgs, _, _ = drain(lead, st)
    [probe] = [m for m in msgs if m.dst == "n2" and m.type == MSG_APP]
    lead.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=2, index=probe.index, reject=True,
                      reject_hint=0))
    msgs, _, _ = drain(lead, st)
    assert [m.type for m in msgs if m.dst == "n2"] == [MSG_SNAP]


def test_a_stale_snapshot_is_ignored_by_a_follower_that_has_it():
    fol, fst = make_node("n2", PEERS, storage=storage_with_log(PEERS, [1, 1, 1]))
    fol.step(Message(type=MSG_APP, src="n1", dst="n2", term=1, index=3, log_term=1, commit=3))
    drain(fol, fst)
    fol.step(Message(type=MSG_SNAP, src="n1", dst="n2", term=1,
                     snapshot=Snapshot(index=2, term=1, peers=tuple(PEERS), data={})))
    msgs, _, _ = drain(fol, fst)
    assert msgs[-1].index == 3 and fst.snapshot().index == 0


def test_snapshot_of_a_prefix_fast_forwards_commit_without_restore():
    fol, fst = make_node("n2", PEERS, storage=storage_with_log(PEERS, [1, 1, 1]))
    fol.step(Message(type=MSG_SNAP, src="n1", dst="n2", term=1,
                     snapshot=Snapshot(index=2, term=1, peers=tuple(PEERS), data={})))
    _msgs, applied, _ = drain(fol, fst)
    assert fol.status()["commit"] == 2 and fst.snapshot().index == 0 and [e.index for e in applied] == [1, 2]


def test_snapshot_from_a_different_membership_is_refused():
    fol, fst = make_node("n2", PEERS)
    fol.step(Message(type=MSG_SNAP, src="n1", dst="n2", term=1,
                     snapshot=Snapshot(index=9, term=1, peers=("n1", "n2", "x9"), data={})))
    msgs, _, _ = drain(fol, fst)
    assert fst.snapshot().index == 0 and msgs[-1].index == 0


def test_restart_from_snapshot_and_log():
    st = MemoryStorage(PEERS)
    st.apply_snapshot(Snapshot(index=10, term=3, peers=tuple(PEERS), data={"digest": "x"}))
    st.append([Entry(3, 11, {"a": 1}), Entry(4, 12, {"a": 2})])
    st.set_hard_state(HardState(term=4, vote="n1", commit=12))
    raw, _ = make_node("n2", ["ignored"], Config(pre_vote=False, check_quorum=False, applied=10), storage=st)
    assert raw.raft.voters == tuple(PEERS)  # membership comes from the snapshot
    _, applied, _ = drain(raw, st)
    assert [e.index for e in applied] == [11, 12]
    assert raw.status()["first_index"] == 11


def test_cluster_catches_up_a_crashed_node_through_a_snapshot():
    c = Cluster(3, Config(election_tick=10))
    lead = c.stabilize()
    victim = next(n.id for n in c.live() if n.id != lead.id)
    c.crash(victim)
    for i in range(20):
        c.propose(lead.id, i)
        c.pump()
        c.deliver_all()
    c.tick_all()
    c.pump()
    c.deliver_all()
    for n in c.live():
        c.compact(n.id)
    assert lead.storage.first_index() > 2
    sent = []
    original = c._deliver

    def spy(m):
        sent.append(m.type)
        original(m)

    c._deliver = spy
    c.restart(victim)
    c.commit_everywhere()
    assert MSG_SNAP in sent
    assert c.nodes[victim].applied == lead.applied
    assert c.nodes[victim].digest == lead.digest


def test_rawnode_compact_keeps_a_tail_of_the_log():
    c = Cluster(3, Config(election_tick=10))
    lead = c.stabilize()
    for i in range(10):
        c.propose(lead.id, i)
    c.pump()
    c.deliver_all()
    applied = lead.raw.status()["applied"]
    snap = lead.raw.compact(applied, {"digest": lead.digest}, keep_entries=3)
    assert snap.index == applied and lead.storage.snapshot() == snap
    assert lead.storage.first_index() == applied - 3 + 1
    with pytest.raises(ValueError, match="applied"):
        lead.raw.compact(applied + 5, {})
    with pytest.raises(SnapOutOfDateError):
        lead.raw.compact(applied, {})
