"""Sentences for edges and anomalies: why each edge of a cycle exists, transaction by transaction."""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.elle.graph import PROCESS, REALTIME, RW, WR, WW
from jepsen_py.checkers.elle.txn import Txn


def show(v: Any) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(show(x) for x in v) + "]"
    return "nil" if v is None else repr(str(v)) if type(v) is str else str(v)


def list_read(k: Any, last: Any) -> str:
    """x=[..3] for a read ending in 3, x=[] for an empty one."""
    return f"{show(k)}=[]" if last is None else f"{show(k)}=[..{show(last)}]"


def edge(kind: int, a: Txn, b: Txn, why: tuple[Any, ...] | None, appends: bool) -> str:
    """Why a -kind-> b: for data edges `why` is (key, a's value, b's value), and for a register's
    rw edge from a derived order (checkers/elle/derived.py) the name of the writer of a's value."""
    ta, tb = a.name(), b.name()
    if kind == PROCESS:
        return f"{ta} and {tb} ran on process {a.process}, {ta} first"
    if kind == REALTIME:
        return f"{ta} completed (op {a.complete_index}) before {tb} was invoked (op {b.index})"
    k, va, vb = why[:3] if why is not None else (None, None, None)
    if appends:
        if kind == WW:
            return f"{ta} appended {show(va)} to {show(k)}, and {tb} appended {show(vb)} right after it"
        if kind == WR:
            return f"{ta} appended {show(va)} to {show(k)}, and {tb} read {list_read(k, va)}"
        if kind == RW:
            return (f"{ta} read {list_read(k, va)}, and {tb} appended {show(vb)}, the next element "
                    f"of {show(k)}, so {ta} did not see {tb}'s append")
    else:
        if kind == WW:
            return f"{ta} wrote {show(k)}={show(va)}, and {tb} wrote {show(k)}={show(vb)}, a later version"
        if kind == WR:
            return f"{ta} wrote {show(k)}={show(va)}, and {tb} read {show(k)}={show(vb)}"
        if kind == RW and why is not None and len(why) > 3:
            return (f"{ta} read {show(k)}={show(va)}, and {tb} wrote {show(k)}={show(vb)}, a later "
                    f"version since {why[3]}, which wrote {show(k)}={show(va)}, precedes {tb} by ww "
                    f"and wr dependencies (the other order would be a G1c cycle), so {ta} did not see "
                    f"{tb}'s write")
        if kind == RW:
            return (f"{ta} read {show(k)}={show(va)}, and {tb} wrote {show(k)}={show(vb)}, a later "
                    f"version, so {ta} did not see {tb}'s write")
    return f"{ta} -> {tb}"
