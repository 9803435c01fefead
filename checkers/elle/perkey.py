"""Inference one key at a time, for engines that spread keys over machines (spark/distributed_txn.py).

Everything inference does is per key: a key's version order, its non-cycle anomalies and the
ww/wr/rw edges it implies look only at that key's micro-ops (an internal or future read is about
one key of one transaction too). So each transaction is projected onto each key it touches, the
unchanged inference (checker.infer) runs on one key's projections, and the pieces are merged: the
edges are the same multiset as the whole history's, the anomaly counts the same sums. The cycle
search, which needs the whole graph, then runs once on the merged graph (checker.conclude).

A key's piece is plain data (lists, tuples, dicts), so it pickles to and from an executor.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from jepsen_py.checkers.elle.budget import Deadline, OutOfTime
from jepsen_py.checkers.elle.checker import infer
from jepsen_py.checkers.elle.found import MAX_EXAMPLES, Found
from jepsen_py.checkers.elle.graph import EdgeList
from jepsen_py.checkers.elle.inference import NONE, Inference
from jepsen_py.checkers.elle.txn import Txn

from jepsen_py.errors import BadInput

# A transaction projected onto one key: the Txn fields with only that key's micro-ops
TxnRow = tuple[int, int, int | None, Any, str, list[tuple[str, Hashable, Any]], int, int]


def split_by_key(txns: Sequence[Txn]) -> list[tuple[Hashable, list[TxnRow]]]:
    """Each key with the projections of the transactions that touch it (in transaction order);
    keys in the order they first appear."""
    by_key: dict[Hashable, list[TxnRow]] = {}
    for t in txns:
        mine: dict[Hashable, list[tuple[str, Hashable, Any]]] = {}
        for m in t.mops:
            mine.setdefault(m[1], []).append(m)
        for k, mops in mine.items():
            by_key.setdefault(k, []).append(
                (t.id, t.index, t.complete_index, t.process, t.type, mops, t.invoke_pos, t.complete_pos))
    return list(by_key.items())


class _ById(Sequence[Txn]):
    """Some transactions, indexed by their id (as inference indexes the whole list), iterated in
    id order."""

    def __init__(self, txns: list[Txn]) -> None:
        self._txns = txns
        self._by_id = {t.id: t for t in txns}

    @overload
    def __getitem__(self, i: int) -> Txn: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Txn]: ...
    def __getitem__(self, i: int | slice) -> Txn | Sequence[Txn]:
        if isinstance(i, slice):
            raise TypeError("transactions by id cannot be sliced")
        return self._by_id[i]

    def __iter__(self) -> Iterator[Txn]:
        return iter(self._txns)

    def __len__(self) -> int:
        return len(self._txns)


@dataclass(slots=True)
class KeyResult:
    """What inference found on one key: its edges (as EdgeList's parallel lists), its anomaly
    counts and first examples; or why it stopped (`bad`: bad input, `late`: out of time)."""

    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    why: list[tuple[Any, ...] | None] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    bad: str | None = None
    late: str | None = None


def infer_key(workload: str, rows: list[TxnRow], nodes: int, deadline: Deadline,
              inference: Inference = NONE) -> KeyResult:
    """Inference on one key's projected transactions; never raises for what the history holds."""
    txns = _ById([Txn(*r) for r in rows])
    edges = EdgeList(nodes)
    found = Found()
    try:
        infer(workload, txns, edges, found, deadline, inference)
    except BadInput as e:
        return KeyResult(bad=str(e))
    except OutOfTime as e:
        return KeyResult(late=e.stage)
    return KeyResult(edges.src, edges.dst, edges.kind, edges.why, found.counts, found.examples)


def merge(pieces: Sequence[KeyResult], txns: Sequence[Txn], edges: EdgeList, found: Found) -> str | None:
    """Adds the keys' pieces (in key order) to `edges` and `found`; returns the stage where a key
    ran out of time, if one did. BadInput (the first key's, in key order) when a key's history was
    malformed. Examples name their transactions whole again, not projected onto the key."""
    late: str | None = None
    for p in pieces:
        if p.bad is not None:
            raise BadInput(p.bad)
    by_index = {t.index: t for t in txns}
    for p in pieces:
        if p.late is not None:
            late = late or p.late
            continue
        edges.src.extend(p.src)
        edges.dst.extend(p.dst)
        edges.kind.extend(p.kind)
        edges.why.extend(p.why)
        for k, n in p.counts.items():
            found.counts[k] = found.counts.get(k, 0) + n
        for k, exs in p.examples.items():
            kept = found.examples.setdefault(k, [])
            kept.extend(_whole(e, by_index) for e in exs[:MAX_EXAMPLES - len(kept)])
    return late


def _whole(example: dict[str, Any], by_index: dict[int, Txn]) -> dict[str, Any]:
    """The example with each projected transaction replaced by the whole one."""
    out = dict(example)
    for k in ("txn", "reader", "writer"):
        t = out.get(k)
        if isinstance(t, dict) and t.get("index") in by_index:
            out[k] = by_index[t["index"]].describe()
    for k in ("txns", "cycle"):
        ts = out.get(k)
        if isinstance(ts, list):
            out[k] = [by_index[t["index"]].describe() if isinstance(t, dict) and t.get("index") in by_index
                      else t for t in ts]
    return out
