"""Transactions read from a history: one record per invocation, with the micro-ops that count.

An ok transaction's micro-ops are its completion's (reads carry what they saw); a fail or info
transaction keeps its invocation's, since nothing came back. Keys and values are made hashable
(lists become tuples) once, here, so inference never has to think about JSON shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from jepsen_py.checkers.sets import hashable

from jepsen_py.errors import BadInput
from jepsen_py.history import FAIL, INFO, INVOKE, OK, Op, Process

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


_SCALAR = (int, str)
_PLAIN = (int, str, type(None))


def _mops(value: Any, f_ok: frozenset[str], where: str, keep_reads: bool) -> list[Mop]:
    """[[f, k, v], ...] as tuples; flat reads and scalar keys take the fast path (no call per mop)."""
    if not isinstance(value, list):
        raise BadInput(f"{where}: a transaction's value must be a list of [f, key, value], got {value!r}")
    out: list[Mop] = []
    append = out.append
    for m in value:
        tm = type(m)
        if (tm is not list and tm is not tuple) or m[0:1] == [] or m[0] not in f_ok:
            raise BadInput(f"{where}: micro-op {m!r} is not [f, key, value] with f in {sorted(f_ok)}")
        if len(m) == 3:
            f, k, v = m
        elif len(m) == 2 and m[0] == READ:  # [r, k]: a read whose value is not given (Jepsen's too)
            f, k, v = READ, m[1], None
        else:
            raise BadInput(f"{where}: micro-op {m!r} is not [f, key, value] with f in {sorted(f_ok)}")
        if type(k) not in _SCALAR:
            k = _key(k)
        if f == READ and not keep_reads:
            v = None
        elif type(v) is list:
            t = tuple(v)
            try:
                hash(t)
                v = t
            except TypeError:
                v = hashable(v)
        elif type(v) not in _PLAIN:
            v = _value(v)
        append((f, k, v))
    return out


def transactions(history: Sequence[Op], write_f: str, f: str = "txn") -> list[Txn]:
    """Client transactions (op f == `f`) in invocation order; raises BadInput on a malformed one.
    Pairs invocations with completions as jepsen_py.history.pairs does, keeping positions. A
    completion with no invocation before it (a history of completions only, as Elle's tests write
    them) is a transaction whose invocation is unknown: it follows nothing in real time."""
    f_ok = frozenset({write_f, READ})
    out: list[Txn] = []
    invoked: list[Any] = []
    open_: dict[Process, Txn] = {}
    for i, op in enumerate(history):
        if op.f != f or type(op.process) is not int:
            continue
        if op.type == INVOKE:
            t = Txn(len(out), op.index, None, op.process, INFO, [], i, INF_POS)
            out.append(t)
            invoked.append(op)
            open_[op.process] = t
            continue
        t2 = open_.pop(op.process, None)
        if t2 is None:
            t2 = Txn(len(out), op.index, None, op.process, INFO, [], -1, INF_POS)
            out.append(t2)
            invoked.append(op)
        t2.complete_index = op.index
        if op.type == OK:
            t2.type = OK
            t2.mops = _mops(op.value, f_ok, f"op {op.index}", True)
            t2.complete_pos = i
        elif op.type == FAIL:
            t2.type = FAIL
            t2.complete_pos = i
    for t in out:
        if t.type != OK:
            inv = invoked[t.id]
            t.mops = _mops(inv.value, f_ok, f"op {inv.index}", False)
    return out


def counts(txns: Sequence[Txn]) -> dict[str, int]:
    c = {OK: 0, FAIL: 0, INFO: 0}
    for t in txns:
        c[t.type] += 1
    return c


Versions = dict[tuple[Hashable, Any], int]


def index_writes(txns: Sequence[Txn], write_f: str,
                 refuse: Callable[[Txn, Hashable, Any, int | None], str | None]
                 ) -> tuple[Versions, Versions, Versions]:
    """Every (key, value) written, by the transaction that wrote it (ok or info), by the failed one
    that tried, and each version its own transaction overwrote (intermediate, for G1b; failed
    transactions' too, as Elle's). Values are
    unique per key: `refuse(txn, key, value, other)` names what is wrong with a write (`other` the
    transaction that wrote the same value first, if any), or None to take it; a name is BadInput."""
    writer: Versions = {}
    failed: Versions = {}
    intermediate: Versions = {}
    for t in txns:
        last: dict[Hashable, Any] = {}
        for f, k, v in t.mops:
            if f != write_f:
                continue
            why = refuse(t, k, v, writer.get((k, v), failed.get((k, v))))
            if why is not None:
                raise BadInput(why)
            if k in last:
                intermediate[(k, last[k])] = t.id
            last[k] = v
            if t.type == FAIL:
                failed[(k, v)] = t.id
            else:
                writer[(k, v)] = t.id
    return writer, failed, intermediate
