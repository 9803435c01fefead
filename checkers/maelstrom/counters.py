"""The counter checker for Maelstrom's g-counter and pn-counter (workloads.md, "Workload: G-counter"
and "Workload: Pn-counter"): every read is a sum some adds could have made, and every final read
is exactly the sum of the acknowledged adds plus some of the unsure ones.

Ops: `add` (value: the delta) and `read` (ok value: the counter). An add that failed did not
happen; one that ended info or never ended may have, at any time after it began. For each ok read:

  impossible-read   fails: outside [every negative delta, every positive delta] of the adds begun
                    before the read ended (not failed): no set of adds sums to it
  stale-read        fails only when `linearizable`: outside the bounds a linearizable counter
                    keeps, the ok adds that ended before the read began counted in, and the adds
                    concurrent with it free to count or not. An eventually consistent counter (what
                    Maelstrom asks for) may serve these, so by default they are reported only
  wrong-final-read  fails: a final read (after the quiet period, one per node) that is not the sum
                    of every ok add plus a subset of the unsure ones (Maelstrom's final check,
                    exact: the sums are kept as integer intervals)

Final reads are those marked meta `final: true`, else each node's last ok read invoked after every
add had ended. No final read, or no ok read at all: unknown, unless something failed.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jepsen_py.checkers.anomalies import anomaly_report
from jepsen_py.checkers.maelstrom.converge import final_reads

from jepsen_py.history import FAIL, OK, Op, Pair, pairs
from jepsen_py.protocols import Test

ALWAYS_FAILING = frozenset({"impossible-read", "wrong-final-read"})
#: Past this many disjoint intervals the acceptable final values are widened (gaps closed, smallest
#: first) and the result says so: never a false failure, only a looser check.
MAX_INTERVALS = 1000


@dataclass(frozen=True, slots=True)
class Sums:
    """Prefix sums of deltas, ordered by some history index, for bounds over a prefix in O(log n)."""

    at: list[int]
    pos: list[int]
    neg: list[int]

    @classmethod
    def of(cls, items: list[tuple[int, int]]) -> Sums:
        items = sorted(items)
        at, pos, neg = [], [0], [0]
        for index, d in items:
            at.append(index)
            pos.append(pos[-1] + max(d, 0))
            neg.append(neg[-1] + min(d, 0))
        return cls(at, pos, neg)

    def before(self, index: int) -> tuple[int, int]:
        """The sums of the positive and of the negative deltas ordered before `index`."""
        k = bisect_left(self.at, index)
        return self.pos[k], self.neg[k]


def subset_sums(base: int, unsure: list[int], cap: int = MAX_INTERVALS) -> tuple[list[list[int]], bool]:
    """Every `base + sum(S)` for S a subset of `unsure`, as sorted disjoint integer intervals, and
    whether they were widened to stay within `cap` intervals."""
    iv = [[base, base]]
    widened = False
    for d in unsure:
        if d == 0:
            continue
        both = sorted([*iv, *([a + d, b + d] for a, b in iv)])
        iv = []
        for a, b in both:
            if iv and a <= iv[-1][1] + 1:
                iv[-1][1] = max(iv[-1][1], b)
            else:
                iv.append([a, b])
        while len(iv) > cap:
            widened = True
            gap = min(range(len(iv) - 1), key=lambda i: iv[i + 1][0] - iv[i][1])
            iv[gap:gap + 2] = [[iv[gap][0], iv[gap + 1][1]]]
    return iv, widened


def _within(v: int, iv: list[list[int]]) -> bool:
    return any(a <= v <= b for a, b in iv)


class CounterChecker:
    """Read bounds for a grow-only or positive-negative counter (module docstring)."""

    def __init__(self, *, name: str = "counter", add_f: str = "add", read_f: str = "read",
                 linearizable: bool = False) -> None:
        self.name = name
        self.add_f = add_f
        self.read_f = read_f
        self.linearizable = linearizable

    def failing(self) -> frozenset[str]:
        return ALWAYS_FAILING | ({"stale-read"} if self.linearizable else frozenset())

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        ps = pairs(op for op in history if op.is_client and op.f in (self.add_f, self.read_f))
        adds = [p for p in ps if p.invoke.f == self.add_f and p.type != FAIL]
        begun = Sums.of([(p.invoke.index, int(p.invoke.value)) for p in adds])
        done = Sums.of([(p.complete.index, int(p.invoke.value)) for p in adds
                        if p.complete is not None and p.type == OK])
        reads = [p for p in ps if p.invoke.f == self.read_f and p.type == OK]
        anomalies = [a for p in reads for a in self._bounds(p, begun, done)]
        ok_sum = sum(int(p.invoke.value) for p in adds if p.type == OK)
        unsure = [int(p.invoke.value) for p in adds if p.type != OK]
        acceptable, widened = subset_sums(ok_sum, unsure)
        finals = final_reads(ps, self.read_f, self.add_f)
        for node, p in sorted(finals.items()):
            assert p.complete is not None
            v = p.complete.value
            if not _within(v, acceptable):
                anomalies.append({"kind": "wrong-final-read", "node": node, "value": v,
                                  "ops": [p.invoke.index, p.complete.index],
                                  "explanation": f"the final read of {node} (op {p.invoke.index}) returned "
                                                 f"{v}; the ok adds sum to {ok_sum} and {len(unsure)} "
                                                 f"unsure add(s) allow {_show(acceptable)}"})
        report = anomaly_report(anomalies, self.failing())
        out: dict[str, Any] = {
            "valid": not report["failing_kinds"], "adds": len(adds), "ok_sum": ok_sum,
            "unsure_adds": len(unsure), "reads": len(reads), "final_reads": len(finals),
            "acceptable": acceptable[:20], "acceptable_widened": widened, **report,
        }
        if out["valid"] and not finals:
            why = "no ok read" if not reads else "no final read"
            out.update(valid="unknown", unknown_reason=f"{why}: the counter's value was never settled")
        return out

    def _bounds(self, p: Pair, begun: Sums, done: Sums) -> list[dict[str, Any]]:
        assert p.complete is not None
        v = p.complete.value
        inv, comp = p.invoke.index, p.complete.index
        pos, neg = begun.before(comp)
        if not isinstance(v, int) or isinstance(v, bool) or not neg <= v <= pos:
            return [{"kind": "impossible-read", "value": v, "ops": [inv, comp], "bounds": [neg, pos],
                     "explanation": f"read op {inv} returned {v!r}; the adds begun before it ended "
                                    f"can make only {neg}..{pos}"}]
        dpos, dneg = done.before(inv)
        low, high = dpos + dneg + (neg - dneg), dpos + dneg + (pos - dpos)
        if low <= v <= high:
            return []
        return [{"kind": "stale-read", "value": v, "ops": [inv, comp], "bounds": [low, high],
                 "explanation": f"read op {inv} returned {v}; counting the ok adds that ended before it "
                                f"began ({dpos + dneg}) a linearizable counter reads {low}..{high}"}]


def _show(iv: list[list[int]]) -> str:
    text = ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in iv[:5])
    return text + (f" and {len(iv) - 5} more ranges" if len(iv) > 5 else "")
