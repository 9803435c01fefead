"""g-counter and pn-counter (Maelstrom's workloads.md, "Workload: G-counter" and "Workload:
Pn-counter"): adds of small deltas to one counter, reads of its value; after a quiet period every
node is read once more, marked final.

  f      invoke value   request body                        ok completion value
  add    int delta      {"type": "add", "delta": d}         the delta
  read   None           {"type": "read"}                    the reply's `value` (an integer)

A g-counter's deltas are never negative (1..max_delta); a pn-counter's are -max_delta..max_delta,
never 0. Checked by checkers.maelstrom.counters. Options: max_delta (default 5), read_fraction
(default 0.3), final_delay (seconds, default 2), linearizable (false: stale reads reported only).
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.maelstrom.counters import CounterChecker
from jepsen_py.workloads.common import bool_option, run_checkers
from jepsen_py.workloads.maelstrom.codec import Outcome, decode, field, is_int
from jepsen_py.workloads.maelstrom.gset import FINAL_DELAY_S, final_reads

from jepsen_py.generator import Context, fn, seq, sleep
from jepsen_py.history import Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

FS = frozenset({"add", "read"})


class CounterCodec:
    """add and read ops as Maelstrom's counter messages (the same for both counters)."""

    fs = FS

    def request(self, op: Op) -> dict[str, Any]:
        if op.f == "add":
            return {"type": "add", "delta": op.value}
        return {"type": "read"}

    def outcome(self, op: Op, reply: dict[str, Any]) -> Outcome:
        if op.f == "add":
            return decode(reply, "add_ok", lambda r: op.value)
        return decode(reply, "read_ok", lambda r: field(r, "value", is_int))


def counter_op(ctx: Context, negative: bool, max_delta: int, read_fraction: float) -> dict[str, Any]:
    if ctx.rng.random() < read_fraction:
        return {"f": "read"}
    d = ctx.rng.randint(1, max_delta)
    return {"f": "add", "value": -d if negative and ctx.rng.random() < 0.5 else d}


def _counter_workload(spec: TestSpec, name: str, negative: bool) -> Workload:
    o = spec.options
    max_delta = max(1, int(o.get("max_delta", 5)))
    read_fraction = float(o.get("read_fraction", 0.3))
    return Workload(
        name=name,
        fs=FS,
        generator=fn(lambda ctx: counter_op(ctx, negative, max_delta, read_fraction)),
        final_generator=seq(sleep(float(o.get("final_delay", FINAL_DELAY_S))), final_reads()),
        checkers=[CounterChecker(name=name, linearizable=bool_option(o, "linearizable", False)),
                  *run_checkers(spec)],
        meta={"maelstrom": name, "max_delta": max_delta, "read_fraction": read_fraction},
    )


def g_counter_workload(spec: TestSpec) -> Workload:
    return _counter_workload(spec, "g-counter", negative=False)


def pn_counter_workload(spec: TestSpec) -> Workload:
    return _counter_workload(spec, "pn-counter", negative=True)
