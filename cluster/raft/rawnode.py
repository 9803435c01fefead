"""RawNode: the edges' handle on the core (etcd-io/raft's RawNode and its Ready/Advance loop).

The node's event loop does, single-threaded:

    node.tick()                    # every tick interval of the edges' clock
    node.step(msg)                 # every message from the network (decoded, validated)
    node.propose(data) / node.read_index(ctx)
    while node.has_ready():
        rd = node.ready()
        persist rd.snapshot, rd.entries, rd.hard_state (fsync), then mirror them into the
          MemoryStorage (apply_snapshot / append / set_hard_state)
        send rd.messages
        apply rd.snapshot and rd.committed_entries; answer rd.read_states once applied >= index
        node.advance(rd)

Nothing here touches a socket, a clock, a disk or a thread: the same RawNode runs in-process under
the simulated network of the tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .config import Config
from .errors import InvalidMessageError, StepLocalMessageError
from .messages import (
    LOCAL_MESSAGE_TYPES,
    MSG_APP,
    MSG_HUP,
    MSG_PROP,
    MSG_READ_INDEX,
    MSG_SNAP_STATUS,
    MSG_TRANSFER_LEADER,
    MSG_UNREACHABLE,
    Entry,
    HardState,
    Message,
    Ready,
    Snapshot,
    SoftState,
)
from .raft import Raft
from .storage import MemoryStorage


class RawNode:
    """One Raft peer, stepped by the caller. Not thread-safe: drive it from one loop."""

    # The step function's class; a subclass may swap it (the tests inject deliberately broken rules).
    raft_class: type[Raft] = Raft

    def __init__(self, id: str, peers: Sequence[str], storage: MemoryStorage, config: Config) -> None:
        """peers: every voter's id, including this one (ignored if storage holds a snapshot's)."""
        self.raft = self.raft_class(id, peers, storage, config)
        self._prev_soft = self.raft.soft_state()
        self._prev_hard = self.raft.hard_state()
        self._outstanding = False

    # ---- inputs ----

    def tick(self) -> None:
        """Advances the logical clock by one tick (elections, heartbeats, CheckQuorum, leases)."""
        self.raft.tick()

    def campaign(self) -> None:
        """Starts an election now (PreVote first when enabled)."""
        self.raft.step(Message(type=MSG_HUP, src=self.raft.id, dst=self.raft.id))

    def propose(self, data: dict[str, Any]) -> None:
        """Proposes a command. A follower forwards it to the leader.

        Raises ProposalDropped if there is no known leader, a leader transfer is in flight, or the
        uncommitted-entries limit is reached. Success means only "handed on": the caller learns the
        outcome when the entry shows up in committed_entries (match it by a request id in data).
        """
        if not isinstance(data, dict):
            raise TypeError(f"a proposal is a JSON object (dict), got {type(data).__name__}")
        self.raft.step(
            Message(type=MSG_PROP, src=self.raft.id, dst=self.raft.id, entries=(Entry(0, 0, data),))
        )

    def step(self, msg: Message) -> None:
        """Feeds one message received from a peer. Node-local types are refused."""
        if msg.type in LOCAL_MESSAGE_TYPES:
            raise StepLocalMessageError(f"{msg.type} cannot arrive from the network")
        if msg.dst != self.raft.id:
            return
        if msg.term == 0 and msg.type not in _TERMLESS:
            return  # only forwarded proposals, read and transfer requests travel without a term
        if msg.src not in self.raft.voters and msg.type not in _RESPONSE_FREE_FROM_UNKNOWN:
            # A message from a node outside the membership (e.g. a stale config) is ignored.
            return
        if msg.type == MSG_APP:
            _validate_append(msg)
        self.raft.step(msg)

    def read_index(self, context: str) -> None:
        """Requests a linearizable read. The answer is a ReadState(index, context) in a later Ready:
        serve the read once the state machine has applied that index. With no leader, or a leader
        that has not committed an entry in its term, the request is dropped (the caller retries or
        times out). Mode: Config.read_only ("safe" = ReadIndex, "lease" = lease read).
        """
        self.raft.step(
            Message(
                type=MSG_READ_INDEX,
                src=self.raft.id,
                dst=self.raft.id,
                context=context,
            )
        )

    def transfer_leader(self, target: str) -> None:
        """Asks the leader to hand leadership to `target` (it catches it up, then sends MsgTimeoutNow)."""
        self.raft.step(Message(type=MSG_TRANSFER_LEADER, src=target, dst=self.raft.id))

    def report_unreachable(self, peer: str) -> None:
        """The transport failed to deliver to `peer`: the leader falls back to probing it."""
        self.raft.step(Message(type=MSG_UNREACHABLE, src=peer, dst=self.raft.id))

    def report_snapshot(self, peer: str, failed: bool) -> None:
        """The transport finished sending a MsgSnap to `peer` (failed: it did not arrive)."""
        self.raft.step(Message(type=MSG_SNAP_STATUS, src=peer, dst=self.raft.id, reject=failed))

    def compact(self, index: int, data: dict[str, Any], keep_entries: int = 0) -> Snapshot:
        """Records a snapshot of the state machine at `index` (<= applied) in storage and discards
        log entries up to index - keep_entries (kept ones let a slightly lagging follower catch up
        from the log rather than by snapshot). The edges write the returned Snapshot to disk before
        truncating their WAL."""
        log = self.raft.raft_log
        if index > log.applied:
            raise ValueError(f"cannot snapshot at {index}: only {log.applied} is applied")
        storage = log.storage
        snap = storage.create_snapshot(index, self.raft.voters, data)
        upto = index - max(0, keep_entries)
        if upto >= storage.first_index():
            storage.compact(upto)
        return snap

    # ---- outputs ----

    def has_ready(self) -> bool:
        """Whether ready() would have anything. Asked after every input, so it compares the fields
        in place rather than building the soft and hard states it compares."""
        r = self.raft
        r.flush()
        log = r.raft_log
        soft, hard = self._prev_soft, self._prev_hard
        term, vote, commit = r.term, r.vote, log.committed
        return bool(
            r.lead != soft.leader
            or r.state != soft.role
            or ((term or vote is not None or commit)
                and (term != hard.term or vote != hard.vote or commit != hard.commit))
            or log.unstable.snapshot is not None
            or log.unstable.entries
            or r.msgs
            or log.has_next_committed_entries()
            or r.read_states
        )

    def ready(self) -> Ready:
        """Collects what to persist, send and apply. Call advance(ready) when it is done."""
        if self._outstanding:
            raise RuntimeError("ready() called again before advance() of the previous Ready")
        r = self.raft
        r.flush()
        prev = self._prev_soft
        # the record is built only when the role or leader moved (ready() runs after every input)
        soft = None if (r.lead == prev.leader and r.state == prev.role) else r.soft_state()
        log = r.raft_log
        term, vote, commit = r.term, r.vote, log.committed
        prev_hard = self._prev_hard
        # the record is built only when the hard state moved (it does not in most Readies)
        vote_moved = term != prev_hard.term or vote != prev_hard.vote
        hard = (HardState(term, vote, commit) if (vote_moved or commit != prev_hard.commit)
                and (term or vote is not None or commit) else None)
        snap = log.unstable.snapshot
        entries = tuple(log.unstable.entries)
        rd = Ready(
            soft_state=soft,
            hard_state=hard,
            entries=entries,
            snapshot=snap,
            messages=tuple(r.msgs),
            committed_entries=tuple(log.next_committed_entries()) if log.committed > log.applied else (),
            read_states=tuple(r.read_states),
            must_sync=vote_moved or bool(entries) or snap is not None,
        )
        r.msgs = []
        r.read_states = []
        self._outstanding = True
        if rd.soft_state is not None:
            self._prev_soft = rd.soft_state
        return rd

    def advance(self, rd: Ready) -> None:
        """Tells the core that everything in `rd` was persisted, sent and applied."""
        r = self.raft
        self._outstanding = False
        if rd.hard_state is not None:
            self._prev_hard = rd.hard_state
        if rd.snapshot is not None:
            r.raft_log.stable_snap_to(rd.snapshot.index)
        if rd.entries:
            last = rd.entries[-1]
            r.raft_log.stable_to(last.index, last.term)
        if rd.snapshot is not None and rd.snapshot.index > r.raft_log.applied:
            r.raft_log.applied_to(rd.snapshot.index)
        if rd.committed_entries:
            r.raft_log.applied_to(rd.committed_entries[-1].index)
            r.reduce_uncommitted_size(sum(1 for e in rd.committed_entries if e.data is not None))

    # ---- introspection ----

    def status(self) -> dict[str, Any]:
        """id, role, term, leader, vote, commit, applied, last_index (+ progress when leader)."""
        return self.raft.status()

    @property
    def id(self) -> str:
        return self.raft.id

    def hard_state(self) -> HardState:
        return self.raft.hard_state()

    def soft_state(self) -> SoftState:
        return self.raft.soft_state()

    def role(self) -> str:
        """soft_state().role without building the record (the node asks on every input)."""
        return self.raft.state

    def leader(self) -> str | None:
        """soft_state().leader without building the record (asked after every Ready)."""
        return self.raft.lead

    def term(self) -> int:
        """hard_state().term without building the record (the edges ask after every Ready)."""
        return self.raft.term


def _validate_append(msg: Message) -> None:
    """Entries must follow (index, log_term) contiguously with non-decreasing terms <= msg.term."""
    prev_index, prev_term = msg.index, msg.log_term
    if prev_term > msg.term:
        raise InvalidMessageError(f"MsgApp from {msg.src}: log_term {prev_term} > term {msg.term}")
    for e in msg.entries:
        if e.index != prev_index + 1 or e.term < prev_term or e.term > msg.term:
            raise InvalidMessageError(
                f"MsgApp from {msg.src}: entry ({e.index}, term {e.term}) does not follow "
                f"({prev_index}, term {prev_term}) in term {msg.term}"
            )
        prev_index, prev_term = e.index, e.term


# Requests that peers forward without a term (etcd-io/raft's convention for MsgProp/MsgReadIndex).
_TERMLESS: frozenset[str] = frozenset({MSG_PROP, MSG_READ_INDEX, MSG_TRANSFER_LEADER})

# Responses a node may legitimately get from a peer it does not list (none today: membership is static,
# so anything from outside it is dropped). Kept as the one place to widen when membership changes land.
_RESPONSE_FREE_FROM_UNKNOWN: frozenset[str] = frozenset()
