"""Consistency models and the anomalies each prohibits, as Elle relates them.

Three relations, each a small DAG: which anomalies imply which (a G0 cycle is also a G1c cycle,
an incompatible order is also an aborted read), which models imply which (serializable implies
repeatable read), and which anomalies each model prohibits directly. A model prohibits every
anomaly its weaker models prohibit, and every anomaly that implies one of those.

Two choices of ours: every rw edge here is an item edge, so G-single and G-nonadjacent cycles
are also G2-item (repeatable read rules them out); and a garbage read (a value no transaction
wrote) is treated as an aborted read.
"""

from __future__ import annotations

from collections.abc import Iterable

IMPLIES: dict[str, tuple[str, ...]] = {
    "G0": ("G1c", "G0-process"),
    "G0-process": ("G1c-process", "G0-realtime"),
    "G0-realtime": ("G1c-realtime",),
    "G1a": ("G1",),
    "G1b": ("G1",),
    "G1c": ("G1", "G1c-process"),
    "G1c-process": ("G1c-realtime", "G1-process"),
    "G1c-realtime": ("G1-realtime",),
    "G1": ("G1-process",),
    "G1-process": ("G1-realtime",),
    "G-single": ("G-nonadjacent", "G-single-process", "G2-item"),
    "G-single-process": ("G-nonadjacent-process", "G-single-realtime", "G2-item-process"),
    "G-single-realtime": ("G-nonadjacent-realtime", "G2-item-realtime"),
    "G-nonadjacent": ("G2", "G-nonadjacent-process", "G2-item"),
    "G-nonadjacent-process": ("G2-process", "G-nonadjacent-realtime", "G2-item-process"),
    "G-nonadjacent-realtime": ("G2-realtime", "G2-item-realtime"),
    "G2-item": ("G2", "G2-item-process"),
    "G2-item-process": ("G2-process", "G2-item-realtime"),
    "G2-item-realtime": ("G2-realtime",),
    "G2": ("G2-process",),
    "G2-process": ("G2-realtime",),
    "incompatible-order": ("G1a",),
    "future-read": ("G1c",),
    "dirty-update": ("G1a",),
    "garbage-read": ("G1a",),
    "lost-update": ("write-skew", "G2-item"),
    "write-skew": ("G2",),
}

# model -> the weaker models a history satisfying it also satisfies
WEAKER: dict[str, tuple[str, ...]] = {
    "strict-serializable": ("serializable", "snapshot-isolation", "strong-snapshot-isolation",
                            "strong-session-serializable"),
    "strong-session-serializable": ("serializable", "strong-session-snapshot-isolation"),
    "strong-snapshot-isolation": ("strong-session-snapshot-isolation", "strong-read-committed"),
    "strong-session-snapshot-isolation": ("snapshot-isolation", "strong-session-read-committed"),
    "serializable": ("repeatable-read", "snapshot-isolation", "update-serializable"),
    "update-serializable": ("forward-consistent-view",),
    "forward-consistent-view": ("consistent-view",),
    "consistent-view": ("cursor-stability", "monotonic-view"),
    "snapshot-isolation": ("forward-consistent-view", "monotonic-atomic-view", "monotonic-snapshot-read",
                           "parallel-snapshot-isolation", "prefix"),
    "parallel-snapshot-isolation": ("causal-cerone", "ROLA"),
    "prefix": ("causal-cerone",),
    "causal-cerone": ("read-atomic",),
    "ROLA": ("read-atomic",),
    "read-atomic": ("monotonic-atomic-view",),
    "repeatable-read": ("cursor-stability", "monotonic-atomic-view"),
    "monotonic-atomic-view": ("read-committed",),
    "cursor-stability": ("read-committed",),
    "monotonic-view": ("read-committed",),
    "monotonic-snapshot-read": ("read-committed",),
    "read-committed": ("read-uncommitted",),
    "strong-read-committed": ("strong-session-read-committed", "strong-read-uncommitted"),
    "strong-session-read-committed": ("read-committed", "strong-session-read-uncommitted"),
    "strong-read-uncommitted": ("strong-session-read-uncommitted",),
    "strong-session-read-uncommitted": ("read-uncommitted",),
    "read-uncommitted": (),
}

PROHIBITS: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("internal", "G1a"),
    "cursor-stability": ("G1", "G-cursor", "lost-update"),
    "monotonic-view": ("G1", "G-monotonic"),
    "monotonic-snapshot-read": ("G1", "G-MSR"),
    "consistent-view": ("G1", "G-single"),
    "forward-consistent-view": ("G1", "G-SIb"),
    "parallel-snapshot-isolation": ("internal", "G1a"),
    "serializable": ("G1", "G2", "internal"),
    "read-committed": ("G1",),
    "read-uncommitted": ("G0", "duplicate-elements", "cyclic-versions"),
    "prefix": ("internal", "G1a"),
    "snapshot-isolation": ("internal", "G1", "G-SI", "G-nonadjacent"),
    "read-atomic": ("internal", "G1a", "future-read"),
    "repeatable-read": ("G1", "G2-item", "lost-update"),
    "ROLA": ("lost-update",),
    "strict-serializable": ("G1", "G1c-realtime", "G2-realtime"),
    "strong-session-read-uncommitted": ("G0-process",),
    "strong-session-read-committed": ("G1c-process",),
    "strong-read-uncommitted": ("G0-realtime",),
    "strong-read-committed": ("G1c-realtime",),
    "strong-session-snapshot-isolation": ("internal", "G1-process", "G-nonadjacent-process"),
    "strong-snapshot-isolation": ("internal", "G1-realtime", "G-nonadjacent-realtime"),
    "strong-session-serializable": ("G1-process", "G2-process"),
    "update-serializable": ("G1", "G-update"),
}

MODELS = frozenset(WEAKER)
DEFAULT_MODELS = ("strict-serializable",)


def _closure(start: Iterable[str], edges: dict[str, tuple[str, ...]]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        x = todo.pop()
        if x not in seen:
            seen.add(x)
            todo.extend(edges.get(x, ()))
    return seen


def _reverse(edges: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    rev: dict[str, list[str]] = {}
    for a, bs in edges.items():
        for b in bs:
            rev.setdefault(b, []).append(a)
    return {k: tuple(v) for k, v in rev.items()}


_IMPLIED_BY = _reverse(IMPLIES)
_STRONGER = _reverse(WEAKER)
_PROHIBITED_BY = _reverse(PROHIBITS)


def unknown_models(models: Iterable[str]) -> list[str]:
    return sorted(m for m in models if m not in MODELS)


def prohibited(models: Iterable[str]) -> set[str]:
    """Every anomaly that cannot be present if all `models` hold."""
    direct = {a for m in _closure(models, WEAKER) for a in PROHIBITS.get(m, ())}
    return _closure(direct, _IMPLIED_BY)


def implied(anomalies: Iterable[str]) -> set[str]:
    """The anomalies given and every anomaly they imply."""
    return _closure(anomalies, IMPLIES)


def impossible(anomalies: Iterable[str]) -> set[str]:
    """Every model the anomalies rule out."""
    direct = {m for a in implied(anomalies) for m in _PROHIBITED_BY.get(a, ())}
    return _closure(direct, _STRONGER)


def boundary(anomalies: Iterable[str]) -> dict[str, list[str]]:
    """Elle's :not (the weakest models ruled out) and :also-not (the stronger ones)."""
    out = impossible(anomalies)
    weakest = {m for m in out if not (_closure(WEAKER.get(m, ()), WEAKER) & out)}
    return {"not": sorted(weakest), "also_not": sorted(out - weakest)}


def needs_process_edges(models: Iterable[str]) -> bool:
    return any(a.endswith("-process") for a in prohibited(models))


def needs_realtime_edges(models: Iterable[str]) -> bool:
    return any(a.endswith("-realtime") for a in prohibited(models))
