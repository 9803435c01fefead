"""A checker run on part of a history: only the client ops whose f it understands, under its own name.

The metadata workload mixes offsets and topics traffic in one history; each model must see only its
own ops (a topics model handed a "commit" would call the history impossible), and two linearizability
results need two names in results.json. Observer samples and nemesis ops can be kept for checkers
that read them (staleness uses the observer's samples to find deposed leaders).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jepsen_py.history import Op
from jepsen_py.protocols import Checker, Test


class Scoped:
    """Runs `inner` on the client ops with f in `fs` (plus non-client ops when `keep_others`)."""

    def __init__(self, inner: Checker, fs: frozenset[str] | set[str], *, name: str | None = None,
                 keep_others: bool = False) -> None:
        self.inner = inner
        self.fs = frozenset(fs)
        self.name = name or inner.name
        self.keep_others = keep_others

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        ops = [op for op in history
               if (isinstance(op.process, int) and op.f in self.fs)
               or (self.keep_others and not isinstance(op.process, int))]
        return self.inner.check(test, ops)
