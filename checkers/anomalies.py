"""The anomaly list a checker returns: every kind counted, which kinds fail the run and which are only
reported, and at most MAX_ANOMALIES records, the failing ones kept first.

A checker may report anomalies that do not fail it (stale reads of a system that never promised
linearizability); without `failing_kinds` beside the counts a summary could only print "verdict
true" next to "anomalies 100". Result keys this adds:

    "anomaly_counts": {kind: n}      every anomaly found, not only those listed
    "failing_kinds": [kind, ...]     kinds that make the checker's verdict false
    "reported_kinds": [kind, ...]    kinds reported without failing it
    "anomalies": [...]               at most MAX_ANOMALIES records, failing ones first, by op index
    "anomalies_truncated": n         how many records were left out (only when some were)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable
from typing import Any

MAX_ANOMALIES = 100


def hashable(v: Any) -> Hashable:
    """A JSON value as a dict key or set member (lists become tuples, dicts sorted item tuples)."""
    if isinstance(v, list):
        return tuple(hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, hashable(x)) for k, x in v.items()))
    return v


def anomaly_report(anomalies: list[dict[str, Any]], failing: Collection[str]) -> dict[str, Any]:
    """The result keys above for `anomalies`, where a kind in `failing` fails the run."""
    counts = Counter(str(a["kind"]) for a in anomalies)

    def first_op(a: dict[str, Any]) -> int:
        return a["ops"][0] if a.get("ops") else -1

    kept = sorted(anomalies, key=lambda a: (a["kind"] not in failing, first_op(a)))[:MAX_ANOMALIES]
    kept.sort(key=first_op)
    out: dict[str, Any] = {
        "anomaly_counts": dict(sorted(counts.items())),
        "failing_kinds": sorted(k for k in counts if k in failing),
        "reported_kinds": sorted(k for k in counts if k not in failing),
        "anomalies": kept,
    }
    if len(anomalies) > MAX_ANOMALIES:
        out["anomalies_truncated"] = len(anomalies) - MAX_ANOMALIES
    return out


def shown(values: list[Any], limit: int = 5) -> str:
    """The first few values, then how many more."""
    text = ", ".join(map(repr, values[:limit]))
    return text + (f" and {len(values) - limit} more" if len(values) > limit else "")
