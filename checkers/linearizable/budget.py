"""Budgets: a search that would take too long or too much memory ends in "unknown" with a reason.

Knossos's best-known failure is running out of memory on a hard history; here the search looks at
its process's resident memory (growth since the search began, from /proc) and at the memo's entry
count every few thousand steps, and stops when either passes the limit; the clock is looked at
then too. The memory figure is per search (one key in one process); `check` splits the budget
between the worker processes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

DEFAULT_TIME_S = 300.0
DEFAULT_MEMORY_MB = 4096

# Rough bytes per memo entry: a (bitset int, state) tuple in a set, plus the bitset's own bytes.
MEMO_ENTRY_BYTES = 200


class BudgetExceeded(Exception):
    """Raised inside a search; the caller turns it into valid "unknown" with `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Budget:
    """Time (seconds, wall clock for the whole check) and memory (MB for the search's memo).

    `deadline` (time.time() seconds) is set by `check` so every key shares one clock; a key checked
    alone (e.g. on a Spark executor) gets `time_s` from its own start.
    """

    time_s: float = DEFAULT_TIME_S
    memory_mb: int = DEFAULT_MEMORY_MB
    deadline: float | None = None

    def started(self) -> Budget:
        """This budget with its deadline fixed from now (kept if already set)."""
        if self.deadline is not None:
            return self
        return replace(self, deadline=time.time() + self.time_s)

    def split_memory(self, ways: int) -> Budget:
        return replace(self, memory_mb=max(1, self.memory_mb // max(1, ways)))

    def memo_entries(self, nbits: int) -> int:
        """How many memo entries fit in memory_mb for a search over `nbits` ops."""
        per = MEMO_ENTRY_BYTES + nbits // 8
        return max(1000, int(self.memory_mb * 1024 * 1024 // per))

    def remaining_s(self) -> float:
        if self.deadline is None:
            return self.time_s
        return self.deadline - time.time()


_PAGE = 4096
try:
    import os as _os

    _PAGE = _os.sysconf("SC_PAGE_SIZE")
except (ValueError, OSError, AttributeError):
    pass


def rss_bytes() -> int | None:
    """This process's resident set size, or None where /proc is not there."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None
