"""Raft paper 5.3, log replication: AppendEntries consistency check, repair of divergent logs,
commit propagation, forwarding, pipelining and retransmission."""

from __future__ import annotations

import pytest
from jepsen_py.cluster.raft import LEADER, Config, Entry, Message, ProposalDropped
from jepsen_py.cluster.raft.messages import MSG_APP, MSG_APP_RESP, MSG_HEARTBEAT_RESP, MSG_PROP, MSG_VOTE_RESP
from jepsen_py.cluster.raft.progress import PROBE, REPLICATE

from .sim import Cluster, drain, make_node, storage_with_log

PEERS = ["n1", "n2", "n3"]


def leader_of(terms: list[int], config: Config | None = None, peers: list[str] = PEERS, hard_term: int = 0):
    """n1 as leader over a log with the given terms (elected by n2's vote)."""
    st = storage_with_log(peers, terms, hard_term)
    raw, _ = make_node("n1", peers, config, storage=st)
    raw.campaign()
    for p in peers[1 : len(peers) // 2 + 1]:
        raw.step(Message(type=MSG_VOTE_RESP, src=p, dst="n1", term=raw.raft.term))
    assert raw.raft.state == LEADER
    return raw, st


def test_follower_accepts_matching_append_and_reports_last_index():
    raw, st = make_node("n2", PEERS, storage=storage_with_log(PEERS, [1, 1]))
    ents = (Entry(2, 3, {"x": 1}), Entry(2, 4, {"x": 2}))
    raw.step(Message(type=MSG_APP, src="n1", dst="n2", term=2, index=2, log_term=1, entries=ents, commit=3))
    msgs, applied, _ = drain(raw, st)
    assert [(m.type, m.index, m.reject) for m in msgs] == [(MSG_APP_RESP, 4, False)]
    assert st.last_index() == 4 and raw.raft.raft_log.committed == 3
    assert [e.index for e in applied] == [1, 2, 3]


def test_follower_rejects_when_previous_entry_does_not_match():
    raw, st = make_node("n2", PEERS, storage=storage_with_log(PEERS, [1, 1, 1]))
    raw.step(Message(type=MSG_APP, src="n1", dst="n2", term=3, index=3, log_term=2, entries=(Entry(3, 4),)))
    msgs, _, _ = drain(raw, st)
    [resp] = msgs
    assert resp.reject and resp.index == 3
    # The hint lets the leader skip the whole term: our last entry with term <= 2 is (3, term 1).
    assert (resp.reject_hint, resp.log_term) == (3, 1)
    assert st.last_index() == 3


def test_follower_rejects_append_beyond_its_log():
    raw, st = make_node("n2", PEERS, storage=storage_with_log(PEERS, [1]))
    raw.step(Message(type=MSG_APP, src="n1", dst="n2", term=2, index=5, log_term=2, entries=(Entry(2, 6),)))
    [resp], _, _ = drain(raw, st)
    assert resp.reject and resp.reject_hint == 1


def test_follower_truncates_a_conflicting_suffix():
    raw, st = make_node("n2", PEERS, storage=storage_with_log(PEERS, [1, 1, 2, 2]))
    raw.step(Message(type=MSG_APP, src="n1", dst="n2", term=3, index=2, log_term=1,
                     entries=(Entry(3, 3, {"new": 3}),)))
    drain(raw, st)
    assert st.last_index() == 3 and st.term(3) == 3 and st.entries(3, 4)[0].data == {"new": 3}


def test_stale_duplicate_append_does_not_truncate():
    raw, st = make_node("n2", PEERS, storage=storage_with_log(PEERS, [1, 1, 1]))
    raw.step(Message(type=MSG_APP, src="n1", dst="n2", term=1, index=0, log_term=0,
                     entries=(Entry(1, 1, {"i": 1, "t": 1}),)))
    drain(raw, st)
    assert st.last_index() == 3


# Figure 7 of the paper: a leader of term 8 and followers (a)-(f) with missing and extra entries.
LEADER_LOG = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6]
FOLLOWERS = {
    "a": [1, 1, 1, 4, 4, 5, 5, 6, 6],
    "b": [1, 1, 1, 4],
    "c": [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6],
    "d": [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7],
    "e": [1, 1, 1, 4, 4, 4, 4],
    "f": [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3],
}


@pytest.mark.parametrize("name", sorted(FOLLOWERS))
def test_leader_repairs_every_follower_of_figure_7(name):
    peers = ["n1", "n2", "n3"]
    lead, lst = leader_of(LEADER_LOG, peers=peers, hard_term=7)
    assert lead.raft.term == 8  # as in the figure
    fol, fst = make_node("n2", peers, storage=storage_with_log(peers, FOLLOWERS[name], hard_term=7))
    rounds = 0
    queue, _, _ = drain(lead, lst)
    while queue and rounds < 200:
        rounds += 1
        nxt = []
        for m in queue:
            if m.dst == "n2":
                fol.step(m)
                nxt += drain(fol, fst)[0]
            elif m.dst == "n1":
                lead.step(m)
                nxt += drain(lead, lst)[0]
        queue = nxt
    want = [(e.index, e.term) for e in lst.entries(1, lst.last_index() + 1)]
    got = [(e.index, e.term) for e in fst.entries(1, fst.last_index() + 1)]
    assert got == want
    assert lead.raft.prs["n2"].match == lst.last_index()
    # The new term's entry is on a majority (n1, n2): everything up to it is committed.
    assert lead.raft.raft_log.committed == lst.last_index()


def test_commit_index_reaches_followers():
    c = Cluster(3, Config())
    lead = c.stabilize()
    c.propose(lead.id, "x")
    c.pump()
    c.deliver_all()
    c.tick_all()  # the next heartbeat carries the commit index
    c.pump()
    c.deliver_all()
    commits = {n.id: n.raw.raft.raft_log.committed for n in c.live()}
    assert len(set(commits.values())) == 1 and commits[lead.id] >= 2
    assert all(n.applied == commits[n.id] for n in c.live())


def test_follower_forwards_proposals_to_the_leader():
    c = Cluster(3, Config())
    lead = c.stabilize()
    follower = next(n for n in c.live() if n.id != lead.id)
    assert c.propose(follower.id, "via-follower")
    c.pump()
    assert [(m.type, m.src, m.dst) for m in c.net] == [(MSG_PROP, follower.id, lead.id)]
    c.deliver_all()
    c.tick_all()
    c.pump()
    c.deliver_all()
    assert any(isinstance(d, dict) and d.get("v") == "via-follower" for d in c.applied_at.values())


def test_proposal_without_leader_is_dropped_loudly():
    raw, _ = make_node("n1", PEERS)
    with pytest.raises(ProposalDropped):
        raw.propose({"x": 1})
    raw.campaign()
    with pytest.raises(ProposalDropped):
        raw.propose({"x": 1})


def test_probe_sends_one_append_then_waits():
    lead, st = leader_of([1, 1])
    drain(lead, st)
    pr = lead.raft.prs["n2"]
    assert pr.state == PROBE
    lead.propose({"a": 1})
    lead.propose({"a": 2})
    msgs, _, _ = drain(lead, st)
    assert [m.dst for m in msgs if m.type == MSG_APP].count("n2") == 0  # paused until n2 answers


def test_replicate_pipelines_up_to_the_inflight_window():
    cfg = Config(pre_vote=False, check_quorum=False, max_inflight_msgs=3, max_batch_entries=1)
    lead, st = leader_of([], cfg)
    drain(lead, st)
    lead.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=1, index=1))
    assert lead.raft.prs["n2"].state == REPLICATE
    drain(lead, st)
    for i in range(5):
        lead.propose({"i": i})
    msgs, _, _ = drain(lead, st)
    to_n2 = [m for m in msgs if m.type == MSG_APP and m.dst == "n2"]
    assert len(to_n2) == 3  # the window is full: two proposals wait
    lead.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=1, index=to_n2[0].entries[-1].index))
    msgs, _, _ = drain(lead, st)
    assert [m.entries[0].index for m in msgs if m.type == MSG_APP and m.dst == "n2"] == [5]


def test_lost_appends_are_retransmitted_from_next_index():
    """A follower that missed MsgApps rejects the next one; the leader backs off and resends."""
    c = Cluster(3, Config())
    lead = c.stabilize()
    victim = next(n.id for n in c.live() if n.id != lead.id)
    for i in range(5):
        c.propose(lead.id, i)
        c.pump()
        c.net = [m for m in c.net if m.dst != victim]  # the network loses everything for the victim
        c.deliver_all()
    c.tick_all()
    c.pump()
    for _ in range(10):
        c.deliver_all()
        c.tick_all()
        c.pump()
    assert c.nodes[victim].storage.last_index() == lead.storage.last_index()
    assert c.nodes[victim].applied == lead.applied


def test_heartbeat_response_unblocks_a_full_window():
    lead, st = leader_of([], Config(pre_vote=False, check_quorum=False, max_inflight_msgs=1))
    drain(lead, st)
    lead.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=1, index=1))
    drain(lead, st)
    lead.propose({"i": 1})
    drain(lead, st)
    assert lead.raft.prs["n2"].inflights.full()
    lead.step(Message(type=MSG_HEARTBEAT_RESP, src="n2", dst="n1", term=1))
    msgs, _, _ = drain(lead, st)
    assert any(m.type == MSG_APP and m.dst == "n2" for m in msgs)
