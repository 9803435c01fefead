"""The pieces both interpreters share (jepsen_py.workers): the generator handoff."""

from __future__ import annotations

import random

from jepsen_py import generator as gen
from jepsen_py.generator import Context, Pending, Template
from jepsen_py.history import INVOKE, OK, Op
from jepsen_py.workers import GeneratorPhase


def ctx(phase: GeneratorPhase, thread: int, t: float = 0.0) -> Context:
    return Context(t, thread, thread, random.Random(1), phase.threads, phase.busy, ("n1",))


def test_a_thread_is_busy_from_its_op_until_the_generator_is_told() -> None:
    phase = GeneratorPhase(gen.limit(1, gen.repeat({"f": "read"})), [0, 1])
    step = phase.ask(0, ctx(phase, 0))
    assert isinstance(step, Template) and step.f == "read" and phase.busy == {0}
    inv = Op(0, 0, INVOKE, 0, "read")
    phase.tell(0, ctx(phase, 0), inv, Op(1, 1, OK, 0, "read"))
    assert phase.busy == set() and not phase.over
    assert phase.ask(1, ctx(phase, 1)) is None and phase.exhausted and phase.over


def test_a_wait_is_handed_back_and_leaves_the_thread_free() -> None:
    phase = GeneratorPhase(gen.sleep(5.0), [0])
    step = phase.ask(0, ctx(phase, 0))
    assert isinstance(step, Pending) and step.until == 5.0 and phase.busy == set()
