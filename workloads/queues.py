"""queue: enqueue unique elements, dequeue them, drain after heal (Jepsen's total-queue).

The client contract (what `DB.client("queue")` returns):

  f        key   invoke value   ok completion value
  enqueue  "q"   int element    the element (now in the queue)
  dequeue  "q"   None           the element taken, or None when the queue was empty

Any op may end fail (certainly not done) or info (unknown). The system needs no leader.

After heal the queue is drained: dequeues until one finds it empty (at most twice the number of
enqueues tried, plus a margin). Checked by checkers.queues: every acknowledged enqueue is dequeued,
nothing is dequeued that was never enqueued or whose enqueue failed, and (unless `exactly_once` is
false) nothing is dequeued twice. Options: dequeue_fraction, final_delay (seconds before the drain,
default 1), exactly_once (default true; false: duplicated dequeues are reported without failing, as
Jepsen's total-queue does for at-least-once queues; lost elements fail either way).
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.queues import QueueChecker
from jepsen_py.workloads.common import bool_option, run_checkers

from jepsen_py.generator import Context, Generator, Step, Template, defer, fn, seq, sleep
from jepsen_py.history import OK, Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

KEY = "q"

# Final reads wait this long after heal, so a system that converges (rather than loses) is judged
# converged: Jepsen's quiet period before its final reads. Option final_delay.
FINAL_DELAY_S = 1.0


class QueueGen:
    def __init__(self, dequeue_fraction: float) -> None:
        self.next_element = 0
        self.dequeue_fraction = dequeue_fraction

    def op(self, ctx: Context) -> dict[str, Any]:
        if ctx.rng.random() < self.dequeue_fraction:
            return {"f": "dequeue", "key": KEY}
        self.next_element += 1
        return {"f": "enqueue", "key": KEY, "value": self.next_element}


class Drain(Generator):
    """Dequeues until one comes back ok and empty, or the bound is reached."""

    def __init__(self, state: QueueGen, margin: int = 100) -> None:
        self.state = state
        self.margin = margin
        self.handed = 0
        self.empty = False

    def op(self, ctx: Context) -> Step:
        if self.empty or self.handed >= 2 * self.state.next_element + self.margin:
            return None
        self.handed += 1
        return Template("dequeue", key=KEY)

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        if complete.f == "dequeue" and complete.type == OK and complete.value is None:
            self.empty = True


def queue_workload(spec: TestSpec) -> Workload:
    o = spec.options
    state = QueueGen(dequeue_fraction=float(o.get("dequeue_fraction", 0.4)))
    return Workload(
        name="queue",
        fs=frozenset({"enqueue", "dequeue"}),
        generator=fn(lambda ctx: state.op(ctx)),
        final_generator=seq(sleep(float(o.get("final_delay", FINAL_DELAY_S))),
                            defer(lambda ctx: Drain(state))),
        checkers=[QueueChecker(exactly_once=bool_option(o, "exactly_once", True)), *run_checkers(spec)],
        meta={"model": "total-queue"},
    )
