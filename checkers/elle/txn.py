"""Transactions read from a history: one record per invocation, with the micro-ops that count.

An ok transaction's micro-ops are its completion's (reads carry what they saw); a fail or info
transaction keeps its invocation's, since nothing came back. Keys and values are made hashable
(lists become tuples) and typed (true is not 1, 1.0 is not 1, :x is not "x") once, here, so
inference never has to think about JSON shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from jepsen_py.checkers.sets import hashable

from jepsen_py.errors import BadInput
from jepsen_py.history import FAIL, INFO, INVOKE, NEMESIS, OK, SAMPLE_PROCESSES, Op, Process

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
                "type": self.type, "value": [[f, plain(k), plain(v)] for f, k, v in self.mops]}

    def name(self) -> str:
        return f"T{self.index}"


def plain(v: Any) -> Any:
    """A key or value as JSON again (tuples as lists, typed values as they were written)."""
    if isinstance(v, tuple):
        return [plain(x) for x in v]
    return v.original() if isinstance(v, Typed) else v


@dataclass(frozen=True, slots=True)
class Typed:
    """A key or value Python would take for one of another type: to Python true is 1, 1.0 is 1
    and an EDN keyword :x is the string "x" (jepsen_py.importers.edn keeps keywords as a str
    subclass); to a history they are different values. `kind` is "bool", "float" or the name of
    the str subclass ("keyword")."""

    kind: str
    value: Any

    def original(self) -> Any:
        return f":{self.value}" if self.kind == "keyword" else self.value

    def __str__(self) -> str:
        if self.kind == "bool":
            return "true" if self.value else "false"
        return f":{self.value}" if self.kind == "keyword" else repr(self.value)


_FLAT = frozenset({int, str, type(None)})


def typed(v: Any) -> Hashable:
    """A key or value as inference compares it: by type as well as value, lists as tuples, maps as
    sorted item tuples."""
    t = type(v)
    if t is int or t is str or v is None:
        return v  # type: ignore[no-any-return]
    if t is bool:
        return Typed("bool", v)
    if t is float:
        return Typed("float", v)
    if isinstance(v, str):
        return Typed(t.__name__.lower(), str(v))
    if isinstance(v, list | tuple):
        if _FLAT.issuperset(map(type, v)):
            return tuple(v)
        return tuple(typed(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted(((str(k), typed(x)) for k, x in v.items()), key=lambda kv: kv[0]))
    return hashable(v) if isinstance(v, set | frozenset) else v  # type: ignore[no-any-return]


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
            k = typed(k)
        if f == READ and not keep_reads:
            v = None
        elif type(v) is list:
            v = tuple(v) if _FLAT.issuperset(map(type, v)) else typed(v)
        elif type(v) not in _PLAIN:
            v = typed(v)
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
        if op.f != f or not is_client(op.process):
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


def is_client(process: Any) -> bool:
    """A client's process: an integer as ours are, or any other name a history gives one ("p0",
    an EDN keyword); never the nemesis or an observer. Checked like any other, not dropped."""
    return process != NEMESIS and process not in SAMPLE_PROCESSES and isinstance(process, int | str) \
        and not isinstance(process, bool)


def left_out(history: Sequence[Op], f: str = "txn") -> dict[str, int]:
    """What a transactional check does not look at, by what it is, so that it is named rather than
    dropped in silence: client invocations whose f is not `f` ("transaction", a "read"), and `f`
    ops of the nemesis or an observer."""
    out: dict[str, int] = {}
    for op in history:
        client = is_client(op.process)
        if client and op.type == INVOKE and op.f != f:
            out[str(op.f)] = out.get(str(op.f), 0) + 1
        elif not client and op.f == f:
            what = f"{f} ops of process {op.process}"
            out[what] = out.get(what, 0) + 1
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
