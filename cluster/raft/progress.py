"""What a leader knows about one follower: match/next, the replication state, the inflight window.

States (etcd-io/raft's tracker): probe sends one MsgApp at a time and waits for the answer (used
after a rejection or a lost connection); replicate pipelines up to max_inflight_msgs MsgApps,
advancing next optimistically; snapshot waits for a MsgSnap to be installed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

PROBE = "probe"
REPLICATE = "replicate"
SNAPSHOT = "snapshot"


@dataclass
class Inflights:
    """Last indices of the MsgApps sent and not yet acknowledged, oldest first (the flow window)."""

    size: int
    _buf: deque[int] = field(default_factory=deque)

    def add(self, last_index: int) -> None:
        if self.full():
            raise RuntimeError("inflights window overflow")
        self._buf.append(last_index)

    def free_le(self, index: int) -> None:
        """Frees every message whose last entry is at or before `index` (it was acknowledged)."""
        while self._buf and self._buf[0] <= index:
            self._buf.popleft()

    def free_first_one(self) -> None:
        if self._buf:
            self._buf.popleft()

    def full(self) -> bool:
        return len(self._buf) >= self.size

    def count(self) -> int:
        return len(self._buf)

    def reset(self) -> None:
        self._buf.clear()


@dataclass
class Progress:
    """The leader's view of one peer; `match` only grows within a term."""

    match: int
    next: int
    inflights: Inflights
    state: str = PROBE
    pending_snapshot: int = 0
    recent_active: bool = False
    probe_sent: bool = False
    # Highest lease stamp (the leader's tick at sending a heartbeat) this peer acknowledged.
    lease_stamp: int = -1
    # Election timeouts spent in the snapshot state (the leader gives up waiting after two).
    snapshot_waits: int = 0

    def _reset_state(self, state: str) -> None:
        self.probe_sent = False
        self.pending_snapshot = 0
        self.snapshot_waits = 0
        self.state = state
        self.inflights.reset()

    def become_probe(self) -> None:
        if self.state == SNAPSHOT:
            pending = self.pending_snapshot
            self._reset_state(PROBE)
            self.next = max(self.match + 1, pending + 1)
        else:
            self._reset_state(PROBE)
            self.next = self.match + 1

    def become_replicate(self) -> None:
        self._reset_state(REPLICATE)
        self.next = self.match + 1

    def become_snapshot(self, snapshot_index: int) -> None:
        self._reset_state(SNAPSHOT)
        self.pending_snapshot = snapshot_index

    def maybe_update(self, n: int) -> bool:
        """Records that the peer holds the log up to n; False for a stale (older) acknowledgement."""
        updated = False
        if self.match < n:
            self.match = n
            updated = True
            self.probe_sent = False
        self.next = max(self.next, n + 1)
        return updated

    def optimistic_update(self, n: int) -> None:
        self.next = n + 1

    def maybe_decr_to(self, rejected: int, match_hint: int) -> bool:
        """Moves next back after a rejection of the MsgApp whose previous index was `rejected`.

        False when the rejection is stale (answers a message sent before the last change of next).
        """
        if self.state == REPLICATE:
            if rejected <= self.match:
                return False
            self.next = self.match + 1
            return True
        if self.next - 1 != rejected:
            return False
        self.next = max(min(rejected, match_hint + 1), self.match + 1, 1)
        self.probe_sent = False
        return True

    def is_paused(self) -> bool:
        """Whether the leader must hold back MsgApps to this peer now."""
        if self.state == PROBE:
            return self.probe_sent
        if self.state == REPLICATE:
            return self.inflights.full()
        return True

    def describe(self) -> dict[str, object]:
        return {
            "match": self.match,
            "next": self.next,
            "state": self.state,
            "recent_active": self.recent_active,
            "inflight": self.inflights.count(),
            "pending_snapshot": self.pending_snapshot,
        }
