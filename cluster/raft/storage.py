"""MemoryStorage: the stable part of the log as the core sees it (etcd-io/raft's MemoryStorage).

The edges own durability: at start they load the WAL and snapshot file into a MemoryStorage, and on
every Ready they write to disk first and then call apply_snapshot / append / set_hard_state here
before RawNode.advance. The core only reads from it. ents[0] is a dummy entry holding the
snapshot's (index, term), so term() of the snapshot index works after compaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .errors import CompactedError, SnapOutOfDateError, UnavailableError
from .messages import Entry, HardState, Snapshot


class MemoryStorage:
    """An in-memory log with a snapshot prefix; not thread-safe (the node drives it from one loop)."""

    def __init__(self, peers: Sequence[str] = ()) -> None:
        self._hard_state = HardState()
        self._snapshot = Snapshot(index=0, term=0, peers=tuple(peers), data={})
        self._ents: list[Entry] = [Entry(term=0, index=0, data=None)]

    # ---- read side (used by the core) ----

    def initial_state(self) -> tuple[HardState, tuple[str, ...]]:
        """The persisted HardState and the membership of the latest snapshot (empty if none)."""
        return self._hard_state, self._snapshot.peers

    def _offset(self) -> int:
        return self._ents[0].index

    def first_index(self) -> int:
        """The first index still held as an entry (snapshot index + 1)."""
        return self._offset() + 1

    def last_index(self) -> int:
        return self._offset() + len(self._ents) - 1

    def term(self, index: int) -> int:
        """Term of entry `index`; the snapshot's index is answered from the dummy entry."""
        offset = self._offset()
        if index < offset:
            raise CompactedError(f"index {index} is compacted (first index {offset + 1})")
        if index - offset >= len(self._ents):
            raise UnavailableError(f"index {index} is past the last index {self.last_index()}")
        return self._ents[index - offset].term

    def entries(self, lo: int, hi: int, max_entries: int | None = None) -> list[Entry]:
        """Entries [lo, hi), at most max_entries of them (at least one when the range is non-empty)."""
        offset = self._offset()
        if lo <= offset:
            raise CompactedError(f"index {lo} is compacted (first index {offset + 1})")
        if hi > self.last_index() + 1:
            raise UnavailableError(f"entries [{lo}, {hi}) beyond last index {self.last_index()}")
        if max_entries is not None and max_entries > 0:
            hi = min(hi, lo + max_entries)
        return self._ents[lo - offset : hi - offset]

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def hard_state(self) -> HardState:
        return self._hard_state

    # ---- write side (used by the edges, after the data is durable) ----

    def set_hard_state(self, hs: HardState) -> None:
        self._hard_state = hs

    def apply_snapshot(self, snap: Snapshot) -> None:
        """Replaces the whole log by the snapshot (entries it covers are discarded)."""
        if snap.index <= self._snapshot.index and not self._snapshot.is_empty():
            raise SnapOutOfDateError(f"snapshot at {snap.index} is not newer than {self._snapshot.index}")
        self._snapshot = snap
        self._ents = [Entry(term=snap.term, index=snap.index, data=None)]

    def create_snapshot(self, index: int, peers: Sequence[str], data: dict[str, Any]) -> Snapshot:
        """Records a snapshot of the applied state at `index` (the caller then may compact)."""
        if index <= self._snapshot.index:
            raise SnapOutOfDateError(f"snapshot at {index} is not newer than {self._snapshot.index}")
        if index > self.last_index():
            raise UnavailableError(f"snapshot index {index} is past the last index {self.last_index()}")
        snap = Snapshot(index=index, term=self.term(index), peers=tuple(peers), data=data)
        self._snapshot = snap
        return snap

    def compact(self, compact_index: int) -> None:
        """Discards entries up to and including compact_index (it must be covered by a snapshot)."""
        offset = self._offset()
        if compact_index <= offset:
            raise CompactedError(f"index {compact_index} is already compacted")
        if compact_index > self.last_index():
            raise UnavailableError(f"compact {compact_index} is past the last index {self.last_index()}")
        i = compact_index - offset
        self._ents = [Entry(term=self._ents[i].term, index=compact_index, data=None), *self._ents[i + 1 :]]

    def append(self, entries: Iterable[Entry]) -> None:
        """Appends entries, replacing any existing suffix from the first new entry's index on.

        Entries already covered by the snapshot are ignored; a gap after the last index is a bug in
        the caller and raises ValueError.
        """
        ents = list(entries)
        if not ents:
            return
        first = self.first_index()
        last = ents[0].index + len(ents) - 1
        if last < first:
            return
        if first > ents[0].index:
            ents = ents[first - ents[0].index :]
        offset = ents[0].index - self._offset()
        if offset > len(self._ents):
            raise ValueError(f"missing log entry: last index {self.last_index()}, append at {ents[0].index}")
        # In place: the log can be long, and a copy per append would make appends quadratic.
        del self._ents[offset:]
        self._ents.extend(ents)
