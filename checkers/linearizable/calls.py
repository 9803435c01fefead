"""From history records to Calls: pairing, Jepsen's rules for fail and info, dropping no-ops.

- ok: took effect; its completion's value is the output.
- fail: did not happen, dropped, unless the model says the failure is a definite observation
  (`keeps_failed`), e.g. a CAS whose compare did not match.
- info, or no completion by the end: may take effect at any time after invocation, or never; its
  end is +infinity and its output unknown.
Ops that neither change the state nor constrain it (the model's `droppable`, e.g. info reads) are
removed: they cannot change a verdict and only widen the search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jepsen_py.checkers.linearizable.model import INF, Call, Model, freeze

from jepsen_py.history import FAIL, INFO, INVOKE, OK, Op


@dataclass(slots=True)
class Prepared:
    """A key's calls in invocation order, plus what was left out and why (for the report)."""

    calls: list[Call]
    failed_dropped: int
    noop_dropped: int


def build_calls(ops: Sequence[Op], model: Model) -> Prepared:
    """Pairs one key's invocations with completions (ops in history order, already validated)."""
    raw: list[Call] = []
    open_: dict[object, tuple[int, Op]] = {}
    failed = 0
    for pos, op in enumerate(ops):
        if op.type == INVOKE:
            open_[op.process] = (pos, op)
            continue
        started = open_.pop(op.process, None)
        if started is None:
            continue
        spos, inv = started
        if op.type == OK:
            raw.append(_call(inv, op, spos, pos, True, OK))
        elif op.type == INFO:
            raw.append(_call(inv, op, spos, INF, False, INFO))
        elif op.type == FAIL:
            c = _call(inv, op, spos, pos, True, FAIL)
            if model.keeps_failed(c):
                raw.append(c)
            else:
                failed += 1
    for spos, inv in open_.values():
        raw.append(_call(inv, None, spos, INF, False, INFO))
    raw.sort(key=lambda c: c.start)
    calls: list[Call] = []
    noops = 0
    for c in raw:
        if model.droppable(c):
            noops += 1
            continue
        calls.append(_renumber(c, len(calls)))
    return Prepared(calls, failed, noops)


def _call(inv: Op, comp: Op | None, start: int, end: float, known: bool, outcome: str) -> Call:
    return Call(
        id=0,
        index=inv.index,
        complete_index=comp.index if comp is not None else None,
        process=inv.process,
        f=inv.f,
        key=freeze(inv.key),
        input=freeze(inv.value),
        output=freeze(comp.value) if (known and comp is not None) else None,
        known=known,
        outcome=outcome,
        start=start,
        end=end,
        error=comp.error if comp is not None else None,
    )


def _renumber(c: Call, i: int) -> Call:
    return Call(
        id=i,
        index=c.index,
        complete_index=c.complete_index,
        process=c.process,
        f=c.f,
        key=c.key,
        input=c.input,
        output=c.output,
        known=c.known,
        outcome=c.outcome,
        start=c.start,
        end=c.end,
        error=c.error,
    )
