"""Helpers for the ports of Elle's own tests (jepsen-io/elle, test/elle/*_test.clj): its compact
transaction notation, histories built the way its tests build them, and our result seen the way
Elle reports one.

Notation (Elle's): "ax1ry12" is append 1 to x, read y = [1 2] (list-append); "wx1rx_" is write x = 1,
read x = nil (rw-register). Keys are x, y, z, t, u; each digit is one element; a read with no
digits has no value ([r, k]).
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.elle import models

from jepsen_py.history import Op

KEYS = "xyztu"


def la(text: str) -> list[list[Any]]:
    """A list-append transaction: reads take lists."""
    out: list[list[Any]] = []
    for c in text:
        if c in "ar":
            out.append(["append" if c == "a" else "r"])
        elif c in KEYS:
            out[-1].append(c)
        else:
            m = out[-1]
            if m[0] == "append":
                m.append(int(c))
            else:
                if len(m) == 2:
                    m.append([])
                m[2].append(int(c))
    return out


def rw(text: str) -> list[list[Any]]:
    """A rw-register transaction: "_" is nil."""
    out: list[list[Any]] = []
    for c in text:
        if c in "wr":
            out.append([c])
        elif c in KEYS:
            out[-1].append(c)
        else:
            out[-1].append(None if c == "_" else int(c))
    return out


def invoke_value(ms: list[list[Any]]) -> list[list[Any]]:
    """What the invocation carries: reads without their values."""
    return [[m[0], m[1], None] if m[0] == "r" else list(m) for m in ms]


class History:
    """Ops added in order, indexed from 0 (or at the index given). `done` adds a completion only
    (Elle's histories of completions), `pair` an invocation and its completion, `invoke` and
    `complete` one each; each returns the index of the op it names (a transaction is named by the
    index our checker reports it by: its invocation's, or its completion's if it has none)."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def _add(self, type_: str, process: int, value: list[list[Any]], index: int | None = None) -> int:
        i = len(self.ops) if index is None else index
        self.ops.append(Op(i, len(self.ops), type_, process, "txn", None, value))
        return i

    def done(self, ms: list[list[Any]], type_: str = "ok", process: int = 0, index: int | None = None) -> int:
        return self._add(type_, process, ms, index)

    def invoke(self, ms: list[list[Any]], process: int = 0, index: int | None = None) -> int:
        return self._add("invoke", process, invoke_value(ms), index)

    def complete(self, ms: list[list[Any]], type_: str = "ok", process: int = 0,
                 index: int | None = None) -> int:
        return self._add(type_, process, ms if type_ == "ok" else invoke_value(ms), index)

    def pair(self, ms: list[list[Any]], type_: str = "ok", process: int = 0) -> int:
        i = self.invoke(ms, process)
        self.complete(ms, type_, process)
        return i


def view(r: dict[str, Any]) -> dict[str, Any]:
    """Our result as Elle's result map shows it: {"valid": True} when nothing reportable was
    found (a prohibited anomaly, or one that makes the answer unknown), else the verdict, the
    reportable anomaly types and :not (as canonical model names, since Elle's friendly name for
    PL-SS is strong-serializable and ours strict-serializable)."""
    reportable = sorted(k for k in r["anomaly_types"]
                        if k in r["prohibited_anomaly_types"] or k in models.UNKNOWN_KINDS)
    if not reportable and r["valid"] is True:
        return {"valid": True}
    return {"valid": r["valid"], "anomaly_types": reportable, "not": canonical(r["not"])}


def canonical(names: Any) -> set[str]:
    return {models.canonical(m) for m in names}


def steps(a: dict[str, Any]) -> list[tuple[int, int, str, Any]]:
    """A cycle's steps as (from, to, type, key), rotated to start at its smallest transaction, so
    two reports of the same cycle compare equal wherever each begins."""
    s = [(x["from"], x["to"], x["type"], x.get("key")) for x in a["steps"]]
    i = min(range(len(s)), key=lambda j: s[j][0])
    return s[i:] + s[:i]


def cycle(*edges: tuple[int, int, str, Any]) -> list[tuple[int, int, str, Any]]:
    """An expected cycle, rotated as `steps` rotates."""
    s = list(edges)
    i = min(range(len(s)), key=lambda j: s[j][0])
    return s[i:] + s[:i]


def found(r: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [a for a in r["anomalies"] + r["other_anomalies"] if a["kind"] == kind]
