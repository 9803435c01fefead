"""Consistency models and anomalies, related as Elle relates them (jepsen-io/elle's
elle.consistency-model, whose graphs and tests are this module's spec).

Three relations, each a small DAG:
  - IMPLIES: which anomalies imply which (G-single-item is also a G-single and a G2-item; an
    incompatible order is also an aborted read);
  - WEAKER: which models imply which (serializable implies repeatable read), over canonical names
    (Adya's PL-* where Elle uses them);
  - PROHIBITS: which anomalies each model prohibits directly.
A model prohibits every anomaly its weaker models prohibit, and every anomaly that implies one of
those. Friendly names (read-committed, serializable, ...) and Elle's aliases (strong-serializable,
conflict-serializable) are canonicalized on the way in; results use the friendly names.

Names beyond Elle: `ROLA` is accepted for update-atomic (this checker's earlier name for it), and
`garbage-read` (a read of a value no transaction wrote) implies G1a (docs/checkers.md).
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
    "G-single-item": ("G-single", "G-single-item-process", "G-nonadjacent-item"),
    "G-single-item-process": ("G-single-process", "G-single-item-realtime", "G-nonadjacent-item-process"),
    "G-single-item-realtime": ("G-single-realtime", "G-nonadjacent-item-realtime"),
    "G-single": ("G-nonadjacent", "GSIb", "G-single-process"),
    "G-single-process": ("G-nonadjacent-process", "G-single-realtime"),
    "G-single-realtime": ("G-nonadjacent-realtime",),
    "G-nonadjacent-item": ("G-nonadjacent", "G2-item", "G-nonadjacent-item-process"),
    "G-nonadjacent-item-process": ("G-nonadjacent-process", "G2-item-process",
                                   "G-nonadjacent-item-realtime"),
    "G-nonadjacent-item-realtime": ("G2-item-realtime", "G-nonadjacent-realtime"),
    "G-nonadjacent": ("G2", "G-nonadjacent-process"),
    "G-nonadjacent-process": ("G2-process", "G-nonadjacent-realtime"),
    "G-nonadjacent-realtime": ("G2-realtime",),
    "G2": ("G2-process",),
    "G2-item": ("G2", "G2-item-process"),
    "G2-item-process": ("G2-process", "G2-item-realtime"),
    "G2-item-realtime": ("G2-realtime",),
    "G2-process": ("G2-realtime",),
    "GSIa": ("GSI",),
    "GSIb": ("GSI",),
    "incompatible-order": ("G1a",),
    "future-read": ("G1c",),
    "dirty-update": ("G1a",),
    "lost-update": ("write-skew", "G2-item"),
    "write-skew": ("G2",),
    # beyond Elle (docs/checkers.md): a value no transaction wrote was read; a transaction's own
    # appends read in another order than it made them (its versions out of order)
    "garbage-read": ("G1a",),
    "reordered-appends": ("cyclic-versions",),
}

# Friendly names and aliases -> canonical names, as Elle canonicalizes them.
CANONICAL: dict[str, str] = {
    "consistent-view": "PL-2+",
    "conflict-serializable": "PL-3",
    "cursor-stability": "PL-CS",
    "forward-consistent-view": "PL-FCV",
    "monotonic-snapshot-read": "PL-MSR",
    "monotonic-view": "PL-2L",
    "read-committed": "PL-2",
    "read-uncommitted": "PL-1",
    "repeatable-read": "PL-2.99",
    "serializable": "PL-3",
    "snapshot-isolation": "PL-SI",
    "strict-serializable": "PL-SS",
    "strong-serializable": "PL-SS",
    "update-serializable": "PL-3U",
    "strong-session-read-uncommitted": "strong-session-PL-1",
    "strong-session-read-committed": "strong-session-PL-2",
    "strong-read-uncommitted": "strong-PL-1",
    "strong-read-committed": "strong-PL-2",
    "ROLA": "update-atomic",  # this checker's earlier name
}

# Canonical -> the name results use. Elle's own reverse mapping picks strong-serializable for
# PL-SS by hash order; we say strict-serializable, its default model's name (the two are aliases).
FRIENDLY: dict[str, str] = {
    "PL-2+": "consistent-view",
    "PL-3": "serializable",
    "PL-CS": "cursor-stability",
    "PL-FCV": "forward-consistent-view",
    "PL-MSR": "monotonic-snapshot-read",
    "PL-2L": "monotonic-view",
    "PL-2": "read-committed",
    "PL-1": "read-uncommitted",
    "PL-2.99": "repeatable-read",
    "PL-SI": "snapshot-isolation",
    "PL-SS": "strict-serializable",
    "PL-3U": "update-serializable",
    "strong-session-PL-1": "strong-session-read-uncommitted",
    "strong-session-PL-2": "strong-session-read-committed",
    "strong-PL-1": "strong-read-uncommitted",
    "strong-PL-2": "strong-read-committed",
}


def canonical(model: str) -> str:
    return CANONICAL.get(model, model)


def friendly(model: str) -> str:
    return FRIENDLY.get(model, model)


_RAW_WEAKER: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("read-atomic",),
    "consistent-view": ("cursor-stability", "monotonic-view"),
    "conflict-serializable": ("view-serializable",),
    "cursor-stability": ("read-committed", "PL-2"),
    "forward-consistent-view": ("consistent-view",),
    "PL-2": ("PL-1",),
    "PL-3": ("repeatable-read", "update-serializable"),
    "update-serializable": ("forward-consistent-view",),
    "monotonic-atomic-view": ("read-committed",),
    "monotonic-view": ("PL-2",),
    "monotonic-snapshot-read": ("PL-2",),
    "parallel-snapshot-isolation": ("causal-cerone", "update-atomic"),
    "prefix": ("causal-cerone",),
    "read-atomic": ("monotonic-atomic-view",),
    "read-committed": ("read-uncommitted",),
    "repeatable-read": ("cursor-stability", "monotonic-atomic-view"),
    "update-atomic": ("read-atomic",),
    "serializable": ("repeatable-read", "snapshot-isolation", "view-serializable"),
    "session-serializable": ("1SR",),
    "snapshot-isolation": ("forward-consistent-view", "monotonic-atomic-view", "monotonic-snapshot-read",
                           "parallel-snapshot-isolation", "prefix"),
    "strict-serializable": ("PL-3", "serializable", "linearizable", "snapshot-isolation",
                            "strong-snapshot-isolation", "strong-session-serializable"),
    "strong-session-PL-1": ("PL-1",),
    "strong-session-PL-2": ("PL-2", "strong-session-PL-1"),
    "strong-PL-1": ("strong-session-PL-1",),
    "strong-PL-2": ("strong-session-PL-2", "strong-PL-1"),
    "strong-session-serializable": ("serializable", "strong-session-snapshot-isolation"),
    "strong-session-snapshot-isolation": ("snapshot-isolation", "strong-session-PL-2"),
    "strong-serializable": ("session-serializable",),
    "strong-snapshot-isolation": ("strong-session-snapshot-isolation", "strong-PL-2"),
    "linearizable": ("sequential",),
    "sequential": ("causal",),
    "causal": ("writes-follow-reads", "PRAM"),
    "PRAM": ("monotonic-reads", "monotonic-writes", "read-your-writes"),
}


def _canonical_graph(raw: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, set[str]] = {}
    for a, bs in raw.items():
        out.setdefault(canonical(a), set()).update(canonical(b) for b in bs)
    return {a: tuple(sorted(bs)) for a, bs in out.items()}


# canonical model -> the canonical models a history satisfying it also satisfies
WEAKER: dict[str, tuple[str, ...]] = _canonical_graph(_RAW_WEAKER)

_RAW_PROHIBITS: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("internal", "G1a"),
    "cursor-stability": ("G1", "G-cursor", "lost-update"),
    "monotonic-view": ("G1", "G-monotonic"),
    "monotonic-snapshot-read": ("G1", "G-MSR"),
    "consistent-view": ("G1", "G-single"),
    "forward-consistent-view": ("G1", "G-SIb"),
    "parallel-snapshot-isolation": ("internal", "G1a"),
    "PL-3": ("G1", "G2", "predicate-read-miss", "PL-3-cycle-exists"),
    "PL-2": ("G1", "PL-2-cycle-exists"),
    "PL-1": ("G0", "duplicate-elements", "cyclic-versions", "PL-1-cycle-exists"),
    "prefix": ("internal", "G1a"),
    "serializable": ("internal",),
    "snapshot-isolation": ("internal", "G1", "G-SI", "G-nonadjacent", "PL-SI-cycle-exists"),
    "read-atomic": ("internal", "G1a", "future-read"),
    "repeatable-read": ("G1", "G2-item", "PL-2.99-cycle-exists", "lost-update"),
    "update-atomic": ("lost-update",),
    "strict-serializable": ("G1", "G1c-realtime", "G2-realtime", "PL-SS-cycle-exists"),
    "strong-session-PL-1": ("strong-session-PL-1-cycle-exists", "G0-process"),
    "strong-session-PL-2": ("strong-session-PL-2-cycle-exists", "G1c-process"),
    "strong-PL-1": ("strong-PL-1-cycle-exists", "G0-realtime"),
    "strong-PL-2": ("strong-PL-2-cycle-exists", "G1c-realtime"),
    "strong-session-snapshot-isolation": ("internal", "G1-process", "G-nonadjacent-process",
                                          "strong-session-snapshot-isolation-cycle-exists"),
    "strong-snapshot-isolation": ("internal", "G1-realtime", "G-nonadjacent-realtime",
                                  "strong-snapshot-isolation-cycle-exists"),
    "strong-session-serializable": ("G1-process", "G2-process", "strong-session-serializable-cycle-exists"),
    "update-serializable": ("G1", "G-update"),
}
PROHIBITS: dict[str, tuple[str, ...]] = {}
for _m, _a in _RAW_PROHIBITS.items():  # serializable and PL-3 are one model: their lists merge
    PROHIBITS[canonical(_m)] = tuple(sorted({*PROHIBITS.get(canonical(_m), ()), *_a}))

# Every canonical model: the vertices of WEAKER and the models that prohibit something.
_ALL: set[str] = set(WEAKER) | {b for bs in WEAKER.values() for b in bs} | set(PROHIBITS)
# Names a user may give: canonical, friendly and aliases.
MODELS = frozenset(_ALL | set(CANONICAL) | {friendly(m) for m in _ALL})

# Anomalies a checker reports that make its answer unknown rather than valid (Elle's).
UNKNOWN_KINDS = frozenset({"empty-transaction-graph", "cycle-search-timeout"})

ANOMALIES = frozenset(set(IMPLIES) | {b for bs in IMPLIES.values() for b in bs}
                      | {a for bs in PROHIBITS.values() for a in bs} | UNKNOWN_KINDS)

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


def unknown_anomalies(anomalies: Iterable[str]) -> list[str]:
    return sorted(a for a in anomalies if a not in ANOMALIES)


def implying(anomalies: Iterable[str]) -> set[str]:
    """The anomalies given and every anomaly that implies one of them."""
    return _closure(anomalies, _IMPLIED_BY)


def prohibited(models: Iterable[str], anomalies: Iterable[str] = ()) -> set[str]:
    """Every anomaly that fails a check for `models` and the extra `anomalies` (Elle's
    :consistency-models and :anomalies options)."""
    direct = {a for m in _closure((canonical(m) for m in models), WEAKER) for a in PROHIBITS.get(m, ())}
    return implying(direct | set(anomalies))


def implied(anomalies: Iterable[str]) -> set[str]:
    """The anomalies given and every anomaly they imply."""
    return _closure(anomalies, IMPLIES)


def and_stronger(models: Iterable[str]) -> set[str]:
    """The models given and every model that implies one of them (canonical names): what ruling
    them out rules out."""
    return _closure((canonical(m) for m in models), _STRONGER)


def ruled_out(anomalies: Iterable[str]) -> set[str]:
    """Every model the anomalies rule out (canonical names)."""
    return and_stronger(m for a in implied(anomalies) for m in _PROHIBITED_BY.get(a, ()))


def impossible(anomalies: Iterable[str]) -> set[str]:
    """Every model the anomalies rule out (friendly names)."""
    return {friendly(m) for m in ruled_out(anomalies)}


def weakest(models: Iterable[str]) -> set[str]:
    """The models of the set that no other model of the set is implied by (canonical names)."""
    ms = {canonical(m) for m in models}
    return {m for m in ms if not (_closure(WEAKER.get(m, ()), WEAKER) & ms)}


def strongest(models: Iterable[str]) -> set[str]:
    """The models of the set that imply no other model of the set (canonical names)."""
    ms = {canonical(m) for m in models}
    return {m for m in ms if not (_closure(_STRONGER.get(m, ()), _STRONGER) & ms)}


def boundary(anomalies: Iterable[str]) -> dict[str, list[str]]:
    """Elle's :not (the weakest models ruled out) and :also-not (the stronger ones), by friendly
    name."""
    out = ruled_out(anomalies)
    weak = weakest(out)
    return {"not": sorted({friendly(m) for m in weak}),
            "also_not": sorted({friendly(m) for m in out - weak})}


def needs_process_edges(bad: Iterable[str]) -> bool:
    """Process order matters when a prohibited anomaly is a cycle through it."""
    return any(a.endswith("-process") for a in bad)


def needs_realtime_edges(bad: Iterable[str]) -> bool:
    return any(a.endswith("-realtime") for a in bad)
