"""The Raft log as the step function sees it: stable storage plus the unstable (not yet persisted) part.

Entries and a snapshot enter the unstable part first; the edges persist them from a Ready and then the
core moves its boundary (stable_to / stable_snap_to). Reads span both parts. committed and applied
live here too, with the rules that keep them honest (commit never goes back, never past the log;
applied never passes commit).
"""

from __future__ import annotations

from .errors import CompactedError, UnavailableError
from .messages import Entry, Snapshot
from .storage import MemoryStorage


class Unstable:
    """Entries (from `offset` on) and at most one snapshot not yet written to stable storage."""

    def __init__(self, offset: int) -> None:
        self.snapshot: Snapshot | None = None
        self.entries: list[Entry] = []
        self.offset = offset

    def maybe_first_index(self) -> int | None:
        return None if self.snapshot is None else self.snapshot.index + 1

    def maybe_last_index(self) -> int | None:
        if self.entries:
            return self.offset + len(self.entries) - 1
        if self.snapshot is not None:
            return self.snapshot.index
        return None

    def maybe_term(self, i: int) -> int | None:
        if i < self.offset:
            if self.snapshot is not None and self.snapshot.index == i:
                return self.snapshot.term
            return None
        last = self.maybe_last_index()
        if last is None or i > last:
            return None
        return self.entries[i - self.offset].term

    def stable_to(self, i: int, t: int) -> None:
        """Entries up to (i, t) are durable; ignored if the entry at i was replaced meanwhile."""
        gt = self.maybe_term(i)
        if gt is None or gt != t or i < self.offset:
            return
        del self.entries[: i + 1 - self.offset]
        self.offset = i + 1

    def stable_snap_to(self, i: int) -> None:
        if self.snapshot is not None and self.snapshot.index == i:
            self.snapshot = None

    def restore(self, snap: Snapshot) -> None:
        self.offset = snap.index + 1
        self.entries = []
        self.snapshot = snap

    def truncate_and_append(self, ents: list[Entry]) -> None:
        after = ents[0].index
        if after == self.offset + len(self.entries):
            self.entries.extend(ents)
        elif after <= self.offset:
            # Replaces the whole unstable part (and, once persisted, a stored suffix).
            self.offset = after
            self.entries = list(ents)
        else:
            del self.entries[after - self.offset :]
            self.entries.extend(ents)

    def slice(self, lo: int, hi: int) -> list[Entry]:
        return self.entries[lo - self.offset : hi - self.offset]


class RaftLog:
    """Storage + unstable, with committed and applied indices."""

    def __init__(self, storage: MemoryStorage, applied: int = 0) -> None:
        self.storage = storage
        first = storage.first_index()
        last = storage.last_index()
        self.unstable = Unstable(last + 1)
        self.committed = first - 1
        self.applied = max(first - 1, applied)

    # ---- indices and terms ----

    def first_index(self) -> int:
        i = self.unstable.maybe_first_index()
        return i if i is not None else self.storage.first_index()

    def last_index(self) -> int:
        i = self.unstable.maybe_last_index()
        return i if i is not None else self.storage.last_index()

    def term(self, i: int) -> int:
        """Term of entry i; 0 outside [first_index-1, last_index]. Raises CompactedError only when
        storage compacted i meanwhile."""
        dummy = self.first_index() - 1
        if i < dummy or i > self.last_index():
            return 0
        t = self.unstable.maybe_term(i)
        if t is not None:
            return t
        try:
            return self.storage.term(i)
        except UnavailableError:
            return 0

    def term_or_zero(self, i: int) -> int:
        try:
            return self.term(i)
        except CompactedError:
            return 0

    def last_term(self) -> int:
        return self.term_or_zero(self.last_index())

    def match_term(self, i: int, t: int) -> bool:
        try:
            return self.term(i) == t
        except CompactedError:
            return False

    def is_up_to_date(self, last_index: int, term: int) -> bool:
        """Election restriction (5.4.1): the candidate's log is at least as up to date as ours."""
        lt = self.last_term()
        return term > lt or (term == lt and last_index >= self.last_index())

    # ---- appends ----

    def find_conflict(self, ents: tuple[Entry, ...] | list[Entry]) -> int:
        """Index of the first entry whose term differs from ours (or that we lack); 0 if none."""
        for e in ents:
            if not self.match_term(e.index, e.term):
                return e.index
        return 0

    def find_conflict_by_term(self, index: int, term: int) -> tuple[int, int]:
        """The largest (i, term(i)) with i <= index and term(i) <= term: where a log whose entry at
        `index` has `term` can possibly match ours. Lets a leader skip a whole term per rejection."""
        i = index
        while i > 0:
            try:
                t = self.term(i)
            except CompactedError:
                return i, 0
            if t <= term:
                return i, t
            i -= 1
        return 0, 0

    def maybe_append(
        self, index: int, log_term: int, committed: int, ents: tuple[Entry, ...]
    ) -> int | None:
        """AppendEntries receiver: returns the last new index, or None when (index, log_term) does not
        match (log matching: then the leader must back off)."""
        if not self.match_term(index, log_term):
            return None
        last_new = index + len(ents)
        ci = self.find_conflict(ents)
        if ci:
            if ci <= self.committed:
                raise AssertionError(f"entry {ci} conflicts with committed index {self.committed}")
            self.append(list(ents[ci - index - 1 :]))
        self.commit_to(min(committed, last_new))
        return last_new

    def append(self, ents: list[Entry]) -> int:
        if not ents:
            return self.last_index()
        after = ents[0].index - 1
        if after < self.committed:
            raise AssertionError(f"append after {after} is below committed {self.committed}")
        self.unstable.truncate_and_append(ents)
        return self.last_index()

    # ---- reads ----

    def slice(self, lo: int, hi: int, max_entries: int | None = None) -> list[Entry]:
        """Entries [lo, hi) from storage and unstable; raises CompactedError below first_index."""
        if lo > hi:
            raise ValueError(f"invalid slice {lo} > {hi}")
        if lo < self.first_index():
            raise CompactedError(f"index {lo} is compacted")
        if hi > self.last_index() + 1:
            raise ValueError(f"slice [{lo}, {hi}) out of bound last index {self.last_index()}")
        if lo == hi:
            return []
        if max_entries is not None and max_entries > 0:
            hi = min(hi, lo + max_entries)
        ents: list[Entry] = []
        if lo < self.unstable.offset:
            ents = list(self.storage.entries(lo, min(hi, self.unstable.offset)))
            if len(ents) < min(hi, self.unstable.offset) - lo:
                return ents
        if hi > self.unstable.offset:
            ents.extend(self.unstable.slice(max(lo, self.unstable.offset), hi))
        return ents

    def entries(self, i: int, max_entries: int | None = None) -> list[Entry]:
        if i > self.last_index():
            return []
        return self.slice(i, self.last_index() + 1, max_entries)

    def all_entries(self) -> list[Entry]:
        return self.entries(self.first_index())

    def unstable_entries(self) -> list[Entry]:
        return list(self.unstable.entries)

    def snapshot(self) -> Snapshot:
        if self.unstable.snapshot is not None:
            return self.unstable.snapshot
        return self.storage.snapshot()

    def has_pending_snapshot(self) -> bool:
        return self.unstable.snapshot is not None

    def pending_snapshot(self) -> Snapshot | None:
        return self.unstable.snapshot

    def _next_apply_bounds(self) -> tuple[int, int]:
        return max(self.applied + 1, self.first_index()), self.committed + 1

    def has_next_committed_entries(self) -> bool:
        if self.committed <= self.applied:  # the usual answer, without looking up first_index
            return False
        lo, hi = self._next_apply_bounds()
        return hi > lo

    def next_committed_entries(self) -> list[Entry]:
        """Committed entries not yet handed out for applying."""
        lo, hi = self._next_apply_bounds()
        if hi <= lo:
            return []
        return self.slice(lo, hi)

    # ---- index moves ----

    def commit_to(self, to_commit: int) -> None:
        if to_commit > self.committed:
            if to_commit > self.last_index():
                raise AssertionError(f"commit {to_commit} is past the last index {self.last_index()}")
            self.committed = to_commit

    def maybe_commit(self, max_index: int, term: int) -> bool:
        """Commits max_index if it holds an entry of `term` (5.4.2: only current-term entries are
        committed by counting replicas)."""
        if max_index > self.committed and self.term_or_zero(max_index) == term:
            self.commit_to(max_index)
            return True
        return False

    def applied_to(self, i: int) -> None:
        if i == 0:
            return
        if i > self.committed or i < self.applied:
            raise AssertionError(f"applied {i} out of range [{self.applied}, {self.committed}]")
        self.applied = i

    def stable_to(self, i: int, t: int) -> None:
        self.unstable.stable_to(i, t)

    def stable_snap_to(self, i: int) -> None:
        self.unstable.stable_snap_to(i)

    def restore(self, snap: Snapshot) -> None:
        self.committed = snap.index
        self.unstable.restore(snap)
