"""Random concurrent histories for the property tests, made by actually running a model.

Processes invoke ops; each pending op takes effect at some later moment (the real state changes
then, and the op's result is fixed), then completes ok, or crashes (info, or never completes), or
fails without taking effect. Every history made this way is linearizable by construction.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from jepsen_py.history import Op


@dataclass
class _Pending:
    process: int
    f: str
    value: Any
    applied: bool = False
    result: Any = None


def _apply(model: str, state: Any, f: str, value: Any) -> tuple[bool, Any, Any]:
    """(ok, new_state, result) for the sequential register / cas-register / mutex / queue."""
    if model in ("register", "cas-register"):
        if f == "read":
            return True, state, state
        if f == "write":
            return True, value, value
        old, new = value
        return (True, new, value) if state == old else (False, state, value)
    if model == "mutex":
        if f == "acquire":
            return (not state), True, None
        return bool(state), False, None
    if model == "fifo-queue":
        if f == "enqueue":
            return True, (*state, value), value
        return (True, state[1:], state[0]) if state else (True, state, None)
    raise ValueError(model)


def _random_op(model: str, rng: random.Random, unique: list[int], values: int) -> tuple[str, Any]:
    if model in ("register", "cas-register"):
        fs = ["read", "write"] + (["cas"] if model == "cas-register" else [])
        f = rng.choice(fs)
        if f == "read":
            return f, None
        if f == "write":
            if unique:
                unique[0] += 1
                return f, unique[0]
            return f, rng.randrange(values)
        return f, [rng.randrange(values), rng.randrange(values)]
    if model == "mutex":
        return rng.choice(["acquire", "release"]), None
    if model == "fifo-queue":
        if rng.random() < 0.5:
            unique[0] += 1
            return "enqueue", unique[0]
        return "dequeue", None
    raise ValueError(model)


def generate(
    model: str,
    seed: int,
    *,
    n_ops: int = 20,
    processes: int = 4,
    crash_p: float = 0.1,
    unique_writes: bool = False,
    values: int = 4,
    init: Any = None,
    key: Any = None,
) -> list[Op]:
    """A linearizable history of about n_ops operations."""
    rng = random.Random(seed)
    state: Any = init if model != "fifo-queue" else ()
    if model == "mutex":
        state = False
    ops: list[Op] = []
    pending: dict[int, _Pending] = {}
    next_proc = processes
    idle = list(range(processes))
    unique = [1000] if unique_writes or model == "fifo-queue" else []
    started = 0

    def emit(typ: str, process: int, f: str, value: Any, error: Any = None) -> None:
        ops.append(Op(index=len(ops), time=len(ops), type=typ, process=process, f=f, key=key,
                      value=value, error=error))

    while started < n_ops or pending:
        r = rng.random()
        if idle and started < n_ops and r < 0.4:
            p = idle.pop(rng.randrange(len(idle)))
            f, v = _random_op(model, rng, unique, values)
            pending[p] = _Pending(p, f, v)
            emit("invoke", p, f, v)
            started += 1
        elif pending and r < 0.7:
            pe = rng.choice([x for x in pending.values()])
            if not pe.applied:
                ok, new, res = _apply(model, state, pe.f, pe.value)
                pe.applied = True
                pe.result = (ok, res)
                if ok:
                    state = new
        elif pending:
            pe = rng.choice([x for x in pending.values()])
            if rng.random() < crash_p:
                del pending[pe.process]
                if rng.random() < 0.5:
                    emit("info", pe.process, pe.f, pe.value, "timeout")
                else:
                    ops.append(None)  # type: ignore[arg-type]  # never completes: placeholder removed
                idle.append(next_proc)
                next_proc += 1
                continue
            if not pe.applied:
                continue
            del pending[pe.process]
            ok, res = pe.result
            if not ok:
                emit("fail", pe.process, pe.f, pe.value)
            else:
                emit("ok", pe.process, pe.f, res if pe.f in ("read", "dequeue") else pe.value)
            idle.append(pe.process)
    out = [o for o in ops if o is not None]
    for i, o in enumerate(out):
        o.index = i
        o.time = i
    return out
