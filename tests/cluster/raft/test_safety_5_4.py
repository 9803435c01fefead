"""Raft paper 5.4, safety: the election restriction, committing only current-term entries (Figure 8),
leader completeness across failover and crashes."""

from __future__ import annotations

import pytest
from jepsen_py.cluster.raft import LEADER, Config, Entry, HardState, Message, RawNode
from jepsen_py.cluster.raft.messages import MSG_APP, MSG_APP_RESP, MSG_VOTE, MSG_VOTE_RESP
from jepsen_py.cluster.raft.quorum import committed_index
from jepsen_py.cluster.raft.raft import Raft

from .sim import Cluster, InvariantViolation, drain, make_node, storage_with_log

PEERS = ["n1", "n2", "n3"]


@pytest.mark.parametrize(
    ("voter_log", "cand_last_index", "cand_last_term", "granted"),
    [
        ([1, 2], 2, 2, True),  # equal logs
        ([1, 2], 3, 2, True),  # longer, same last term
        ([1, 2], 1, 3, True),  # shorter but a later last term wins
        ([1, 2], 1, 2, False),  # shorter with the same last term
        ([1, 2], 5, 1, False),  # longer but an older last term
        ([1, 3], 3, 2, False),
    ],
)
def test_election_restriction_5_4_1(voter_log, cand_last_index, cand_last_term, granted):
    raw, st = make_node("n1", PEERS, storage=storage_with_log(PEERS, voter_log))
    term = max(voter_log) + 1
    raw.step(Message(type=MSG_VOTE, src="n2", dst="n1", term=term, index=cand_last_index,
                     log_term=cand_last_term))
    [resp], _, _ = drain(raw, st)
    assert resp.type == MSG_VOTE_RESP and resp.reject is (not granted)


def test_leader_never_commits_an_old_term_entry_by_counting_replicas_figure_8():
    """A leader of term 4 holding an entry of term 2 on a majority must not commit it until an entry of
    its own term is on a majority too (otherwise Figure 8 shows it can be overwritten)."""
    peers = ["n1", "n2", "n3", "n4", "n5"]
    st = storage_with_log(peers, [1, 2], hard_term=3)
    raw, _ = make_node("n1", peers, storage=st)
    raw.campaign()
    for p in ("n2", "n3"):
        raw.step(Message(type=MSG_VOTE_RESP, src=p, dst="n1", term=4))
    assert raw.raft.state == LEADER
    drain(raw, st)
    # n2 and n3 acknowledge index 2 (the term-2 entry) but not yet the leader's term-4 entry at 3.
    for p in ("n2", "n3"):
        raw.step(Message(type=MSG_APP_RESP, src=p, dst="n1", term=4, index=2))
    assert raw.raft.raft_log.committed == 0
    raw.step(Message(type=MSG_APP_RESP, src="n2", dst="n1", term=4, index=3))
    assert raw.raft.raft_log.committed == 0  # index 3 on n1, n2 only: 2 of 5
    raw.step(Message(type=MSG_APP_RESP, src="n3", dst="n1", term=4, index=3))
    assert raw.raft.raft_log.committed == 3  # the term-4 entry commits, and the term-2 one with it


def test_follower_never_truncates_committed_entries():
    raw, st = make_node("n2", PEERS, storage=storage_with_log(PEERS, [1, 1, 1]))
    raw.step(Message(type=MSG_APP, src="n1", dst="n2", term=1, index=3, log_term=1, commit=3))
    drain(raw, st)
    assert raw.raft.raft_log.committed == 3
    # A stale leader's append starting below our commit index is answered with the commit index.
    raw.step(Message(type=MSG_APP, src="n1", dst="n2", term=1, index=1, log_term=1,
                     entries=(Entry(1, 2, {"i": 2, "t": 1}),)))
    [resp], _, _ = drain(raw, st)
    assert resp.index == 3 and not resp.reject and st.last_index() == 3


def test_committed_entries_survive_leader_failover():
    c = Cluster(5, Config())
    lead = c.stabilize()
    for i in range(10):
        c.propose(lead.id, i)
    c.pump()
    c.deliver_all()
    committed = lead.raw.raft.raft_log.committed
    assert committed >= 11
    c.crash(lead.id)
    new = None
    for _ in range(100):
        c.tick_all()
        c.pump()
        c.deliver_all()
        if c.leaders():
            new = c.leaders()[0]
            break
    assert new is not None and new.id != lead.id
    log = new.raw.raft.raft_log
    assert log.last_index() >= committed
    for i in range(1, committed + 1):
        assert log.slice(i, i + 1)[0] == lead.storage.entries(i, i + 1)[0]


def test_acknowledged_writes_survive_crash_of_every_node():
    """Entries are durable before they are acknowledged: crash all, restart, and nothing is lost."""
    c = Cluster(3, Config())
    lead = c.stabilize()
    for i in range(5):
        c.propose(lead.id, i)
    c.pump()
    c.deliver_all()
    acked = {i: d for i, d in c.applied_at.items()}
    for n in c.ids:
        c.crash(n)
    c.commit_everywhere()
    for i, d in acked.items():
        assert c.applied_at[i] == d
    assert all(n.applied >= max(acked) for n in c.live())


def test_restart_keeps_term_vote_and_commit():
    st = storage_with_log(PEERS, [1, 1, 2])
    st.set_hard_state(HardState(term=3, vote="n2", commit=2))
    raw, _ = make_node("n1", PEERS, storage=st)
    assert raw.status()["term"] == 3 and raw.status()["vote"] == "n2" and raw.status()["commit"] == 2
    _, applied, _ = drain(raw, st)
    assert [e.index for e in applied] == [1, 2]  # committed entries are re-applied after a restart


def test_restart_skips_entries_already_applied():
    st = storage_with_log(PEERS, [1, 1, 2])
    st.set_hard_state(HardState(term=3, vote=None, commit=3))
    raw, _ = make_node("n1", PEERS, Config(pre_vote=False, check_quorum=False, applied=2), storage=st)
    _, applied, _ = drain(raw, st)
    assert [e.index for e in applied] == [3]


def test_a_snapshot_newer_than_the_durable_commit_supersedes_it():
    from jepsen_py.cluster.raft import Snapshot

    st = storage_with_log(PEERS, [])
    st.apply_snapshot(Snapshot(index=7, term=2, peers=tuple(PEERS), data={}))
    st.set_hard_state(HardState(term=2, vote=None, commit=3))  # crash before the new hard state
    raw, _ = make_node("n1", PEERS, Config(pre_vote=False, check_quorum=False, applied=7), storage=st)
    assert raw.status()["commit"] == 7


def test_corrupt_hard_state_is_refused():
    from jepsen_py.cluster.raft import ConfigError

    st = storage_with_log(PEERS, [1])
    st.set_hard_state(HardState(term=1, vote=None, commit=5))
    with pytest.raises(ConfigError):
        make_node("n1", PEERS, storage=st)


# ---- Figure 8, played out on the simulated cluster


class CommitsOldTermEntries(Raft):
    """Broken on purpose: commits whatever a majority holds, whatever its term (no 5.4.2 rule)."""

    def _maybe_commit(self) -> bool:
        mci = committed_index(self.voters, {p: pr.match for p, pr in self.prs.items()})
        if mci > self.raft_log.committed:
            self.raft_log.commit_to(mci)
            return True
        return False


class CommitsOldTermEntriesNode(RawNode):
    raft_class = CommitsOldTermEntries


def deliver_where(c: Cluster, pred, until=lambda: False) -> None:
    while True:
        c.pump()
        pos = next((i for i, m in enumerate(c.net) if pred(m)), None)
        if pos is None or until():
            return
        c.deliver_at(pos)


def elect(c: Cluster, node: str, excluded: str) -> None:
    for _ in range(3):
        if c.nodes[node].raw.raft.state == LEADER:
            return
        c.nodes[node].raw.campaign()
        deliver_where(c, lambda m: m.type in (MSG_VOTE, MSG_VOTE_RESP) and excluded not in (m.src, m.dst))
    assert c.nodes[node].raw.raft.state == LEADER


def figure_8(node_class: type[RawNode]) -> tuple[Cluster, int]:
    """(a) n1 leads and gets X to n2 only; (b) n1 crashes, n5 leads a later term with n3, n4 and
    appends its own entry at X's index, alone; (c) n5 crashes, n1 returns, leads again and brings X
    to n3, so X sits on a majority, then crashes before its own term's entry does; (d) n5 returns
    and wins with n3, n4 (its last term is newer), overwriting X. Returns the cluster and n1's commit
    index at the end of (c)."""
    cfg = Config(election_tick=10, pre_vote=False, check_quorum=False, max_batch_entries=1)
    c = Cluster(5, cfg, node_class=node_class)
    elect(c, "n1", excluded="")
    c.deliver_all()
    c.propose("n1", "X")
    deliver_where(c, lambda m: m.dst in ("n1", "n2"))
    c.net.clear()
    c.crash("n1")
    elect(c, "n5", excluded="n2")
    c.pump()
    c.net.clear()
    c.crash("n5")
    c.restart("n1")
    elect(c, "n1", excluded="n5")
    lead = c.nodes["n1"].raw.raft
    deliver_where(c, lambda m: "n5" not in (m.src, m.dst), until=lambda: lead.prs["n3"].match >= 2)
    commit = lead.raft_log.committed
    c.crash("n1")
    c.net.clear()
    c.restart("n5")
    elect(c, "n5", excluded="n2")
    c.commit_everywhere()
    return c, commit


def test_figure_8_an_entry_of_an_old_term_on_a_majority_is_not_committed():
    c, commit_in_c = figure_8(RawNode)
    assert commit_in_c == 1  # X (index 2, an older term) was on n1, n2, n3 and still not committed
    assert c.applied_at[2] != {"seq": 1, "v": "X"}  # n5 overwrote it, legitimately


def test_figure_8_the_checks_catch_committing_old_term_entries():
    with pytest.raises(InvariantViolation, match="leader completeness"):
        figure_8(CommitsOldTermEntriesNode)
