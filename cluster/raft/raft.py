"""The step function: one Raft peer as a deterministic state machine over ticks and messages.

Follows the Raft paper (sections cited inline) and etcd-io/raft's structure: `step` handles terms
and votes common to all roles, then dispatches to the role's step function. Outputs are appended to
`msgs` and `read_states` and to the log's unstable part; RawNode hands them to the edges as a Ready.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import READ_ONLY_LEASE, Config
from .errors import CompactedError, ConfigError, InvalidMessageError, ProposalDropped
from .log import RaftLog
from .messages import (
    CAMPAIGN_TRANSFER,
    CANDIDATE,
    FOLLOWER,
    LEADER,
    MSG_APP,
    MSG_APP_RESP,
    MSG_BEAT,
    MSG_CHECK_QUORUM,
    MSG_HEARTBEAT,
    MSG_HEARTBEAT_RESP,
    MSG_HUP,
    MSG_PRE_VOTE,
    MSG_PRE_VOTE_RESP,
    MSG_PROP,
    MSG_READ_INDEX,
    MSG_READ_INDEX_RESP,
    MSG_SNAP,
    MSG_SNAP_STATUS,
    MSG_TIMEOUT_NOW,
    MSG_TRANSFER_LEADER,
    MSG_UNREACHABLE,
    MSG_VOTE,
    MSG_VOTE_RESP,
    PRE_CANDIDATE,
    Entry,
    HardState,
    Message,
    ReadState,
    Snapshot,
    SoftState,
)
from .progress import PROBE, REPLICATE, SNAPSHOT, Inflights, Progress
from .quorum import VOTE_LOST, VOTE_WON, committed_index, quorum_active, vote_result
from .storage import MemoryStorage

CAMPAIGN_PRE_ELECTION = "pre-election"
CAMPAIGN_ELECTION = "election"


@dataclass
class _ReadIndexStatus:
    req: Message
    index: int
    acks: set[str] = field(default_factory=set)


class _ReadOnly:
    """Pending ReadIndex requests, in arrival order, each waiting for a quorum of heartbeat acks."""

    def __init__(self) -> None:
        self.pending: dict[str, _ReadIndexStatus] = {}
        self.queue: list[str] = []

    def add_request(self, index: int, m: Message) -> None:
        ctx = m.context or ""
        if ctx in self.pending:
            return
        self.pending[ctx] = _ReadIndexStatus(req=m, index=index)
        self.queue.append(ctx)

    def recv_ack(self, peer: str, ctx: str) -> set[str] | None:
        rs = self.pending.get(ctx)
        if rs is None:
            return None
        rs.acks.add(peer)
        return rs.acks

    def advance(self, ctx: str) -> list[_ReadIndexStatus]:
        """Releases every request queued up to and including ctx: a quorum acked a heartbeat sent
        after all of them, so the leader was still the leader when each arrived."""
        if ctx not in self.pending:
            return []
        i = self.queue.index(ctx)
        done = self.queue[: i + 1]
        self.queue = self.queue[i + 1 :]
        return [self.pending.pop(c) for c in done]

    def last_pending_ctx(self) -> str | None:
        return self.queue[-1] if self.queue else None


class Raft:
    """One peer. Membership is static (the voter set given at start or carried by a snapshot)."""

    def __init__(self, id: str, peers: Sequence[str], storage: MemoryStorage, config: Config) -> None:
        config.validate()
        if not id:
            raise ConfigError("node id must be a non-empty string")
        self.id = id
        self.config = config
        self.raft_log = RaftLog(storage, config.applied)
        hs, snap_peers = storage.initial_state()
        voters = tuple(snap_peers) if snap_peers else tuple(peers)
        if len(set(voters)) != len(voters):
            raise ConfigError(f"duplicate peer ids in {voters}")
        if not voters:
            raise ConfigError("the peer list is empty")
        self.voters: tuple[str, ...] = tuple(sorted(voters))
        self.prs: dict[str, Progress] = {}
        # Own RNG: deterministic per (seed, id), never the global random.
        self._rng = random.Random(f"{config.seed}:{id}")
        self.term = 0
        self.vote: str | None = None
        self.lead: str | None = None
        self.state = FOLLOWER
        self.msgs: list[Message] = []
        self.read_states: list[ReadState] = []
        self.votes: dict[str, bool] = {}
        self.election_elapsed = 0
        self.heartbeat_elapsed = 0
        self.randomized_election_timeout = config.election_tick
        self.lead_transferee: str | None = None
        self.read_only = _ReadOnly()
        self.pending_read_index_messages: list[Message] = []
        self.uncommitted_size = 0
        # Ticks since this incarnation started: lease stamps and the boot vote lease use it.
        self.ticks = 0
        self._lease_forfeited = False
        self._bcast_pending = False
        self._read_bcast_pending = False
        if not hs.is_empty():
            self._load_state(hs)
        if config.applied > self.raft_log.committed:
            raise ConfigError(
                f"applied {config.applied} is past the committed index {self.raft_log.committed}"
            )
        self.become_follower(self.term, None)

    # ------------------------------------------------------------------ state

    def _load_state(self, hs: HardState) -> None:
        if hs.commit > self.raft_log.last_index():
            raise ConfigError(
                f"hard state commit {hs.commit} is past the last index {self.raft_log.last_index()}"
            )
        # A snapshot is committed state by construction: a crash after writing it but before the
        # hard state leaves a lower durable commit, which the snapshot supersedes.
        self.raft_log.committed = max(hs.commit, self.raft_log.committed)
        self.term = hs.term
        self.vote = hs.vote

    def soft_state(self) -> SoftState:
        return SoftState(leader=self.lead, role=self.state)

    def hard_state(self) -> HardState:
        return HardState(term=self.term, vote=self.vote, commit=self.raft_log.committed)

    def promotable(self) -> bool:
        return self.id in self.voters

    def status(self) -> dict[str, Any]:
        st: dict[str, Any] = {
            "id": self.id,
            "role": self.state,
            "term": self.term,
            "leader": self.lead,
            "vote": self.vote,
            "commit": self.raft_log.committed,
            "applied": self.raft_log.applied,
            "first_index": self.raft_log.first_index(),
            "last_index": self.raft_log.last_index(),
            "last_term": self.raft_log.last_term(),
            "lead_transferee": self.lead_transferee,
            "voters": list(self.voters),
        }
        if self.state == LEADER:
            st["progress"] = {p: pr.describe() for p, pr in self.prs.items()}
            st["lease_valid"] = self.lease_valid()
        return st

    def _reset(self, term: int) -> None:
        if self.term != term:
            self.term = term
            self.vote = None
        self.lead = None
        self.election_elapsed = 0
        self.heartbeat_elapsed = 0
        self._reset_randomized_election_timeout()
        self.lead_transferee = None
        self.votes = {}
        last = self.raft_log.last_index()
        self.prs = {}
        for v in self.voters:
            pr = Progress(match=0, next=last + 1, inflights=Inflights(self.config.max_inflight_msgs))
            if v == self.id:
                pr.match = last
            self.prs[v] = pr
        self.read_only = _ReadOnly()
        self.pending_read_index_messages = []
        self.uncommitted_size = 0
        self._lease_forfeited = False
        self._bcast_pending = False
        self._read_bcast_pending = False

    def _reset_randomized_election_timeout(self) -> None:
        et = self.config.election_tick
        self.randomized_election_timeout = et + self._rng.randrange(et)

    def become_follower(self, term: int, lead: str | None) -> None:
        self._reset(term)
        self.lead = lead
        self.state = FOLLOWER

    def become_pre_candidate(self) -> None:
        if self.state == LEADER:
            raise AssertionError("invalid transition leader -> pre-candidate")
        # PreVote changes neither term nor vote: a failed pre-election leaves no trace.
        self.votes = {}
        self.lead = None
        self.state = PRE_CANDIDATE

    def become_candidate(self) -> None:
        if self.state == LEADER:
            raise AssertionError("invalid transition leader -> candidate")
        self._reset(self.term + 1)
        self.vote = self.id
        self.state = CANDIDATE

    def become_leader(self) -> None:
        if self.state == FOLLOWER:
            raise AssertionError("invalid transition follower -> leader")
        self._reset(self.term)
        self.lead = self.id
        self.state = LEADER
        me = self.prs[self.id]
        me.become_replicate()
        me.recent_active = True
        # The empty entry of the new term (5.4.2 / 8): committing it commits everything before it and
        # tells the leader its commit index is current (needed before serving reads).
        self._append_entries([Entry(term=0, index=0, data=None)], count=False)

    # ------------------------------------------------------------------ ticks

    def tick(self) -> None:
        self.ticks += 1
        if self.state == LEADER:
            self._tick_heartbeat()
        else:
            self._tick_election()

    def _past_election_timeout(self) -> bool:
        return self.election_elapsed >= self.randomized_election_timeout

    def _tick_election(self) -> None:
        self.election_elapsed += 1
        if self.promotable() and self._past_election_timeout():
            self.election_elapsed = 0
            self.step(Message(type=MSG_HUP, src=self.id, dst=self.id))

    def _tick_heartbeat(self) -> None:
        self.heartbeat_elapsed += 1
        self.election_elapsed += 1
        if self.election_elapsed >= self.config.election_tick:
            self.election_elapsed = 0
            if self.config.check_quorum:
                self.step(Message(type=MSG_CHECK_QUORUM, src=self.id, dst=self.id))
            # A transfer that did not finish within an election timeout is abandoned.
            if self.state == LEADER and self.lead_transferee is not None:
                self.lead_transferee = None
            if self.state == LEADER:
                self._expire_snapshot_waits()
        if self.state != LEADER:
            return
        if self.heartbeat_elapsed >= self.config.heartbeat_tick:
            self.heartbeat_elapsed = 0
            self.step(Message(type=MSG_BEAT, src=self.id, dst=self.id))

    def _expire_snapshot_waits(self) -> None:
        """A MsgSnap whose outcome nobody reported (report_snapshot) within two election timeouts is
        presumed lost: probe again, so a peer is never parked in the snapshot state forever."""
        for p, pr in self.prs.items():
            if p == self.id or pr.state != SNAPSHOT:
                continue
            pr.snapshot_waits += 1
            if pr.snapshot_waits >= 2:
                pr.become_probe()

    # ------------------------------------------------------------------ sending

    def _send(self, m: Message) -> None:
        self.msgs.append(m)

    def _send_append(self, to: str) -> None:
        self._maybe_send_append(to, send_if_empty=True)

    def _maybe_send_append(self, to: str, send_if_empty: bool) -> bool:
        pr = self.prs[to]
        if pr.is_paused():
            return False
        try:
            prev_term = self.raft_log.term(pr.next - 1)
            ents = self.raft_log.entries(pr.next, self.config.max_batch_entries)
        except CompactedError:
            return self._send_snapshot(to, pr)
        if pr.next - 1 < self.raft_log.first_index() - 1:
            return self._send_snapshot(to, pr)
        if not ents and not send_if_empty:
            return False
        self._send(
            Message(
                type=MSG_APP,
                src=self.id,
                dst=to,
                term=self.term,
                index=pr.next - 1,
                log_term=prev_term,
                entries=tuple(ents),
                commit=self.raft_log.committed,
            )
        )
        if pr.state == REPLICATE:
            if ents:
                last = ents[-1].index
                pr.optimistic_update(last)
                pr.inflights.add(last)
        elif pr.state == PROBE:
            pr.probe_sent = True
        return True

    def flush(self) -> None:
        """Sends the appends that proposals and commit advances asked for since the last Ready.

        Deferring them to Ready time coalesces many proposals (and many acknowledgements that each
        advance the commit index) into one MsgApp per peer instead of one per event: the same
        messages, fewer of them. RawNode calls it before looking for a Ready.
        """
        if self._read_bcast_pending:
            self._read_bcast_pending = False
            ctx = self.read_only.last_pending_ctx()
            if self.state == LEADER and ctx is not None:
                self._bcast_heartbeat(ctx)
        if not self._bcast_pending:
            return
        self._bcast_pending = False
        if self.state != LEADER:
            return
        for p in self.voters:
            if p != self.id and self._maybe_send_append(p, send_if_empty=True):
                while self._maybe_send_append(p, send_if_empty=False):
                    pass

    def _send_snapshot(self, to: str, pr: Progress) -> bool:
        """The entries the peer needs were compacted: ship the snapshot instead (section 7)."""
        if not pr.recent_active:
            return False
        snap = self.raft_log.snapshot()
        if snap.is_empty():
            raise AssertionError("need a non-empty snapshot to catch up a peer behind the log")
        self._send(Message(type=MSG_SNAP, src=self.id, dst=to, term=self.term, snapshot=snap))
        pr.become_snapshot(snap.index)
        return True

    def _send_heartbeat(self, to: str, ctx: str | None) -> None:
        # Never tell a follower to commit past what it is known to hold (it may lack those entries).
        commit = min(self.prs[to].match, self.raft_log.committed)
        self._send(
            Message(
                type=MSG_HEARTBEAT,
                src=self.id,
                dst=to,
                term=self.term,
                commit=commit,
                context=ctx,
                index=self.ticks,  # lease stamp, echoed back by the response
            )
        )

    def _bcast_append(self) -> None:
        for p in self.voters:
            if p != self.id:
                self._send_append(p)

    def _bcast_heartbeat(self, ctx: str | None = None) -> None:
        if ctx is None:
            ctx = self.read_only.last_pending_ctx()
        for p in self.voters:
            if p != self.id:
                self._send_heartbeat(p, ctx)

    # ------------------------------------------------------------------ log

    def _append_entries(self, es: list[Entry], count: bool = True) -> None:
        li = self.raft_log.last_index()
        n_data = sum(1 for e in es if e.data is not None)
        limit = self.config.max_uncommitted_entries
        if count and limit and self.uncommitted_size > 0 and self.uncommitted_size + n_data > limit:
            raise ProposalDropped(f"too many uncommitted entries ({self.uncommitted_size})")
        if count:
            self.uncommitted_size += n_data
        ents = [Entry(term=self.term, index=li + 1 + i, data=e.data) for i, e in enumerate(es)]
        li = self.raft_log.append(ents)
        self.prs[self.id].maybe_update(li)
        self._maybe_commit()

    def reduce_uncommitted_size(self, n: int) -> None:
        self.uncommitted_size = max(0, self.uncommitted_size - n)

    def _maybe_commit(self) -> bool:
        mci = committed_index(self.voters, {p: pr.match for p, pr in self.prs.items()})
        return self.raft_log.maybe_commit(mci, self.term)

    def _committed_entry_in_current_term(self) -> bool:
        return self.raft_log.term_or_zero(self.raft_log.committed) == self.term

    # ------------------------------------------------------------------ elections

    def _hup(self, transfer: bool = False) -> None:
        if self.state == LEADER or not self.promotable():
            return
        if transfer:
            self._campaign(CAMPAIGN_ELECTION, transfer=True)
        elif self.config.pre_vote:
            self._campaign(CAMPAIGN_PRE_ELECTION)
        else:
            self._campaign(CAMPAIGN_ELECTION)

    def _campaign(self, kind: str, transfer: bool = False) -> None:
        if kind == CAMPAIGN_PRE_ELECTION:
            self.become_pre_candidate()
            vote_msg, term = MSG_PRE_VOTE, self.term + 1
        else:
            self.become_candidate()
            vote_msg, term = MSG_VOTE, self.term
        if self._poll(self.id, True) == VOTE_WON:
            # Single-voter cluster: we won at once.
            if kind == CAMPAIGN_PRE_ELECTION:
                self._campaign(CAMPAIGN_ELECTION)
            else:
                self.become_leader()
            return
        for p in self.voters:
            if p == self.id:
                continue
            self._send(
                Message(
                    type=vote_msg,
                    src=self.id,
                    dst=p,
                    term=term,
                    index=self.raft_log.last_index(),
                    log_term=self.raft_log.last_term(),
                    context=CAMPAIGN_TRANSFER if transfer else None,
                )
            )

    def _poll(self, peer: str, granted: bool) -> str:
        self.votes.setdefault(peer, granted)
        return vote_result(self.voters, self.votes)

    def _in_lease(self) -> bool:
        """A follower that heard from a live leader within the minimum election timeout refuses to
        disrupt it (4.2.3 of the Raft thesis; what CheckQuorum and lease reads rely on). In lease read
        mode a freshly (re)started node also waits one election timeout: it may have acknowledged a
        leader's lease just before it crashed."""
        if not self.config.check_quorum or self.election_elapsed >= self.config.election_tick:
            return False
        if self.lead is not None:
            return True
        return self.config.read_only == READ_ONLY_LEASE and self.ticks < self.config.election_tick

    # ------------------------------------------------------------------ step

    def step(self, m: Message) -> None:
        """Handles one message: term rules and votes here, the rest in the role's step function."""
        if m.term == 0:
            pass  # local message, or a forwarded proposal / read request
        elif m.term > self.term:
            if m.type in (MSG_VOTE, MSG_PRE_VOTE):
                force = m.context == CAMPAIGN_TRANSFER
                if not force and self._in_lease():
                    return
            if m.type == MSG_PRE_VOTE:
                pass  # never change term in response to a PreVote
            elif m.type == MSG_PRE_VOTE_RESP and not m.reject:
                pass  # the term is bumped when the pre-election is won
            elif m.type in (MSG_APP, MSG_HEARTBEAT, MSG_SNAP):
                self.become_follower(m.term, m.src)
            else:
                self.become_follower(m.term, None)
        elif m.term < self.term:
            if (self.config.check_quorum or self.config.pre_vote) and m.type in (MSG_HEARTBEAT, MSG_APP):
                # A stale leader (e.g. after a partition) learns our term from this and steps down;
                # without it a node with a higher term could never rejoin when PreVote is on.
                self._send(Message(type=MSG_APP_RESP, src=self.id, dst=m.src, term=self.term))
            elif m.type == MSG_PRE_VOTE:
                self._send(
                    Message(type=MSG_PRE_VOTE_RESP, src=self.id, dst=m.src, term=self.term, reject=True)
                )
            return

        if m.type == MSG_HUP:
            self._hup()
        elif m.type in (MSG_VOTE, MSG_PRE_VOTE):
            self._handle_vote_request(m)
        elif self.state == LEADER:
            self._step_leader(m)
        elif self.state in (CANDIDATE, PRE_CANDIDATE):
            self._step_candidate(m)
        else:
            self._step_follower(m)

    def _handle_vote_request(self, m: Message) -> None:
        """5.2 + 5.4.1: one vote per term, only for a log at least as up to date as ours."""
        can_vote = (
            self.vote == m.src
            or (self.vote is None and self.lead is None)
            or (m.type == MSG_PRE_VOTE and m.term > self.term)
        )
        resp = MSG_VOTE_RESP if m.type == MSG_VOTE else MSG_PRE_VOTE_RESP
        if can_vote and self.raft_log.is_up_to_date(m.index, m.log_term):
            # The response carries the candidate's term so a PreVote grant is counted by it.
            self._send(Message(type=resp, src=self.id, dst=m.src, term=m.term))
            if m.type == MSG_VOTE:
                self.election_elapsed = 0
                self.vote = m.src
        else:
            self._send(Message(type=resp, src=self.id, dst=m.src, term=self.term, reject=True))

    # ---- leader

    def _step_leader(self, m: Message) -> None:
        t = m.type
        if t == MSG_BEAT:
            self._bcast_heartbeat()
            return
        if t == MSG_CHECK_QUORUM:
            active = {p for p, pr in self.prs.items() if pr.recent_active or p == self.id}
            if not quorum_active(self.voters, active):
                self.become_follower(self.term, None)
            for p, pr in self.prs.items():
                if p != self.id:
                    pr.recent_active = False
            return
        if t == MSG_PROP:
            if not m.entries:
                raise AssertionError("proposal without entries")
            try:
                if self.lead_transferee is not None:
                    raise ProposalDropped(f"leader transfer to {self.lead_transferee} in progress")
                self._append_entries(list(m.entries))
            except ProposalDropped:
                if m.src == self.id:
                    raise
                return  # a forwarded proposal is dropped; its client times out and retries
            self._bcast_pending = True
            return
        if t == MSG_READ_INDEX:
            self._leader_read_index(m)
            return

        pr = self.prs.get(m.src)
        if pr is None:
            return
        if t == MSG_APP_RESP:
            self._handle_app_resp(m, pr)
        elif t == MSG_HEARTBEAT_RESP:
            self._handle_heartbeat_resp(m, pr)
        elif t == MSG_SNAP_STATUS:
            if pr.state != SNAPSHOT:
                return
            if m.reject:
                pr.pending_snapshot = 0
            pr.become_probe()
            # Wait for the peer's answer (or a heartbeat response) before probing again.
            pr.probe_sent = True
        elif t == MSG_UNREACHABLE:
            if pr.state == REPLICATE:
                pr.become_probe()
        elif t == MSG_TRANSFER_LEADER:
            self._handle_transfer_leader(m.src, pr)

    def _handle_app_resp(self, m: Message, pr: Progress) -> None:
        pr.recent_active = True
        if m.reject:
            next_probe = m.reject_hint
            if m.log_term > 0:
                next_probe, _ = self.raft_log.find_conflict_by_term(m.reject_hint, m.log_term)
            if pr.maybe_decr_to(m.index, next_probe):
                if pr.state == REPLICATE:
                    pr.become_probe()
                self._send_append(m.src)
            return
        old_paused = pr.is_paused()
        if not pr.maybe_update(m.index):
            return
        if pr.state == PROBE:
            pr.become_replicate()
        elif pr.state == SNAPSHOT and pr.match + 1 >= self.raft_log.first_index():
            pr.become_probe()
            pr.become_replicate()
        elif pr.state == REPLICATE:
            pr.inflights.free_le(m.index)
        if self._maybe_commit():
            self._release_pending_read_index_messages()
            self._bcast_pending = True
        elif old_paused:
            self._send_append(m.src)
        while self._maybe_send_append(m.src, send_if_empty=False):
            pass
        if m.src == self.lead_transferee and pr.match == self.raft_log.last_index():
            self._send(Message(type=MSG_TIMEOUT_NOW, src=self.id, dst=m.src, term=self.term))

    def _handle_heartbeat_resp(self, m: Message, pr: Progress) -> None:
        pr.recent_active = True
        pr.probe_sent = False
        if m.index > pr.lease_stamp and m.index <= self.ticks:
            pr.lease_stamp = m.index
        if pr.state == REPLICATE and pr.inflights.full():
            pr.inflights.free_first_one()
        if pr.match < self.raft_log.last_index():
            self._send_append(m.src)
        if not m.context:
            return
        acks = self.read_only.recv_ack(m.src, m.context)
        if acks is None or not quorum_active(self.voters, acks | {self.id}):
            return
        for rs in self.read_only.advance(m.context):
            self._respond_read(rs.req, rs.index)

    def _handle_transfer_leader(self, transferee: str, pr: Progress) -> None:
        if self.lead_transferee is not None:
            if self.lead_transferee == transferee:
                return
            self.lead_transferee = None
        if transferee == self.id:
            return
        # A leader that started a transfer must not serve lease reads for the rest of its term: the
        # transferee's election bypasses the followers' lease check.
        self._lease_forfeited = True
        self.election_elapsed = 0
        self.lead_transferee = transferee
        if pr.match == self.raft_log.last_index():
            self._send(Message(type=MSG_TIMEOUT_NOW, src=self.id, dst=transferee, term=self.term))
        else:
            self._send_append(transferee)

    # ---- reads

    def lease_valid(self) -> bool:
        """Whether the leader may answer reads from its own state without a heartbeat round: a quorum
        acknowledged a heartbeat sent less than (election_tick - lease_margin_ticks) ticks ago, so no
        other leader can have been elected since (followers refuse votes for election_tick ticks)."""
        if self.state != LEADER or self._lease_forfeited or not self.config.check_quorum:
            return False
        stamps = {p: pr.lease_stamp + 1 for p, pr in self.prs.items()}  # +1: committed_index treats 0 as none
        stamps[self.id] = self.ticks + 1
        q = committed_index(self.voters, stamps) - 1
        if q < 0:
            return False
        return self.ticks - q < self.config.election_tick - self.config.lease_margin_ticks

    def _leader_read_index(self, m: Message) -> None:
        if len(self.voters) == 1:
            self._respond_read(m, self.raft_log.committed)
            return
        if not self._committed_entry_in_current_term():
            # Our commit index may be behind the previous leader's until our first entry commits.
            self.pending_read_index_messages.append(m)
            return
        self._send_read_index(m)

    def _send_read_index(self, m: Message) -> None:
        if self.config.read_only == READ_ONLY_LEASE and self.lease_valid():
            self._respond_read(m, self.raft_log.committed)
            return
        ctx = m.context or ""
        self.read_only.add_request(self.raft_log.committed, m)
        self.read_only.recv_ack(self.id, ctx)
        # One heartbeat round per Ready, carrying the newest context: its quorum releases every read
        # queued before it (flush()).
        self._read_bcast_pending = True

    def _release_pending_read_index_messages(self) -> None:
        if not self.pending_read_index_messages or not self._committed_entry_in_current_term():
            return
        msgs, self.pending_read_index_messages = self.pending_read_index_messages, []
        for m in msgs:
            self._send_read_index(m)

    def _respond_read(self, req: Message, index: int) -> None:
        if req.src == self.id:
            self.read_states.append(ReadState(index=index, context=req.context or ""))
        else:
            self._send(
                Message(
                    type=MSG_READ_INDEX_RESP,
                    src=self.id,
                    dst=req.src,
                    term=self.term,
                    index=index,
                    context=req.context,
                )
            )

    # ---- candidate

    def _step_candidate(self, m: Message) -> None:
        my_resp = MSG_PRE_VOTE_RESP if self.state == PRE_CANDIDATE else MSG_VOTE_RESP
        t = m.type
        if t in (MSG_PROP, MSG_READ_INDEX):
            self._drop_local(m, "no leader (election in progress)")
        elif t == MSG_APP:
            self.become_follower(m.term, m.src)
            self._handle_append(m)
        elif t == MSG_HEARTBEAT:
            self.become_follower(m.term, m.src)
            self._handle_heartbeat(m)
        elif t == MSG_SNAP:
            self.become_follower(m.term, m.src)
            self._handle_snapshot(m)
        elif t == my_resp:
            res = self._poll(m.src, not m.reject)
            if res == VOTE_WON:
                if self.state == PRE_CANDIDATE:
                    self._campaign(CAMPAIGN_ELECTION)
                else:
                    self.become_leader()
                    self._bcast_append()
            elif res == VOTE_LOST:
                # A PreVoteResp rejection carries our own (or a lower) term here.
                self.become_follower(self.term, None)

    # ---- follower

    def _step_follower(self, m: Message) -> None:
        t = m.type
        if t == MSG_PROP:
            if self.lead is None:
                self._drop_local(m, "no leader")
                return
            # Forwarded with the original sender, so a drop further on is silent for a remote one.
            self._send(Message(type=MSG_PROP, src=m.src, dst=self.lead, entries=m.entries))
        elif t == MSG_APP:
            self.election_elapsed = 0
            self.lead = m.src
            self._handle_append(m)
        elif t == MSG_HEARTBEAT:
            self.election_elapsed = 0
            self.lead = m.src
            self._handle_heartbeat(m)
        elif t == MSG_SNAP:
            self.election_elapsed = 0
            self.lead = m.src
            self._handle_snapshot(m)
        elif t == MSG_TRANSFER_LEADER:
            if self.lead is not None:
                self._send(Message(type=MSG_TRANSFER_LEADER, src=m.src, dst=self.lead))
        elif t == MSG_TIMEOUT_NOW:
            # Leadership transfer never uses PreVote: the leader asked for it.
            self._hup(transfer=True)
        elif t == MSG_READ_INDEX:
            if self.lead is None:
                self._drop_local(m, "no leader")
                return
            if m.src != self.id:
                # A peer took us for the leader (a message sent before our term ended). Relaying it
                # would put a third node's name on our stream to the leader; the peer's read round
                # times out and asks its own leader again.
                return
            self._send(Message(type=MSG_READ_INDEX, src=m.src, dst=self.lead, context=m.context))
        elif t == MSG_READ_INDEX_RESP:
            self.read_states.append(ReadState(index=m.index, context=m.context or ""))

    def _drop_local(self, m: Message, why: str) -> None:
        """A request from our own RawNode is refused loudly; one forwarded by a peer just dropped."""
        if m.src == self.id:
            raise ProposalDropped(why)

    def _handle_append(self, m: Message) -> None:
        """5.3: accept only if our log holds (m.index, m.log_term); else hint where to back off to."""
        committed = self.raft_log.committed
        if m.index < committed:
            self._send(Message(type=MSG_APP_RESP, src=self.id, dst=m.src, term=self.term, index=committed))
            return
        last_new = self.raft_log.maybe_append(m.index, m.log_term, m.commit, m.entries)
        if last_new is not None:
            self._send(Message(type=MSG_APP_RESP, src=self.id, dst=m.src, term=self.term, index=last_new))
            return
        hint_index = min(m.index, self.raft_log.last_index())
        hint_index, hint_term = self.raft_log.find_conflict_by_term(hint_index, m.log_term)
        self._send(
            Message(
                type=MSG_APP_RESP,
                src=self.id,
                dst=m.src,
                term=self.term,
                index=m.index,
                reject=True,
                reject_hint=hint_index,
                log_term=hint_term,
            )
        )

    def _handle_heartbeat(self, m: Message) -> None:
        if m.commit > self.raft_log.last_index():
            # A leader only sends min(commit, our match): a larger one is a faulty peer.
            raise InvalidMessageError(
                f"heartbeat from {m.src} commits {m.commit} past our last index {self.raft_log.last_index()}"
            )
        self.raft_log.commit_to(m.commit)
        self._send(
            Message(
                type=MSG_HEARTBEAT_RESP,
                src=self.id,
                dst=m.src,
                term=self.term,
                context=m.context,
                index=m.index,
            )
        )

    def _handle_snapshot(self, m: Message) -> None:
        snap = m.snapshot
        if snap is None:
            return
        idx = self.raft_log.last_index() if self._restore(snap) else self.raft_log.committed
        self._send(Message(type=MSG_APP_RESP, src=self.id, dst=m.src, term=self.term, index=idx))

    def _restore(self, snap: Snapshot) -> bool:
        """Installs a snapshot unless our log already covers it (section 7)."""
        if snap.index <= self.raft_log.committed:
            return False
        if self.state != FOLLOWER:
            raise AssertionError("snapshot restore outside the follower role")
        if snap.peers and tuple(sorted(snap.peers)) != self.voters:
            # Membership is static here: a snapshot from a different cluster is refused.
            return False
        if self.raft_log.match_term(snap.index, snap.term):
            # Our log already has the snapshot's last entry: just move commit forward.
            self.raft_log.commit_to(snap.index)
            return False
        self.raft_log.restore(snap)
        return True
