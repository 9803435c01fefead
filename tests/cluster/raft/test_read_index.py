"""Raft thesis 6.4: linearizable reads without writing to the log.

ReadIndex (read_only="safe"): the leader records its commit index, confirms it is still the leader
with a heartbeat round acknowledged by a majority, and only then answers. Lease (read_only="lease"):
the leader answers at once while a majority acknowledged a heartbeat sent less than
election_tick - lease_margin_ticks ticks ago; followers refuse votes for election_tick ticks after
hearing from it, so no other leader can exist meanwhile (assuming bounded clock drift).
"""

from __future__ import annotations

import pytest
from jepsen_py.cluster.raft import LEADER, Config, Message, ProposalDropped, RawNode, ReadState
from jepsen_py.cluster.raft.messages import MSG_HEARTBEAT, MSG_HEARTBEAT_RESP, MSG_READ_INDEX, MSG_VOTE
from jepsen_py.cluster.raft.raft import Raft

from .sim import Cluster, InvariantViolation, drain, make_node

SAFE = Config(election_tick=10)
LEASE = Config(election_tick=10, read_only="lease", lease_margin_ticks=2)


def reads_of(c: Cluster, node_id: str) -> dict[str, int]:
    return {rs.context: rs.index for rs in c.nodes[node_id].read_states}


def settle(c: Cluster, rounds: int = 3) -> None:
    for _ in range(rounds):
        c.tick_all()
        c.pump()
        c.deliver_all()


def test_leader_answers_only_after_a_majority_confirms_its_leadership():
    c = Cluster(3, SAFE)
    lead = c.stabilize()
    settle(c)
    ctx = c.read(lead.id)
    c.pump()
    assert ctx not in reads_of(c, lead.id)
    heartbeats = [m for m in c.net if m.type == MSG_HEARTBEAT and m.context == ctx]
    assert len(heartbeats) == 2
    c.deliver_all()
    assert reads_of(c, lead.id)[ctx] == lead.raw.raft.raft_log.committed


def test_follower_read_is_forwarded_and_answered_by_the_leader():
    c = Cluster(3, SAFE)
    lead = c.stabilize()
    settle(c)
    c.propose(lead.id, "w")
    c.pump()
    c.deliver_all()
    follower = next(n.id for n in c.live() if n.id != lead.id)
    ctx = c.read(follower)
    c.pump()
    assert [(m.type, m.dst) for m in c.net] == [(MSG_READ_INDEX, lead.id)]
    c.deliver_all()
    assert reads_of(c, follower)[ctx] == lead.raw.raft.raft_log.committed


def test_a_new_leader_defers_reads_until_its_first_entry_commits():
    c = Cluster(3, SAFE)
    node = c.nodes["n1"]
    node.raw.campaign()
    c.pump()
    # Deliver only the votes, not the appends: n1 leads but has not committed in its term.
    while node.raw.raft.state != LEADER:
        c.deliver_at(0)
        c.pump()
    assert node.raw.raft.raft_log.committed == 0
    ctx = c.read("n1")
    c.pump()
    assert not any(m.context == ctx for m in c.net)
    c.deliver_all()
    assert reads_of(c, "n1")[ctx] >= 1


def test_read_without_a_leader_is_refused():
    raw, _ = make_node("n1", ["n1", "n2", "n3"])
    with pytest.raises(ProposalDropped):
        raw.read_index("r1")


def test_isolated_leader_never_answers_a_read_index():
    c = Cluster(3, Config(election_tick=10, check_quorum=False))
    lead = c.stabilize()
    settle(c)
    c.isolate(lead.id)
    ctx = c.read(lead.id)
    settle(c, 30)
    assert ctx not in reads_of(c, lead.id)
    assert lead.raw.raft.state == LEADER  # still believes it leads: ReadIndex alone keeps it honest


def test_pending_reads_are_released_together_in_order():
    c = Cluster(3, SAFE)
    lead = c.stabilize()
    settle(c)
    ctxs = [c.read(lead.id) for _ in range(3)]
    c.pump()
    # Only the last round's heartbeats reach the followers: its quorum releases all three.
    last = [m for m in c.net if m.context == ctxs[-1]]
    c.net = last
    c.deliver_all()
    assert set(reads_of(c, lead.id)) == set(ctxs)


def test_single_node_reads_at_once():
    raw, st = make_node("n1", ["n1"])
    raw.campaign()
    drain(raw, st)
    raw.read_index("solo")
    _, _, reads = drain(raw, st)
    assert reads == [ReadState(index=1, context="solo")]


def test_lease_read_is_answered_without_a_heartbeat_round():
    c = Cluster(3, LEASE)
    lead = c.stabilize()
    settle(c, 2)
    assert lead.raw.raft.lease_valid()
    ctx = c.read(lead.id)
    c.pump()
    assert reads_of(c, lead.id)[ctx] == lead.raw.raft.raft_log.committed
    assert not any(m.context == ctx for m in c.net)


def test_lease_expires_before_any_other_leader_can_be_elected():
    c = Cluster(3, LEASE)
    lead = c.stabilize()
    settle(c, 2)
    c.isolate(lead.id)
    expired_at = None
    for t in range(1, 40):
        c.tick_all()
        c.pump()
        c.deliver_all()
        if expired_at is None and not lead.raw.raft.lease_valid():
            expired_at = t
        others = [n for n in c.leaders() if n.id != lead.id]
        if others:
            assert expired_at is not None and expired_at < t, "a new leader while the old lease held"
            break
    assert expired_at is not None and expired_at <= 10 - 2
    ctx = c.read(lead.id)
    settle(c, 3)
    assert ctx not in reads_of(c, lead.id)  # falls back to ReadIndex, which cannot complete


def test_lease_is_forfeited_by_a_leader_transfer():
    c = Cluster(3, LEASE)
    lead = c.stabilize()
    settle(c, 2)
    target = next(n.id for n in c.live() if n.id != lead.id)
    c.isolate(target)
    lead.raw.transfer_leader(target)
    c.pump()
    assert not lead.raw.raft.lease_valid()


def test_a_restarted_node_honours_the_lease_it_may_have_granted():
    """In lease mode a node that just (re)started refuses votes for an election timeout: before the
    crash it may have acknowledged a heartbeat that a leader's lease counts on."""
    raw, st = make_node("n1", ["n1", "n2", "n3"], LEASE)
    raw.step(Message(type=MSG_VOTE, src="n2", dst="n1", term=5, index=0, log_term=0))
    msgs, _, _ = drain(raw, st)
    assert msgs == [] and raw.raft.term == 0
    for _ in range(10):
        raw.tick()
    raw.step(Message(type=MSG_VOTE, src="n2", dst="n1", term=5, index=0, log_term=0))
    msgs, _, _ = drain(raw, st)
    assert [m.reject for m in msgs] == [False]


def test_lease_read_invalid_config_is_rejected():
    from jepsen_py.cluster.raft import ConfigError

    with pytest.raises(ConfigError):
        make_node("n1", ["n1"], Config(read_only="lease", check_quorum=False))


def test_heartbeat_response_echoes_the_lease_stamp():
    raw, st = make_node("n2", ["n1", "n2", "n3"])
    raw.step(Message(type=MSG_HEARTBEAT, src="n1", dst="n2", term=1, index=42, context="c"))
    [resp], _, _ = drain(raw, st)
    assert (resp.type, resp.index, resp.context) == (MSG_HEARTBEAT_RESP, 42, "c")


class LeaseWithoutExpiry(Raft):
    """Broken on purpose: the leader trusts its lease for as long as it believes it leads."""

    def lease_valid(self) -> bool:
        return self.state == LEADER


class LeaseWithoutExpiryNode(RawNode):
    raft_class = LeaseWithoutExpiry


def partitioned_leader_read(seed: int, node_class: type[RawNode]) -> bool:
    """Isolates the leader; once the majority's new leader commits a write while the old one still
    believes it leads, reads on the old one. True if that read was attempted."""
    c = Cluster(3, LEASE, node_class=node_class, seed=seed)
    lead = c.stabilize()
    settle(c, 2)
    c.isolate(lead.id)
    for _ in range(40):
        settle(c, 1)
        others = [n for n in c.leaders() if n.id != lead.id]
        if others and lead.raw.raft.state == LEADER:
            c.propose(others[0].id, "newer")
            c.pump()
            c.deliver_all()
            c.read(lead.id)
            c.pump()  # the read-state check raises here if the old leader answers stale
            settle(c, 3)
            return True
    return False


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_lease_read_on_a_deposed_leader_is_refused(seed):
    assert partitioned_leader_read(seed, RawNode)


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_the_read_check_catches_a_lease_without_expiry(seed):
    with pytest.raises(InvariantViolation, match="stale read"):
        partitioned_leader_read(seed, LeaseWithoutExpiryNode)


def test_a_follower_drops_a_peers_read_index_instead_of_relaying_it_under_the_peers_name():
    # A read sent to a leader that has since stepped down reaches it as a follower. Relaying it
    # would put the original sender's name on this node's stream to the leader, which the transport
    # refuses (and closes, taking every queued message with it); the sender's round retries instead.
    c = Cluster(3, SAFE)
    lead = c.stabilize()
    settle(c)
    follower, other = (n.id for n in c.live() if n.id != lead.id)
    c.nodes[follower].raw.step(Message(type=MSG_READ_INDEX, src=other, dst=follower, context="late"))
    c.pump()
    assert not any(m.type == MSG_READ_INDEX for m in c.net)
    # its own reads still go to the leader
    c.read(follower)
    c.pump()
    assert [(m.type, m.src, m.dst) for m in c.net] == [(MSG_READ_INDEX, follower, lead.id)]
