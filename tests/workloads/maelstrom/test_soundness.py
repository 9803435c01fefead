"""No false alarms: histories of correct (linearizable) counters and sets, drawn at random with each
op taking effect at some point inside its interval, pass the strictest reading of their checkers."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.maelstrom.converge import ConvergenceChecker
from jepsen_py.checkers.maelstrom.counters import CounterChecker

from tests.workloads.maelstrom.hist import H

# (is a read, delta or element, start, duration, where in its interval it takes effect, ends info,
#  an info op took effect)
OP = st.tuples(st.booleans(), st.integers(-3, 3), st.integers(0, 50), st.integers(1, 20),
               st.floats(0, 1), st.booleans(), st.booleans())


def history(ops: list[tuple], counter: bool) -> list:
    """Each op's effect at start + at * duration; reads see every effect before theirs."""
    effects: list[tuple[float, int, Any]] = []
    for i, (read, x, start, dur, at, info, applied) in enumerate(ops):
        if not read and (not info or applied):
            effects.append((start + at * dur, i, x if counter else i))
    h = H()
    for i, (read, x, start, dur, at, info, _) in enumerate(ops):
        end = start + dur
        if read:
            t = start + at * dur
            seen = [v for (et, j, v) in effects if (et, j) < (t, i)]
            h.op(i, "read", None, start, end, result=sum(seen) if counter else sorted(seen))
        else:
            h.op(i, "add", x if counter else i, start, end, "info" if info else "ok")
    total = [v for _, _, v in effects]
    for n in range(3):
        h.op(1000 + n, "read", None, 100, 101, result=sum(total) if counter else sorted(total),
             node=f"n{n}", meta={"final": True})
    return h.build()


@settings(max_examples=60, deadline=None)
@given(st.lists(OP, max_size=14))
def test_a_linearizable_counter_always_passes(ops: list[tuple]) -> None:
    r = CounterChecker(linearizable=True).check(None, history(ops, counter=True))
    assert r["valid"] is True, r["anomalies"]


@settings(max_examples=60, deadline=None)
@given(st.lists(OP, max_size=14))
def test_a_linearizable_set_always_passes(ops: list[tuple]) -> None:
    r = ConvergenceChecker(name="g-set", add_f="add").check(None, history(ops, counter=False))
    assert r["valid"] in (True, "unknown"), r["anomalies"]
    assert r["failing_kinds"] == [] and r["reported_kinds"] == []
