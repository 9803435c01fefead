"""Randomized simulation (hypothesis): 3- and 5-node clusters under message loss, delay, duplication,
reordering, partitions and crash/restart, with Raft's safety invariants checked after every step and
liveness checked once the network heals. Also: the checks do catch deliberately broken rules.

Runs derandomized (a fixed example sequence) so CI is reproducible; RAFT_SIM_EXAMPLES raises the
example count for a longer local hunt.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jepsen_py.cluster.raft import Config, RawNode
from jepsen_py.cluster.raft.messages import MSG_PRE_VOTE, MSG_PRE_VOTE_RESP, MSG_VOTE, MSG_VOTE_RESP, Message
from jepsen_py.cluster.raft.raft import Raft

from .sim import Cluster, InvariantViolation

EXAMPLES = int(os.environ.get("RAFT_SIM_EXAMPLES", "0"))

# Repeats weight the draw; hypothesis shrinks towards the first (a plain tick of every clock).
ACTIONS = (
    "tick_all", "tick_all", "round", "round", "round",
    "deliver", "deliver", "deliver", "deliver",
    "deliver_fifo", "deliver_fifo",
    "drop", "dup",
    "propose", "propose", "propose",
    "read",
    "partition", "heal", "heal",
    "crash", "restart", "restart", "crash_mid_ready",
    "compact",
    "tick",
)

STEPS = st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, 1 << 16)), min_size=60, max_size=300)


def _sim_settings(examples: int) -> settings:
    return settings(
        max_examples=EXAMPLES or examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def run_steps(cluster: Cluster, steps: list[tuple[str, int]], drift: bool = True) -> None:
    """Applies the drawn actions; `drift` allows ticking one node alone (unbounded clock drift)."""
    ids = cluster.ids
    for action, sel in steps:
        node = ids[sel % len(ids)]
        if action == "tick_all":
            for _ in range(1 + sel % 3):
                cluster.tick_all()
                cluster.pump()
        elif action == "round":
            # A stretch of good network: every clock ticks, everything in flight arrives in order.
            cluster.tick_all()
            cluster.pump()
            cluster.deliver_all(limit=len(cluster.net) + 1 + sel % 64)
        elif action == "tick":
            if drift:
                cluster.tick(node)
            else:
                cluster.tick_all()
        elif action == "deliver":
            cluster.deliver_at(sel)
        elif action == "deliver_fifo":
            for _ in range(1 + sel % 16):
                cluster.deliver_at(0)
                cluster.pump()
        elif action == "drop":
            cluster.drop_at(sel)
        elif action == "dup":
            cluster.duplicate_at(sel)
        elif action == "propose":
            cluster.propose(node, sel)
        elif action == "read":
            cluster.read(node)
        elif action == "partition":
            cluster.partition(sel)
        elif action == "heal":
            cluster.heal()
        elif action == "crash":
            cluster.crash(node)
        elif action == "crash_mid_ready":
            cluster.crash_mid_ready(node, sel // len(ids) % 3)
        elif action == "restart":
            cluster.restart(node)
        elif action == "compact":
            cluster.compact(node)
        cluster.pump()


def simulate(n: int, config: Config, steps: list[tuple[str, int]], drift: bool = True,
             node_class: type[RawNode] = RawNode) -> Cluster:
    cluster = Cluster(n, config, node_class=node_class, seed=len(steps))
    run_steps(cluster, steps, drift=drift)
    cluster.commit_everywhere()
    return cluster


FAST = Config(election_tick=5, heartbeat_tick=1, max_batch_entries=4, max_inflight_msgs=4)


@_sim_settings(150)
@given(steps=STEPS)
def test_simulation_3_nodes_prevote_checkquorum(steps):
    simulate(3, FAST, steps)


@_sim_settings(80)
@given(steps=STEPS)
def test_simulation_5_nodes_prevote_checkquorum(steps):
    simulate(5, FAST, steps)


@_sim_settings(100)
@given(steps=STEPS)
def test_simulation_3_nodes_plain_raft(steps):
    """Neither PreVote nor CheckQuorum: the paper's basic algorithm must be just as safe."""
    simulate(3, Config(**{**FAST.__dict__, "pre_vote": False, "check_quorum": False}), steps)


@_sim_settings(60)
@given(steps=STEPS)
def test_simulation_3_nodes_checkquorum_without_prevote(steps):
    """CheckQuorum alone: a candidate stranded with a higher term must still be freed after healing."""
    simulate(3, Config(**{**FAST.__dict__, "pre_vote": False}), steps)


@_sim_settings(60)
@given(steps=STEPS)
def test_simulation_5_nodes_prevote_without_checkquorum(steps):
    simulate(5, Config(**{**FAST.__dict__, "check_quorum": False}), steps)


@_sim_settings(60)
@given(steps=STEPS)
def test_simulation_5_nodes_lease_reads(steps):
    cfg = Config(**{**FAST.__dict__, "read_only": "lease", "lease_margin_ticks": 1})
    simulate(5, cfg, steps, drift=False)


@_sim_settings(100)
@given(steps=STEPS)
def test_simulation_lease_reads_with_synchronized_clocks(steps):
    """Lease reads are safe only while clocks advance together: every tick here is a tick of all."""
    cfg = Config(**{**FAST.__dict__, "read_only": "lease", "lease_margin_ticks": 1})
    simulate(3, cfg, steps, drift=False)


# ---- the checks catch broken rules

class VotesTwice(Raft):
    """Broken on purpose: grants every vote request whose log is up to date, even after voting."""

    def _handle_vote_request(self, m: Message) -> None:
        resp = MSG_VOTE_RESP if m.type == MSG_VOTE else MSG_PRE_VOTE_RESP
        if self.raft_log.is_up_to_date(m.index, m.log_term):
            self._send(Message(type=resp, src=self.id, dst=m.src, term=m.term))
            if m.type == MSG_VOTE:
                self.election_elapsed = 0
                self.vote = m.src
        else:
            self._send(Message(type=resp, src=self.id, dst=m.src, term=self.term, reject=True))


class IgnoresLogInVotes(Raft):
    """Broken on purpose: drops the election restriction (5.4.1), votes regardless of the log."""

    def _handle_vote_request(self, m: Message) -> None:
        can_vote = self.vote in (None, m.src) or (m.type == MSG_PRE_VOTE and m.term > self.term)
        resp = MSG_VOTE_RESP if m.type == MSG_VOTE else MSG_PRE_VOTE_RESP
        if can_vote:
            self._send(Message(type=resp, src=self.id, dst=m.src, term=m.term))
            if m.type == MSG_VOTE:
                self.election_elapsed = 0
                self.vote = m.src
        else:
            self._send(Message(type=resp, src=self.id, dst=m.src, term=self.term, reject=True))


class VotesTwiceNode(RawNode):
    raft_class = VotesTwice


class IgnoresLogNode(RawNode):
    raft_class = IgnoresLogInVotes


def _expect_violation(node_class: type[RawNode], config: Config, examples: int, needle: str) -> str:
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(steps=STEPS)
    def hunt(steps):
        simulate(3, config, steps, node_class=node_class)

    with pytest.raises(InvariantViolation) as exc:
        hunt()
    assert needle in str(exc.value), str(exc.value)
    return str(exc.value)


def test_simulation_catches_double_voting():
    cfg = Config(**{**FAST.__dict__, "pre_vote": False, "check_quorum": False})
    _expect_violation(VotesTwiceNode, cfg, 300, "election safety")


def test_simulation_catches_missing_election_restriction():
    cfg = Config(**{**FAST.__dict__, "pre_vote": False, "check_quorum": False})
    msg = _expect_violation(IgnoresLogNode, cfg, 300, "")
    assert any(k in msg for k in ("leader completeness", "state machine safety", "log matching")), msg
