"""ok / fail / info counts per op type, as Jepsen's stats checker.

An op type that never once succeeded is a finding on its own: the test exercised nothing for it (the
leader-on-follower bug: commits for some partitions fail all run long), and every other checker would
vacuously pass on it. Final reads (process numbers of the final phase are ordinary clients) count too.

Only when it was also refused while the system was calm: an op type tried only while, say, every node
was killed was unavailable during a fault, not never available. Calm is not merely "no fault in
force": after a fault ends the cluster needs a moment (a full restart has no leader for a while), so
the grace lasts until the system shows it serves again: some client op, of any type, completes ok
after the last fault ended. An op invoked before that proof is still in the fault's shadow. With no
fault at all every op is calm, so an op type refused all run while others succeed is still caught.
Calm is judged over the op's whole life, not only its invocation: an op invoked a millisecond before
a kill and refused as the kill took effect was refused by the fault.

Two floors under every run, faults or not: no client op attempted is unknown (nothing was tested),
and client ops attempted with not one ok is invalid (there is never a calm moment to excuse them).
The analysis adds this checker to any workload that lacks it, so an outside workload gets them too.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from jepsen_py.nemeses.faults import fault_windows

from jepsen_py.history import FAIL, INFO, OK, Op, Pair, pairs
from jepsen_py.protocols import Test


class StatsChecker:
    """Counts outcomes per f; invalid when an f that was attempted has no ok at all, or when no client
    op succeeded; unknown when none was attempted."""

    name = "stats"

    def __init__(self, *, ignore_fs: frozenset[str] = frozenset(),
                 answers: frozenset[str] = frozenset({"already_exists"})) -> None:
        # fs expected to never succeed (e.g. a probe of a deliberately absent name) can be excused;
        # a fail whose error is in `answers` is the system answering (a create that lost the race
        # hears "already exists"), so it shows the op type worked even without an ok.
        self.ignore_fs = ignore_fs
        self.answers = answers

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        by_f: dict[str, dict[str, int]] = {}
        answered: set[str] = set()
        client = [p for p in pairs(history) if isinstance(p.invoke.process, int)]
        for p in client:
            c = by_f.setdefault(p.invoke.f, {"count": 0, OK: 0, FAIL: 0, INFO: 0})
            c["count"] += 1
            c[p.type] += 1
            # an error may be a structure (a Maelstrom node's {"code": 22, ...}): only a name is one
            error = p.complete.error if p.type == FAIL and p.complete is not None else None
            if isinstance(error, str) and error in self.answers:
                answered.add(p.invoke.f)
        total = {"count": 0, OK: 0, FAIL: 0, INFO: 0}
        for c in by_f.values():
            for k in total:
                total[k] += c[k]
        for c in [*by_f.values(), total]:
            c["ok_fraction"] = round(c[OK] / c["count"], 4) if c["count"] else 0.0
        refused = {f for f, c in by_f.items() if c[OK] == 0 and f not in self.ignore_fs and f not in answered}
        never_ok: list[str] = []
        if refused:  # those attempted at least once while the system was calm
            calm = _Calm(history, client)
            never_ok = sorted({p.invoke.f for p in client if p.invoke.f in refused and calm.over(p)})
        anomalies = [
            {"kind": "never-ok", "ops": [],
             "explanation": f"{f!r} was attempted {by_f[f]['count']} times and never succeeded "
                            f"({by_f[f][FAIL]} fail, {by_f[f][INFO]} info)"}
            for f in never_ok
        ]
        # No client op succeeded at all, faults or not: every other checker passes vacuously on such
        # a history, so the run is a failure of its own (a client answering garbage, a system that
        # never served). The calm rule above cannot see it: with no ok there is never proof of calm.
        # Said only when never-ok did not already fail the run, so a finding keeps its one kind.
        no_ok = total["count"] > 0 and total[OK] == 0 and not answered and not never_ok
        if no_ok:
            anomalies.insert(0, {"kind": "no-ok", "ops": [],
                                 "explanation": f"none of the {total['count']} client ops succeeded "
                                                f"({total[FAIL]} fail, {total[INFO]} info)"})
        out: dict[str, Any] = {
            "valid": not (never_ok or no_ok), "by_f": by_f,
            **{k: total[k] for k in ("count", OK, FAIL, INFO)},
            "ok_fraction": total["ok_fraction"], "never_ok": never_ok, "anomalies": anomalies}
        if total["count"] == 0:
            # Nothing was attempted: not invalid (nothing went wrong) but never valid.
            out["valid"] = "unknown"
            out["reason"] = "no client op was attempted: nothing was tested"
        return out


class _Calm:
    """Whether a moment was calm: no fault in force, and since the last fault ended some client op
    completed ok (the system showed it serves again); and whether an op's whole life was."""

    def __init__(self, history: Sequence[Op], client: Sequence[Pair]) -> None:
        self.windows = [(w.start, w.end) for w in fault_windows(history)]
        self.oks = sorted(p.complete.time for p in client if p.complete is not None and p.type == OK)

    def __call__(self, t: int) -> bool:
        last_end: int | None = None
        for lo, hi in self.windows:
            if lo > t:
                continue
            if hi is None or t <= hi:
                return False  # a fault in force
            last_end = hi if last_end is None else max(last_end, hi)
        if last_end is None:
            return True  # no fault yet
        # an ok completed after the last fault ended and before t
        i = bisect.bisect_right(self.oks, last_end)
        return i < len(self.oks) and self.oks[i] < t

    def over(self, p: Pair) -> bool:
        """Calm when invoked, and no fault began before it completed (or ever, if it never did)."""
        start, end = p.invoke.time, p.complete.time if p.complete is not None else None
        return self(start) and not any(start < lo and (end is None or lo <= end) for lo, _ in self.windows)
