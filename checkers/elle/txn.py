"""Transactions read from a history: one record per invocation, with the micro-ops that count.

An ok transaction's micro-ops are its completion's (reads carry what they saw); a fail or info
transaction keeps its invocation's, since nothing came back. Keys and values are made hashable
(lists become tuples) once, here, so inference never has to think about JSON shapes.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from jepsen_py.checkers.sets import hashable

from jepsen_py.errors import BadInput
from jepsen_py.history import FAIL, INFO, OK, Op, Process, pairs

APPEND = "append"
WRITE = "w"
READ = "r"
INF_POS = 1 << 62

Mop = tuple[str, Hashable, Any]


@dataclass(slots=True)
class Txn:
    """`id` is the position in the list returned by `transactions`; `invoke_pos`/`complete_pos` are
    positions in the history (INF_POS when it never completed), which give real-time order."""

    id: int
    index: int
    complete_index: int | None
    process: Process
    type: str
    mops: list[Mop]
    invoke_pos: int
    complete_pos: int

    def describe(self) -> dict[str, Any]:
        return {"index": self.index, "complete_index": self.complete_index, "process": self.process,
                "type": self.type, "value": [[f, k, _json(v)] for f, k, v in self.mops]}

    def name(self) -> str:
        return f"T{self.index}"


def _json(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _key(k: Any) -> Hashable:
    return hashable(k) if isinstance(k, list | dict) else k


def _value(v: Any) -> Any:
    """A read's list becomes a tuple; flat lists (the usual case) without a call per element."""
    if isinstance(v, list):
        t = tuple(v)
        try:
            hash(t)
            return t
        except TypeError:
            return hashable(v)
    return hashable(v) if isinstance(v, dict) else v


def _mops(value: Any, f_ok: frozenset[str], where: str) -> list[Mop]:
    if not isinstance(value, list):
        raise BadInput(f"{where}: a transaction's value must be a list of [f, key, value], got {value!r}")
    out: list[Mop] = []
    for m in value:
        if not isinstance(m, list | tuple) or len(m) != 3 or m[0] not in f_ok:
            raise BadInput(f"{where}: micro-op {m!r} is not [f, key, value] with f in {sorted(f_ok)}")
        out.append((m[0], _key(m[1]), _value(m[2])))
    return out


def transactions(history: Sequence[Op], write_f: str, f: str = "txn") -> list[Txn]:
    """Client transactions (op f == `f`) in invocation order; raises BadInput on a malformed one."""
    f_ok = frozenset({write_f, READ})
    pos = {id(op): i for i, op in enumerate(history)}
    out: list[Txn] = []
    for p in pairs(op for op in history if isinstance(op.process, int)):
        inv, comp = p.invoke, p.complete
        if inv.f != f:
            continue
        kind = p.type
        where = f"op {inv.index}"
        if kind == OK:
            assert comp is not None
            mops = _mops(comp.value, f_ok, f"op {comp.index}")
        else:
            mops = _mops(inv.value, f_ok, where)
            mops = [(mf, k, None) if mf == READ else (mf, k, v) for mf, k, v in mops]
        out.append(Txn(len(out), inv.index, comp.index if comp is not None else None, inv.process,
                       kind if kind in (OK, FAIL) else INFO, mops, pos[id(inv)],
                       pos[id(comp)] if comp is not None and kind != INFO else INF_POS))
    return out


def counts(txns: Sequence[Txn]) -> dict[str, int]:
    c = {OK: 0, FAIL: 0, INFO: 0}
    for t in txns:
        c[t.type] += 1
    return c
