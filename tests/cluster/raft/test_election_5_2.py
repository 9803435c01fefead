"""Raft paper 5.2, leader election: timeouts, votes, one vote per term, stepping down."""

from __future__ import annotations

import pytest
from jepsen_py.cluster.raft import CANDIDATE, FOLLOWER, LEADER, Config, Message
from jepsen_py.cluster.raft.messages import MSG_APP, MSG_HEARTBEAT, MSG_VOTE, MSG_VOTE_RESP

from .sim import Cluster, drain, make_node, storage_with_log

PEERS = ["n1", "n2", "n3"]
PLAIN = Config(pre_vote=False, check_quorum=False)


def tick_until_campaign(raw) -> int:
    for t in range(1, 100):
        raw.tick()
        if raw.raft.state != FOLLOWER:
            return t
    raise AssertionError("never campaigned")


def test_follower_campaigns_after_randomized_timeout():
    raw, st = make_node("n1", PEERS)
    ticks = tick_until_campaign(raw)
    assert PLAIN.election_tick <= ticks < 2 * PLAIN.election_tick
    assert raw.raft.state == CANDIDATE and raw.raft.term == 1 and raw.raft.vote == "n1"
    msgs, _, _ = drain(raw, st)
    votes = sorted((m.dst, m.type, m.term) for m in msgs)
    assert votes == [("n2", MSG_VOTE, 1), ("n3", MSG_VOTE, 1)]
    # The vote for itself is durable before the requests leave (Ready: persist, then send).
    assert st.hard_state().vote == "n1" and st.hard_state().term == 1


def test_randomized_timeouts_differ_and_stay_in_range():
    seen = set()
    for seed in range(20):
        for node in PEERS:
            raw, _ = make_node(node, PEERS, Config(pre_vote=False, check_quorum=False, seed=seed))
            t = raw.raft.randomized_election_timeout
            assert 10 <= t < 20
            seen.add(t)
    assert len(seen) > 5


def test_timeouts_are_deterministic_per_seed():
    a, _ = make_node("n1", PEERS, Config(seed=7))
    b, _ = make_node("n1", PEERS, Config(seed=7))
    assert [tick_until_campaign(a)] == [tick_until_campaign(b)]


@pytest.mark.parametrize(("n", "grants", "won"), [(3, 1, True), (5, 1, False), (5, 2, True)])
def test_candidate_wins_with_a_majority(n, grants, won):
    peers = [f"n{i + 1}" for i in range(n)]
    raw, st = make_node("n1", peers)
    raw.campaign()
    drain(raw, st)
    for p in peers[1 : 1 + grants]:
        raw.step(Message(type=MSG_VOTE_RESP, src=p, dst="n1", term=1))
    assert (raw.raft.state == LEADER) is won
    if won:
        # A new leader appends an empty entry of its term and replicates it (5.4.2).
        msgs, _, _ = drain(raw, st)
        assert st.last_index() == 1 and st.term(1) == 1 and st.entries(1, 2)[0].data is None
        assert {m.dst for m in msgs if m.type == MSG_APP} == set(peers[1:])


def test_candidate_loses_when_a_majority_rejects():
    raw, _st = make_node("n1", PEERS)
    raw.campaign()
    raw.step(Message(type=MSG_VOTE_RESP, src="n2", dst="n1", term=1, reject=True))
    assert raw.raft.state == CANDIDATE
    raw.step(Message(type=MSG_VOTE_RESP, src="n3", dst="n1", term=1, reject=True))
    assert raw.raft.state == FOLLOWER and raw.raft.term == 1


def test_one_vote_per_term_first_come_first_served():
    raw, st = make_node("n1", PEERS)
    raw.step(Message(type=MSG_VOTE, src="n2", dst="n1", term=1))
    raw.step(Message(type=MSG_VOTE, src="n3", dst="n1", term=1))
    raw.step(Message(type=MSG_VOTE, src="n2", dst="n1", term=1))  # a retransmission: granted again
    msgs, _, _ = drain(raw, st)
    answers = [(m.dst, m.reject) for m in msgs]
    assert answers == [("n2", False), ("n3", True), ("n2", False)]
    assert st.hard_state().vote == "n2"


def test_vote_survives_restart():
    """A restarted node must not vote twice in a term: the vote was persisted before the grant left."""
    raw, st = make_node("n1", PEERS)
    raw.step(Message(type=MSG_VOTE, src="n2", dst="n1", term=1))
    drain(raw, st)
    again, _ = make_node("n1", PEERS, storage=st)
    again.step(Message(type=MSG_VOTE, src="n3", dst="n1", term=1))
    msgs, _, _ = drain(again, st)
    assert [m.reject for m in msgs] == [True]


@pytest.mark.parametrize("mtype", [MSG_APP, MSG_HEARTBEAT])
def test_candidate_steps_down_for_a_leader_of_its_term(mtype):
    raw, st = make_node("n1", PEERS)
    raw.campaign()
    drain(raw, st)
    raw.step(Message(type=mtype, src="n2", dst="n1", term=1))
    assert raw.raft.state == FOLLOWER and raw.raft.lead == "n2" and raw.raft.term == 1


def test_any_role_steps_down_on_a_higher_term():
    raw, _st = make_node("n1", PEERS)
    raw.campaign()
    raw.step(Message(type=MSG_VOTE_RESP, src="n2", dst="n1", term=1))
    assert raw.raft.state == LEADER
    raw.step(Message(type=MSG_APP, src="n3", dst="n1", term=5, index=0, log_term=0))
    assert raw.raft.state == FOLLOWER and raw.raft.term == 5 and raw.raft.lead == "n3"


def test_stale_term_messages_are_ignored():
    raw, st = make_node("n1", PEERS, storage=storage_with_log(PEERS, [], hard_term=3))
    raw.step(Message(type=MSG_VOTE, src="n2", dst="n1", term=2))
    msgs, _, _ = drain(raw, st)
    assert raw.raft.term == 3 and raw.raft.vote is None and msgs == []


def test_leader_heartbeats_every_heartbeat_tick():
    raw, st = make_node("n1", PEERS, Config(pre_vote=False, check_quorum=False, heartbeat_tick=2))
    raw.campaign()
    raw.step(Message(type=MSG_VOTE_RESP, src="n2", dst="n1", term=1))
    drain(raw, st)
    counts = []
    for _ in range(6):
        raw.tick()
        msgs, _, _ = drain(raw, st)
        counts.append(sum(m.type == MSG_HEARTBEAT for m in msgs))
    assert counts == [0, 2, 0, 2, 0, 2]


@pytest.mark.parametrize("n", [3, 5])
def test_cluster_elects_exactly_one_leader(n):
    c = Cluster(n, Config(election_tick=10))
    lead = c.stabilize()
    assert [x.id for x in c.leaders()] == [lead.id]
    assert {x.raw.raft.term for x in c.live()} == {lead.raw.raft.term}


def test_split_votes_resolve_by_randomized_timeouts():
    """Without PreVote, simultaneous candidates split the vote; randomized timeouts break the tie."""
    c = Cluster(5, Config(pre_vote=False, check_quorum=False, election_tick=10), seed=3)
    for node in c.ids:
        c.nodes[node].raw.campaign()
    c.pump()
    c.deliver_all()
    assert c.leaders() == [] and {n.raw.raft.term for n in c.live()} == {1}  # everyone voted for itself
    lead = c.stabilize()
    assert lead.raw.raft.term >= 2
    assert 1 not in c.leaders_by_term


def test_leader_election_after_leader_crash():
    c = Cluster(3, Config(election_tick=10))
    old = c.stabilize()
    old_term = old.raw.raft.term
    c.crash(old.id)
    rounds = 0
    while not c.leaders() and rounds < 100:
        c.tick_all()
        c.pump()
        c.deliver_all()
        rounds += 1
    [new] = c.leaders()
    assert new.id != old.id and new.raw.raft.term > old_term
    assert rounds <= 3 * 10  # within a few election timeouts
