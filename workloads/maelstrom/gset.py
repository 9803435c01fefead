"""g-set (Maelstrom's workloads.md, "Workload: G-set"): adds of unique elements to one grow-only
set, and reads of the whole set; after a quiet period every node is read once more.

  f      invoke value   request body                         ok completion value
  add    int element    {"type": "add", "element": e}        the element
  read   None           {"type": "read"}                     the reply's `value` (a list)

Checked by checkers.maelstrom.converge: set-full, not linearizable, plus every node's final read
holding every known element. Options: read_fraction (default 0.2), final_delay (seconds of quiet
before the final reads, default 2).
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.maelstrom.converge import ConvergenceChecker
from jepsen_py.workloads.common import run_checkers
from jepsen_py.workloads.maelstrom.codec import Outcome, decode, field

from jepsen_py.generator import Context, Generator, defer, fn, seq, sleep
from jepsen_py.history import Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

FS = frozenset({"add", "read"})
#: Seconds of quiet before the final reads, so an eventually consistent set has time to converge.
FINAL_DELAY_S = 2.0


class GSetCodec:
    """add and read ops as Maelstrom's g-set messages."""

    fs = FS

    def request(self, op: Op) -> dict[str, Any]:
        if op.f == "add":
            return {"type": "add", "element": op.value}
        return {"type": "read"}

    def outcome(self, op: Op, reply: dict[str, Any]) -> Outcome:
        if op.f == "add":
            return decode(reply, "add_ok", lambda r: op.value)
        return decode(reply, "read_ok", lambda r: field(r, "value", lambda v: isinstance(v, list)))


class Elements:
    """Unique ints, handed out in order: a read's value names exactly which adds it saw."""

    def __init__(self) -> None:
        self.next = 0

    def take(self) -> int:
        self.next += 1
        return self.next


def final_reads(f: str = "read") -> Generator:
    """One read on every node, marked final (checkers.maelstrom.converge judges those)."""
    return defer(lambda ctx: [{"f": f, "node": n, "meta": {"final": True}} for n in (ctx.nodes or (None,))])


def gset_op(ctx: Context, elements: Elements, read_fraction: float) -> dict[str, Any]:
    if ctx.rng.random() < read_fraction:
        return {"f": "read"}
    return {"f": "add", "value": elements.take()}


def gset_workload(spec: TestSpec) -> Workload:
    o = spec.options
    elements = Elements()
    read_fraction = float(o.get("read_fraction", 0.2))
    return Workload(
        name="g-set",
        fs=FS,
        generator=fn(lambda ctx: gset_op(ctx, elements, read_fraction)),
        final_generator=seq(sleep(float(o.get("final_delay", FINAL_DELAY_S))), final_reads()),
        checkers=[ConvergenceChecker(name="g-set", add_f="add"), *run_checkers(spec)],
        meta={"maelstrom": "g-set", "read_fraction": read_fraction},
    )
