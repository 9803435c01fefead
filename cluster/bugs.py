"""The seed bugs: each reproduces one published post-mortem, and all are off by default.

A bug is named on the node's command line (`--bug NAME`, repeatable), parsed once into `Bugs`, a
frozen record of booleans carried in NodeConfig and handed explicitly to whatever decides. Each bug is
checked at exactly one place: where the correct code makes the decision the bug gets wrong
(`Bug.decided_in`). The controller checks names against `BUGS` before it provisions anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Bug:
    """One seed bug: its flag, the post-mortem it reproduces, what goes wrong, where it is decided."""

    name: str
    post_mortem: str
    description: str
    decided_in: str

    @property
    def field(self) -> str:
        """The Bugs attribute that switches it on."""
        return self.name.replace("-", "_")


BUGS: tuple[Bug, ...] = (
    Bug("split-brain-metadata",
        "Chronik's metadata split-brain analysis (two unsynchronised metadata stores)",
        "topics and offsets go to a node-local store, no Raft; reads come from it",
        "server.py ClientServer.dispatch"),
    Bug("volatile-offsets",
        "the same split-brain analysis, its finding that offset commits bypass the log",
        "offset commits are never written to the WAL, only kept in memory",
        "node.py Node._persist"),
    Bug("leader-on-follower",
        "Chronik's partition-leadership analysis (Raft leader and partition leader differ)",
        "partition leaders are assigned round-robin; a follower leading a partition cannot propose "
        "and nothing forwards its writes",
        "server.py ClientServer._write"),
    Bug("drop-unconnected",
        "Chronik's metadata-replication fix, its first bug (the sender dropped failed messages)",
        "a message to an unconnected peer is dropped and counted as delivered, never resent",
        "transport.py PeerSender._lost"),
    Bug("recovery-duplicates",
        "the same metadata-replication fix, its second bug (recovery kept duplicate entries)",
        "WAL recovery keeps every version of an index",
        "wal.py replay_entries"),
    Bug("unordered-send",
        "Chronik's Raft message-ordering analysis (each message sent from its own spawned task)",
        "every outgoing message goes on its own delayed task: messages to a peer are reordered",
        "transport.py Transport.send"),
    Bug("zombie-leader",
        "Kafka's KAFKA-15489 (split brain in KRaft: no CheckQuorum)",
        "no CheckQuorum, and the leader serves reads from its local state",
        "node.py leader_rules"),
    Bug("lease-no-drift-bound",
        "no seed post-mortem: the clock hazard every lease read carries (it assumes bounded drift)",
        "lease reads trust the local tick count: no drift margin, no catching up after a pause or a "
        "clock jump",
        "node.py leader_rules"),
    Bug("txn-split-apply",
        "no seed post-mortem: the failure Elle's cycles name when a multi-key write is not one log "
        "entry (Kafka's transactional offset commit is atomic because it is one)",
        "a transaction's micro-ops are proposed and applied as separate entries, one after another, "
        "so other transactions interleave with it: its reads and writes are not one point in time "
        "(G-single, G2-item, G1c)",
        "server.py ClientServer._write"),
)
BY_NAME: dict[str, Bug] = {b.name: b for b in BUGS}
NAMES: tuple[str, ...] = tuple(BY_NAME)


class UnknownBug(ValueError):
    """A bug name this build does not know; the message names it and the known ones."""


@dataclass(frozen=True)
class Bugs:
    """Which seed bugs are on. Built once by `parse`; immutable for the life of the node."""

    split_brain_metadata: bool = False
    volatile_offsets: bool = False
    leader_on_follower: bool = False
    drop_unconnected: bool = False
    recovery_duplicates: bool = False
    unordered_send: bool = False
    zombie_leader: bool = False
    lease_no_drift_bound: bool = False
    txn_split_apply: bool = False

    @classmethod
    def parse(cls, names: Iterable[str]) -> Bugs:
        """The record with exactly the named bugs on; UnknownBug for a name not in BUGS."""
        names = list(names)
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            raise UnknownBug(f"unknown bug {', '.join(map(repr, unknown))} (known: {', '.join(NAMES)})")
        return cls(**{BY_NAME[n].field: True for n in names})

    def names(self) -> tuple[str, ...]:
        """The names of the bugs that are on, in registry order."""
        return tuple(b.name for b in BUGS if getattr(self, b.field))

    def __bool__(self) -> bool:
        return any(dataclasses.astuple(self))


NO_BUGS = Bugs()
