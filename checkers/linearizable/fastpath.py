"""The polynomial path for registers whose written values are unique per key (Gibbons & Korach's
read-mapping case), which is what our offsets workload produces.

When every write writes a value no other write (nor the initial state) holds, each read maps to
exactly one write. Group a write with the reads of its value into a cluster; a cluster's ops must
be linearized together, write first, with no other write between. With f = the earliest completion
in a cluster and s = the latest invocation, the cluster occupies a *forward zone* [f, s] when f < s
(it must still be "current" over that whole stretch) and a *backward zone* [s, f] otherwise. The
history is linearizable iff
  1. every read maps to a write (or reads the initial value) and no read completes before its
     write is invoked,
  2. no two forward zones overlap, and
  3. no backward zone lies inside another cluster's forward zone.
That is O(n log n). Writes that never completed and were never read are left out (they can take
effect after everything else). Anything else (duplicate values, other operations) returns None and
the general search runs instead.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from typing import Any

from jepsen_py.checkers.linearizable.model import INF, Call, Model, thaw

_INIT_POS = -1  # the virtual write of the initial value: before everything


@dataclass(slots=True)
class FastResult:
    valid: bool
    explanation: str = ""
    ops: list[int] = field(default_factory=list)  # call ids involved in the violation


@dataclass(slots=True)
class _Cluster:
    value: Any
    write: Call | None  # None: the initial value
    f: float
    s: float
    first: Call | None = None  # op completing earliest
    last: Call | None = None  # op invoked latest


def applies(calls: list[Call], model: Model) -> bool:
    """Cheap precondition test (the check itself re-verifies as it goes)."""
    return model.fastpath == "register" and all(
        c.f in model.write_fs or c.f in model.read_fs for c in calls
    )


def check_unique_register(calls: list[Call], model: Model) -> FastResult | None:
    """The verdict for a unique-valued register history, or None when the path does not apply."""
    if not applies(calls, model):
        return None
    init = model.init()
    writes: dict[Any, Call] = {}
    reads: list[Call] = []
    try:
        for c in calls:
            if c.f in model.write_fs:
                v = c.value
                if v is None or v == init or v in writes:
                    return None
                writes[v] = c
            else:
                if not c.known:
                    return None
                reads.append(c)
    except TypeError:  # unhashable value
        return None

    clusters: dict[Any, _Cluster] = {}
    for v, w in writes.items():
        clusters[v] = _Cluster(v, w, w.end, w.start, w, w)
    init_cluster = _Cluster(init, None, _INIT_POS, _INIT_POS)
    has_init_reads = False
    for r in reads:
        v = r.output
        if v in writes:
            w = writes[v]
            if r.end < w.start:
                return FastResult(
                    False,
                    f"read of {thaw(v)!r} (op {r.index}) completed before the write of it "
                    f"(op {w.index}) began",
                    [r.id, w.id],
                )
            cl = clusters[v]
        elif v == init:
            cl = init_cluster
            has_init_reads = True
        else:
            return FastResult(False, f"read of {thaw(v)!r} (op {r.index}), a value no write wrote", [r.id])
        if r.end < cl.f:
            cl.f, cl.first = r.end, r
        if r.start > cl.s:
            cl.s, cl.last = r.start, r

    zones = [c for c in clusters.values() if not (c.f == INF and c.s == c.write.start)]  # type: ignore[union-attr]
    if has_init_reads:
        zones.append(init_cluster)
    forward = sorted((c for c in zones if c.f < c.s), key=lambda c: c.f)
    backward = [c for c in zones if c.f >= c.s]

    for a, b in itertools.pairwise(forward):
        if b.f < a.s:
            return FastResult(
                False,
                f"values {thaw(a.value)!r} and {thaw(b.value)!r} must each stay current over "
                f"overlapping stretches (ops {_idx(a.first)}..{_idx(a.last)} and "
                f"{_idx(b.first)}..{_idx(b.last)}): no order of their writes satisfies both",
                _ids(a) + _ids(b),
            )
    starts = [c.f for c in forward]
    for b in backward:
        i = bisect.bisect_left(starts, b.s) - 1
        if i >= 0:
            a = forward[i]
            if a.f < b.s and b.f < a.s and a is not b:
                return FastResult(
                    False,
                    f"value {thaw(b.value)!r} (ops {_idx(b.last)}..{_idx(b.first)}) falls entirely "
                    f"inside the stretch where {thaw(a.value)!r} must stay current "
                    f"(ops {_idx(a.first)}..{_idx(a.last)})",
                    _ids(a) + _ids(b),
                )
    return FastResult(True)


def _idx(c: Call | None) -> str:
    return "start" if c is None else str(c.index)


def _ids(c: _Cluster) -> list[int]:
    return sorted({x.id for x in (c.write, c.first, c.last) if x is not None})
