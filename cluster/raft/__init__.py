"""The Raft consensus core: a pure, deterministic state machine (etcd-io/raft's design).

No socket, clock, disk, thread or global random in here: the edges (cluster/node, WAL, transport)
feed it ticks and messages through RawNode and carry out each Ready. Standard library only.
"""

from .config import READ_ONLY_LEASE, READ_ONLY_SAFE, Config
from .errors import (
    CompactedError,
    ConfigError,
    InvalidMessageError,
    ProposalDropped,
    RaftError,
    SnapOutOfDateError,
    StepLocalMessageError,
    UnavailableError,
)
from .messages import (
    CANDIDATE,
    FOLLOWER,
    LEADER,
    PRE_CANDIDATE,
    Entry,
    HardState,
    Message,
    MessageDecodeError,
    ReadState,
    Ready,
    Snapshot,
    SoftState,
)
from .rawnode import RawNode
from .storage import MemoryStorage

__all__ = [
    "CANDIDATE",
    "FOLLOWER",
    "LEADER",
    "PRE_CANDIDATE",
    "READ_ONLY_LEASE",
    "READ_ONLY_SAFE",
    "CompactedError",
    "Config",
    "ConfigError",
    "Entry",
    "HardState",
    "InvalidMessageError",
    "MemoryStorage",
    "Message",
    "MessageDecodeError",
    "ProposalDropped",
    "RaftError",
    "RawNode",
    "ReadState",
    "Ready",
    "SnapOutOfDateError",
    "Snapshot",
    "SoftState",
    "StepLocalMessageError",
    "UnavailableError",
]
