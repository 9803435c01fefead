"""The Ready/advance contract the edges rely on."""

from __future__ import annotations

import pytest
from jepsen_py.cluster.raft import (
    FOLLOWER,
    LEADER,
    Config,
    ConfigError,
    Entry,
    InvalidMessageError,
    Message,
    RawNode,
    SoftState,
    StepLocalMessageError,
)
from jepsen_py.cluster.raft.messages import MSG_APP, MSG_HEARTBEAT, MSG_HUP, MSG_VOTE, MSG_VOTE_RESP

from .sim import drain, make_node

PEERS = ["n1", "n2", "n3"]


def test_a_fresh_node_has_nothing_to_do():
    raw, _ = make_node("n1", PEERS)
    assert not raw.has_ready()
    st = raw.status()
    keys = ("id", "role", "term", "leader", "commit", "applied", "last_index")
    assert tuple(st[k] for k in keys) == ("n1", FOLLOWER, 0, None, 0, 0, 0)


def test_campaign_ready_persists_the_vote_before_sending():
    raw, _st = make_node("n1", PEERS)
    raw.campaign()
    rd = raw.ready()
    assert rd.hard_state is not None and rd.hard_state.vote == "n1" and rd.hard_state.term == 1
    assert rd.must_sync
    assert {m.type for m in rd.messages} == {MSG_VOTE}
    assert rd.soft_state == SoftState(leader=None, role="candidate")
    raw.advance(rd)
    assert not raw.has_ready()


def test_leader_ready_carries_entries_then_commits_after_acks():
    raw, st = make_node("n1", PEERS)
    raw.campaign()
    drain(raw, st)
    raw.step(Message(type=MSG_VOTE_RESP, src="n2", dst="n1", term=1))
    rd = raw.ready()
    assert rd.soft_state == SoftState(leader="n1", role=LEADER)
    assert [e.index for e in rd.entries] == [1] and rd.committed_entries == ()
    st.append(rd.entries)
    raw.advance(rd)
    raw.propose({"op": "x"})
    rd = raw.ready()
    assert [e.data for e in rd.entries] == [{"op": "x"}]
    st.append(rd.entries)
    raw.advance(rd)
    from jepsen_py.cluster.raft.messages import MSG_APP_RESP

    raw.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=1, index=2))
    rd = raw.ready()
    assert [e.index for e in rd.committed_entries] == [1, 2]
    assert rd.hard_state.commit == 2
    raw.advance(rd)
    assert raw.status()["applied"] == 2


def test_role_and_leader_read_what_soft_state_holds_and_ready_reports_only_a_change():
    raw, st = make_node("n1", PEERS)
    seen = []

    def check() -> None:
        soft = raw.soft_state()
        assert (raw.role(), raw.leader()) == (soft.role, soft.leader)
        seen.append(soft)

    check()
    raw.campaign()
    check()
    rd = raw.ready()
    assert rd.soft_state == seen[-1]
    raw.advance(rd)
    raw.step(Message(type=MSG_VOTE_RESP, src="n2", dst="n1", term=1))
    check()
    assert (raw.role(), raw.leader()) == (LEADER, "n1")
    rd = raw.ready()
    assert rd.soft_state == SoftState(leader="n1", role=LEADER)
    raw.advance(rd)
    raw.propose({"op": "x"})
    rd = raw.ready()
    assert rd.soft_state is None  # still leading n1's term: nothing moved
    st.append(rd.entries)
    raw.advance(rd)
    raw.step(Message(type=MSG_APP, src="n2", dst="n1", term=2))  # a leader of a later term
    check()
    assert (raw.role(), raw.leader()) == (FOLLOWER, "n2")
    assert raw.ready().soft_state == SoftState(leader="n2", role=FOLLOWER)


def test_local_message_types_cannot_come_from_the_network():
    raw, _ = make_node("n1", PEERS)
    with pytest.raises(StepLocalMessageError):
        raw.step(Message(type=MSG_HUP, src="n2", dst="n1"))


def test_messages_for_others_or_from_strangers_are_ignored():
    raw, _ = make_node("n1", PEERS)
    raw.step(Message(type=MSG_APP, src="n2", dst="n9", term=4))
    raw.step(Message(type=MSG_APP, src="x7", dst="n1", term=4))
    raw.step(Message(type=MSG_APP, src="n2", dst="n1", term=0))  # only proposals travel termless
    assert raw.status()["term"] == 0 and not raw.has_ready()


@pytest.mark.parametrize(
    "cfg",
    [
        Config(heartbeat_tick=0),
        Config(election_tick=1, heartbeat_tick=1),
        Config(read_only="sometimes"),
        Config(lease_margin_ticks=10),
        Config(max_inflight_msgs=0),
    ],
)
def test_invalid_configs_are_refused(cfg):
    with pytest.raises(ConfigError):
        RawNode("n1", PEERS, make_node("n1", PEERS)[1], cfg)


def test_duplicate_or_empty_peers_are_refused():
    from jepsen_py.cluster.raft import MemoryStorage

    with pytest.raises(ConfigError):
        RawNode("n1", ["n1", "n1"], MemoryStorage(), Config())
    with pytest.raises(ConfigError):
        RawNode("n1", [], MemoryStorage(), Config())


def test_ready_twice_without_advance_is_a_caller_bug():
    raw, _ = make_node("n1", PEERS)
    raw.campaign()
    raw.ready()
    with pytest.raises(RuntimeError, match="advance"):
        raw.ready()


@pytest.mark.parametrize(
    "msg",
    [
        Message(type=MSG_APP, src="n2", dst="n1", term=2, index=0, log_term=0, entries=(Entry(2, 2),)),
        Message(type=MSG_APP, src="n2", dst="n1", term=2, index=0, log_term=0, entries=(Entry(3, 1),)),
        Message(type=MSG_APP, src="n2", dst="n1", term=2, index=0, log_term=0,
                entries=(Entry(2, 1), Entry(1, 2))),
        Message(type=MSG_APP, src="n2", dst="n1", term=2, index=1, log_term=3),
    ],
)
def test_a_faulty_peers_append_is_refused_before_it_changes_anything(msg):
    raw, _ = make_node("n1", PEERS)
    with pytest.raises(InvalidMessageError):
        raw.step(msg)
    assert raw.status()["term"] == 0 and raw.status()["last_index"] == 0


def test_a_heartbeat_committing_past_the_log_is_refused():
    raw, _ = make_node("n1", PEERS)
    with pytest.raises(InvalidMessageError):
        raw.step(Message(type=MSG_HEARTBEAT, src="n2", dst="n1", term=1, commit=7))
    assert raw.status()["commit"] == 0


class ComparingRawNode(RawNode):
    """has_ready() checked against its definition: the soft or hard state changed (a non-empty hard
    state), or there is a snapshot, entries, messages, committed entries or read states to hand out."""

    calls = 0

    def has_ready(self) -> bool:
        got = super().has_ready()
        r = self.raft
        hs = r.hard_state()
        want = bool(r.soft_state() != self._prev_soft
                    or (not hs.is_empty() and hs != self._prev_hard)
                    or r.raft_log.has_pending_snapshot() or r.raft_log.unstable_entries() or r.msgs
                    or r.raft_log.has_next_committed_entries() or r.read_states)
        assert got == want, (got, want, r.status())
        ComparingRawNode.calls += 1
        return got


def test_has_ready_agrees_with_what_ready_would_hold_through_elections_writes_reads_and_crashes():
    import random

    from .sim import Cluster

    rng = random.Random(5)
    c = Cluster(3, node_class=ComparingRawNode, seed=5)
    for step in range(600):
        r = rng.random()
        node = rng.choice(c.ids)
        if r < 0.3:
            c.tick_all()
        elif r < 0.5:
            c.propose(node, step)
        elif r < 0.6:
            c.read(node)
        elif r < 0.63:
            c.crash(node)
            c.restart(node)
        elif r < 0.66:
            c.isolate(node)
        elif r < 0.7:
            c.heal()
        c.deliver_all()
        c.pump()
    assert ComparingRawNode.calls > 1000
    assert max(n.applied for n in c.nodes.values()) > 50  # it did elect, replicate and apply


def test_term_is_the_hard_states_term_through_a_campaign():
    raw, st = make_node("n1", PEERS)
    assert raw.term() == raw.hard_state().term == 0
    raw.campaign()
    drain(raw, st)
    assert raw.term() == raw.hard_state().term == 1
