"""What inference found: anomaly examples by kind (a few kept, all counted).

Each example is a dict in the shape every checker's anomalies share (jepsen_py/api.py, junit,
pictures, Spark export read it): "kind", "ops" (the history indices of the transactions
involved: invocations and completions) and "explanation", plus the kind's own details.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jepsen_py.checkers.elle.txn import Typed

MAX_EXAMPLES = 20
_ONE = ("txn", "reader", "writer")
_MANY = ("txns", "cycle")


def _plain(v: Any) -> Any:
    """Keys and values in an example as JSON data: the typed ones as they were written."""
    if isinstance(v, Typed):
        return v.original()
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _ops(detail: dict[str, Any]) -> list[int]:
    txns = [detail[k] for k in _ONE if isinstance(detail.get(k), dict)]
    txns += [t for k in _MANY for t in detail.get(k) or () if isinstance(t, dict)]
    out = {i for t in txns for i in (t.get("index"), t.get("complete_index")) if isinstance(i, int)}
    return sorted(out)


@dataclass(slots=True)
class Found:
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def full(self, kind: str) -> bool:
        """Whether `kind` already has all the examples it keeps (more are only counted)."""
        return len(self.examples.get(kind, ())) >= MAX_EXAMPLES

    def count(self, kind: str, n: int) -> None:
        """n more cases of `kind` without examples (after `full`)."""
        if n > 0:
            self.counts[kind] = self.counts.get(kind, 0) + n
            self.examples.setdefault(kind, [])

    def add(self, kind: str, detail: dict[str, Any]) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        ex = self.examples.setdefault(kind, [])
        if len(ex) < MAX_EXAMPLES:
            ex.append({"kind": kind, "ops": _ops(detail), **{k: _plain(v) for k, v in detail.items()}})
