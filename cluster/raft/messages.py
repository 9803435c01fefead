"""Plain records exchanged between the Raft core and its edges (etcd-io/raft's raftpb, in Python).

Every record is immutable and made only of str/int/bool/None/tuples/dicts, so the transport can ship
it as JSON and the simulation tests can copy, duplicate and reorder it freely without aliasing
surprises. The records made for every message (Message, Entry, HardState, Ready and the states in
it) are NamedTuples rather than frozen dataclasses: a frozen dataclass sets each field through
object.__setattr__, which made building them a tenth of a simulated node's time, and a tuple is
also its own JSON array, which is the peer wire format (`to_wire` / `from_wire`). `to_dict` /
`from_dict` are the readable form (the WAL's hard state, logs, tests). Snapshot, made rarely and
holding a mutable default, stays a dataclass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# Message types. Strings (not an enum) so that a message is readable on the wire and in logs.
MSG_HUP = "MsgHup"  # local: start an election (PreVote first when enabled)
MSG_BEAT = "MsgBeat"  # local: leader sends heartbeats
MSG_PROP = "MsgProp"  # proposal; a follower forwards it to the leader
MSG_APP = "MsgApp"  # AppendEntries
MSG_APP_RESP = "MsgAppResp"
MSG_VOTE = "MsgVote"  # RequestVote
MSG_VOTE_RESP = "MsgVoteResp"
MSG_PRE_VOTE = "MsgPreVote"
MSG_PRE_VOTE_RESP = "MsgPreVoteResp"
MSG_SNAP = "MsgSnap"  # InstallSnapshot (the whole snapshot in one message)
MSG_HEARTBEAT = "MsgHeartbeat"
MSG_HEARTBEAT_RESP = "MsgHeartbeatResp"
MSG_READ_INDEX = "MsgReadIndex"  # a follower asks the leader for a read index
MSG_READ_INDEX_RESP = "MsgReadIndexResp"
MSG_CHECK_QUORUM = "MsgCheckQuorum"  # local: leader checks it heard from a quorum
MSG_UNREACHABLE = "MsgUnreachable"  # local: the transport could not deliver to a peer
MSG_SNAP_STATUS = "MsgSnapStatus"  # local: the transport reports the outcome of a MsgSnap
MSG_TRANSFER_LEADER = "MsgTransferLeader"
MSG_TIMEOUT_NOW = "MsgTimeoutNow"  # leader transfer: the target campaigns at once

MESSAGE_TYPES: frozenset[str] = frozenset(
    {
        MSG_HUP, MSG_BEAT, MSG_PROP, MSG_APP, MSG_APP_RESP, MSG_VOTE, MSG_VOTE_RESP, MSG_PRE_VOTE,
        MSG_PRE_VOTE_RESP, MSG_SNAP, MSG_HEARTBEAT, MSG_HEARTBEAT_RESP, MSG_READ_INDEX,
        MSG_READ_INDEX_RESP, MSG_CHECK_QUORUM, MSG_UNREACHABLE, MSG_SNAP_STATUS, MSG_TRANSFER_LEADER,
        MSG_TIMEOUT_NOW,
    }
)

# Types that never leave the node: the edges must not accept them from the network.
LOCAL_MESSAGE_TYPES: frozenset[str] = frozenset(
    {MSG_HUP, MSG_BEAT, MSG_CHECK_QUORUM, MSG_UNREACHABLE, MSG_SNAP_STATUS}
)

# Roles (SoftState.role, status()["role"]).
FOLLOWER = "follower"
CANDIDATE = "candidate"
PRE_CANDIDATE = "pre-candidate"
LEADER = "leader"

# Campaign context marker carried on MsgVote by a leader transfer (lets it bypass the lease check).
CAMPAIGN_TRANSFER = "CampaignTransfer"


class MessageDecodeError(ValueError):
    """A peer sent something that is not a valid Raft message (the transport drops it and logs)."""


def _int(d: dict[str, Any], key: str, default: int = 0) -> int:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise MessageDecodeError(f"field {key!r} must be a non-negative integer, got {v!r}")
    return v


def _opt_str(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    if v is not None and not isinstance(v, str):
        raise MessageDecodeError(f"field {key!r} must be a string or null, got {v!r}")
    return v


def _uint(v: Any, key: str) -> int:
    """`v` if it is a non-negative integer (not a bool), else MessageDecodeError naming `key`."""
    if v.__class__ is not int or v < 0:
        raise MessageDecodeError(f"field {key!r} must be a non-negative integer, got {v!r}")
    return v  # type: ignore[no-any-return]


class Entry(NamedTuple):
    """One log entry. data None is the empty entry a new leader appends to commit its term.
    On the wire (and in the WAL) it is the JSON array [term, index, data]."""

    term: int
    index: int
    data: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"term": self.term, "index": self.index, "data": self.data}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Entry:
        if not isinstance(d, dict):
            raise MessageDecodeError(f"entry must be an object, got {type(d).__name__}")
        data = d.get("data")
        if data is not None and not isinstance(data, dict):
            raise MessageDecodeError("entry data must be an object or null")
        return Entry(term=_int(d, "term"), index=_int(d, "index"), data=data)

    @staticmethod
    def from_wire(w: Any) -> Entry:
        """Decodes and validates [term, index, data]; MessageDecodeError on anything malformed."""
        if w.__class__ is not list or len(w) != 3:
            raise MessageDecodeError(f"entry must be a [term, index, data] array, got {str(w)[:80]}")
        term, index, data = w
        if data is not None and data.__class__ is not dict:
            raise MessageDecodeError("entry data must be an object or null")
        return Entry(_uint(term, "term"), _uint(index, "index"), data)


class HardState(NamedTuple):
    """What must be durable before any message of the same Ready is sent: term, vote, commit."""

    term: int = 0
    vote: str | None = None
    commit: int = 0

    def is_empty(self) -> bool:
        return self.term == 0 and self.vote is None and self.commit == 0

    def to_dict(self) -> dict[str, Any]:
        return {"term": self.term, "vote": self.vote, "commit": self.commit}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> HardState:
        if not isinstance(d, dict):
            raise MessageDecodeError("hard state must be an object")
        return HardState(term=_int(d, "term"), vote=_opt_str(d, "vote"), commit=_int(d, "commit"))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A state-machine image covering the log up to and including (index, term).

    peers is the membership at that point; data is the application's state (opaque to Raft).
    index 0 means "no snapshot".
    """

    index: int = 0
    term: int = 0
    peers: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return self.index == 0

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "term": self.term, "peers": list(self.peers), "data": self.data}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Snapshot:
        if not isinstance(d, dict):
            raise MessageDecodeError("snapshot must be an object")
        peers = d.get("peers", [])
        if not isinstance(peers, list | tuple) or not all(isinstance(p, str) for p in peers):
            raise MessageDecodeError("snapshot peers must be a list of strings")
        data = d.get("data", {})
        if not isinstance(data, dict):
            raise MessageDecodeError("snapshot data must be an object")
        return Snapshot(index=_int(d, "index"), term=_int(d, "term"), peers=tuple(peers), data=data)


EMPTY_SNAPSHOT = Snapshot()


class Message(NamedTuple):
    """One Raft message. Field meaning follows etcd-io/raft's raftpb.Message.

    - MsgApp: (log_term, index) is the entry preceding `entries`; commit is the leader's commit.
    - MsgAppResp: index is the last index now matching (or, rejecting, the index probed);
      reject_hint is the follower's last index hint and log_term the term at it.
    - MsgVote/MsgPreVote: (log_term, index) is the candidate's last entry; context carries
      CAMPAIGN_TRANSFER for a leader transfer.
    - MsgHeartbeat: commit is min(leader commit, peer's match); context names the newest pending
      ReadIndex round; index is the leader's lease stamp (its tick count at sending).
    - MsgHeartbeatResp: echoes the heartbeat's context and index (the lease stamp acknowledged).
    - MsgProp / MsgReadIndex / MsgTransferLeader travel with term 0 when forwarded, src naming the
      node that asked first (the leader answers it directly).
    - MsgReadIndex/MsgReadIndexResp: context is the caller's request id, index the read index.
    - MsgSnap: snapshot is set.

    On the wire a message is the JSON array of its fields in order (entries as [term, index, data]
    arrays, the snapshot as its dict): `to_wire` / `from_wire`.
    """

    type: str
    src: str
    dst: str
    term: int = 0
    log_term: int = 0
    index: int = 0
    entries: tuple[Entry, ...] = ()
    commit: int = 0
    reject: bool = False
    reject_hint: int = 0
    context: str | None = None
    snapshot: Snapshot | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type, "src": self.src, "dst": self.dst, "term": self.term}
        if self.log_term:
            d["log_term"] = self.log_term
        if self.index:
            d["index"] = self.index
        if self.entries:
            d["entries"] = [e.to_dict() for e in self.entries]
        if self.commit:
            d["commit"] = self.commit
        if self.reject:
            d["reject"] = True
        if self.reject_hint:
            d["reject_hint"] = self.reject_hint
        if self.context is not None:
            d["context"] = self.context
        if self.snapshot is not None:
            d["snapshot"] = self.snapshot.to_dict()
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Message:
        """Decodes and validates a wire message; raises MessageDecodeError on anything malformed."""
        if not isinstance(d, dict):
            raise MessageDecodeError(f"message must be an object, got {type(d).__name__}")
        mtype = d.get("type")
        if mtype not in MESSAGE_TYPES:
            raise MessageDecodeError(f"unknown message type {mtype!r}")
        src, dst = d.get("src"), d.get("dst")
        if not isinstance(src, str) or not isinstance(dst, str):
            raise MessageDecodeError("message src and dst must be strings")
        entries = d.get("entries", [])
        if not isinstance(entries, list | tuple):
            raise MessageDecodeError("message entries must be a list")
        reject = d.get("reject", False)
        if not isinstance(reject, bool):
            raise MessageDecodeError("message reject must be a boolean")
        snap = d.get("snapshot")
        return Message(
            type=mtype,
            src=src,
            dst=dst,
            term=_int(d, "term"),
            log_term=_int(d, "log_term"),
            index=_int(d, "index"),
            entries=tuple(Entry.from_dict(e) for e in entries),
            commit=_int(d, "commit"),
            reject=reject,
            reject_hint=_int(d, "reject_hint"),
            context=_opt_str(d, "context"),
            snapshot=None if snap is None else Snapshot.from_dict(snap),
        )

    def to_wire(self) -> Sequence[Any]:
        """What the transport JSON-encodes: the message itself (a tuple encodes as an array),
        unless it carries a snapshot, which goes as its dict."""
        if self.snapshot is None:
            return self
        return [*self[:-1], self.snapshot.to_dict()]

    @staticmethod
    def from_wire(w: Any) -> Message:
        """Decodes and validates a wire message (the array of to_wire); raises MessageDecodeError on
        anything malformed."""
        if w.__class__ is not list or len(w) != _MESSAGE_FIELDS:
            raise MessageDecodeError(f"message must be an array of {_MESSAGE_FIELDS} fields, "
                                     f"got {str(w)[:80]}")
        mtype, src, dst, term, log_term, index, entries, commit, reject, reject_hint, context, snap = w
        if mtype.__class__ is not str or mtype not in MESSAGE_TYPES:
            raise MessageDecodeError(f"unknown message type {mtype!r}")
        if src.__class__ is not str or dst.__class__ is not str:
            raise MessageDecodeError("message src and dst must be strings")
        if entries.__class__ is not list:
            raise MessageDecodeError("message entries must be a list")
        if reject.__class__ is not bool:
            raise MessageDecodeError("message reject must be a boolean")
        if context is not None and context.__class__ is not str:
            raise MessageDecodeError(f"field 'context' must be a string or null, got {context!r}")
        # one test for the usual message's numbers; _uint names the first bad field, in field order
        if (term.__class__ is not int or log_term.__class__ is not int or index.__class__ is not int
                or term < 0 or log_term < 0 or index < 0):
            _uint(term, "term"), _uint(log_term, "log_term"), _uint(index, "index")
        ents = tuple([Entry.from_wire(e) for e in entries]) if entries else ()
        if commit.__class__ is not int or reject_hint.__class__ is not int or commit < 0 or reject_hint < 0:
            _uint(commit, "commit"), _uint(reject_hint, "reject_hint")
        return Message(
            mtype, src, dst, term, log_term, index, ents, commit, reject, reject_hint, context,
            None if snap is None else Snapshot.from_dict(snap),
        )


_MESSAGE_FIELDS = len(Message._fields)


class ReadState(NamedTuple):
    """A read may be served once the applied index reaches `index` (ReadIndex or lease)."""

    index: int
    context: str


class SoftState(NamedTuple):
    """Volatile state worth logging when it changes (the node logs a line per role/term change)."""

    leader: str | None
    role: str


class Ready(NamedTuple):
    """Everything the edges must do, in this order (etcd-io/raft's Ready contract):

    1. persist `snapshot` (if not None), then `entries` (replacing any stored suffix from the first
       entry's index on), then `hard_state` (if not None), and fsync;
    2. only then send `messages` (votes and appends acknowledge what step 1 made durable);
    3. apply `snapshot` then `committed_entries` to the state machine, serve `read_states` once
       applied reaches their index;
    4. call RawNode.advance(ready).
    soft_state is None when unchanged.
    """

    soft_state: SoftState | None = None
    hard_state: HardState | None = None
    entries: tuple[Entry, ...] = ()
    snapshot: Snapshot | None = None
    messages: tuple[Message, ...] = ()
    committed_entries: tuple[Entry, ...] = ()
    read_states: tuple[ReadState, ...] = ()
    must_sync: bool = False

    def contains_updates(self) -> bool:
        return bool(
            self.soft_state is not None
            or self.hard_state is not None
            or self.entries
            or self.snapshot is not None
            or self.messages
            or self.committed_entries
            or self.read_states
        )
