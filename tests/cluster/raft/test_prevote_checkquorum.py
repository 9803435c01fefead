"""Raft thesis 9.6 (PreVote) and 6.2 (CheckQuorum, the leader lease on votes), and leader transfer.

CheckQuorum is the KAFKA-15489 fix: an isolated leader steps down within an election timeout instead
of lingering as a zombie. PreVote keeps a partitioned node from inflating terms and deposing a healthy
leader when it returns.
"""

from __future__ import annotations

import pytest
from jepsen_py.cluster.raft import FOLLOWER, LEADER, PRE_CANDIDATE, Config, Message
from jepsen_py.cluster.raft.messages import MSG_APP_RESP, MSG_PRE_VOTE, MSG_VOTE

from .sim import Cluster, drain, make_node

PEERS = ["n1", "n2", "n3"]


def run(c: Cluster, rounds: int) -> None:
    for _ in range(rounds):
        c.tick_all()
        c.pump()
        c.deliver_all()


def test_prevote_keeps_the_term_of_an_isolated_node():
    c = Cluster(3, Config(election_tick=10))
    lead = c.stabilize()
    term = lead.raw.raft.term
    victim = next(n.id for n in c.live() if n.id != lead.id)
    c.isolate(victim)
    run(c, 100)
    assert c.nodes[victim].raw.raft.term == term  # pre-elections never bumped it
    assert c.nodes[victim].raw.raft.state == PRE_CANDIDATE or c.nodes[victim].raw.raft.state == FOLLOWER
    c.heal()
    run(c, 30)
    assert [n.id for n in c.leaders()] == [lead.id] and lead.raw.raft.term == term  # no disruption


def test_without_prevote_an_isolated_node_disrupts_the_leader_on_return():
    c = Cluster(3, Config(election_tick=10, pre_vote=False, check_quorum=False))
    lead = c.stabilize()
    term = lead.raw.raft.term
    victim = next(n.id for n in c.live() if n.id != lead.id)
    c.isolate(victim)
    run(c, 100)
    assert c.nodes[victim].raw.raft.term > term + 3
    c.heal()
    run(c, 40)
    assert min(n.raw.raft.term for n in c.live()) > term + 3  # everyone was dragged to the new term


def test_prevote_is_granted_without_changing_the_voter():
    raw, st = make_node("n1", PEERS, Config(pre_vote=True, check_quorum=False))
    raw.step(Message(type=MSG_PRE_VOTE, src="n2", dst="n1", term=1))
    [resp], _, _ = drain(raw, st)
    assert not resp.reject and resp.term == 1
    assert raw.raft.term == 0 and raw.raft.vote is None


def test_pre_candidate_becomes_candidate_only_after_a_prevote_majority():
    c = Cluster(3, Config(election_tick=10))
    node = c.nodes["n1"]
    node.raw.campaign()
    assert node.raw.raft.state == PRE_CANDIDATE and node.raw.raft.term == 0
    c.pump()
    c.deliver_all()
    assert node.raw.raft.state == LEADER and node.raw.raft.term == 1


def test_checkquorum_isolated_leader_steps_down_within_an_election_timeout():
    c = Cluster(3, Config(election_tick=10))
    lead = c.stabilize()
    c.isolate(lead.id)
    ticks = 0
    while lead.raw.raft.state == LEADER and ticks < 100:
        ticks += 1
        c.tick_all()
        c.pump()
        c.deliver_all()
    assert lead.raw.raft.state == FOLLOWER
    assert ticks <= 2 * 10  # at most two election timeouts
    # Meanwhile the majority side elects its own leader in a later term.
    run(c, 40)
    majority_leaders = [n for n in c.leaders() if n.id != lead.id]
    assert len(majority_leaders) == 1


def test_without_checkquorum_an_isolated_leader_stays_leader():
    """The zombie-leader condition that the zombie-leader bug flag reproduces."""
    c = Cluster(3, Config(election_tick=10, check_quorum=False))
    lead = c.stabilize()
    c.isolate(lead.id)
    run(c, 100)
    assert lead.raw.raft.state == LEADER
    assert len(c.leaders()) == 2  # two leaders, in different terms (election safety holds)


def test_follower_with_a_live_leader_ignores_vote_requests():
    raw, st = make_node("n1", PEERS, Config(check_quorum=True, pre_vote=False))
    raw.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=1))  # learn term 1
    from jepsen_py.cluster.raft.messages import MSG_HEARTBEAT

    raw.step(Message(type=MSG_HEARTBEAT, src="n2", dst="n1", term=1))
    drain(raw, st)
    raw.step(Message(type=MSG_VOTE, src="n3", dst="n1", term=2, index=10, log_term=1))
    msgs, _, _ = drain(raw, st)
    assert msgs == [] and raw.raft.term == 1  # ignored: no answer, no term change


def test_stale_leader_learns_the_new_term_and_steps_down():
    c = Cluster(3, Config(election_tick=10, check_quorum=False))
    old = c.stabilize()
    c.isolate(old.id)
    run(c, 40)
    [new] = [n for n in c.leaders() if n.id != old.id]
    c.heal()
    run(c, 5)
    assert old.raw.raft.state == FOLLOWER and old.raw.raft.lead == new.id
    assert old.raw.raft.term == new.raw.raft.term


def test_leader_transfer_hands_over_to_an_up_to_date_follower():
    c = Cluster(3, Config(election_tick=10))
    lead = c.stabilize()
    target = next(n.id for n in c.live() if n.id != lead.id)
    term = lead.raw.raft.term
    lead.raw.transfer_leader(target)
    c.pump()
    c.deliver_all()
    assert c.nodes[target].raw.raft.state == LEADER
    assert c.nodes[target].raw.raft.term == term + 1
    assert lead.raw.raft.state == FOLLOWER


def test_proposals_are_refused_during_a_transfer():
    from jepsen_py.cluster.raft import ProposalDropped

    c = Cluster(3, Config(election_tick=10))
    lead = c.stabilize()
    target = next(n.id for n in c.live() if n.id != lead.id)
    c.isolate(target)
    lead.raw.transfer_leader(target)
    c.pump()
    with pytest.raises(ProposalDropped):
        lead.raw.propose({"x": 1})
    run(c, 12)  # the transfer times out after an election timeout
    c.heal()
    assert lead.raw.raft.lead_transferee is None


def test_a_transfer_requested_on_a_follower_is_forwarded_to_the_leader():
    c = Cluster(3, Config(election_tick=10))
    lead = c.stabilize()
    follower = next(n.id for n in c.live() if n.id != lead.id)
    c.nodes[follower].raw.transfer_leader(follower)
    c.pump()
    c.deliver_all()
    assert c.nodes[follower].raw.raft.state == LEADER


def test_a_stuck_candidate_with_a_higher_term_is_freed_after_healing():
    """CheckQuorum without PreVote: an isolated node campaigns its term up; once back, the others
    ignore its votes (they hear from the leader), so it would be stuck. The leader's heartbeat gets a
    response carrying the higher term, the leader steps down, and a new election includes it."""
    c = Cluster(3, Config(election_tick=10, pre_vote=False))
    lead = c.stabilize()
    stuck = next(n.id for n in c.live() if n.id != lead.id)
    c.isolate(stuck)
    run(c, 60)
    high = c.nodes[stuck].raw.raft.term
    assert high > lead.raw.raft.term + 2
    c.heal()
    new = c.stabilize()
    assert new.raw.raft.term > high - 1
    assert {n.raw.raft.lead for n in c.live()} == {new.id}
