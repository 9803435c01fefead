"""Knossos's models (register, cas-register, multi-register, mutex, set, fifo-queue,
unordered-queue), Porcupine's kv, and ours (offsets register, topic create-if-absent).

Conventions, following Knossos unless said otherwise:
- a read's result is the completion's value; an info read has no result and is dropped;
- `nil_read`: "empty" (default, Porcupine's reading and our clients': an ok read of null read an
  empty register) or "unknown" (Knossos's reading: a null read constrains nothing);
- `failed_cas`: "drop" (default, Knossos: a failed CAS did not happen) or "mismatch" (Porcupine's
  reading of the etcd logs: a failed CAS is a definite answer, the register did not hold `old`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from jepsen_py.checkers.linearizable.model import (
    Call,
    FrozenDict,
    Model,
    State,
    StepResult,
    Why,
    freeze,
    thaw,
)

from jepsen_py.errors import BadInput

# Compiled steps reject with no reason (the search rejects millions of steps); the report asks
# `step` itself, which says why.
_NO = (False, None)


class Register(Model):
    """A read/write register. Writes with unique values qualify for the polynomial fast path."""

    name = "register"
    fs = frozenset({"read", "write"})
    fastpath = "register"
    read_fs = frozenset({"read"})
    write_fs = frozenset({"write"})

    def __init__(self, init: Any = None, *, nil_read: str = "empty") -> None:
        if nil_read not in ("empty", "unknown"):
            raise BadInput(f"nil_read must be 'empty' or 'unknown', not {nil_read!r}")
        self.initial = freeze(init)
        self.nil_read = nil_read

    def init(self) -> State:
        return self.initial

    def step(self, state: State, call: Call) -> StepResult:
        f = call.f
        if f in self.write_fs:
            return True, call.value
        if f in self.read_fs:
            v = call.output
            if not call.known or (v is None and self.nil_read == "unknown") or v == state:
                return True, state
            return False, Why("read {} but the register holds {}", v, state)
        return False, f"{self.name} has no operation {f!r}"

    def compile(self, call: Call) -> Callable[[State], StepResult]:
        f = call.f
        if f in self.write_fs:
            v = call.value
            res = (True, v)
            return lambda state: res
        if f in self.read_fs and call.known and not (call.output is None and self.nil_read == "unknown"):
            v = call.output
            ok = (True, v)
            return lambda state: ok if state == v else _NO
        return super().compile(call)

    def droppable(self, call: Call) -> bool:
        return call.f in self.read_fs and (
            not call.known or (call.output is None and self.nil_read == "unknown")
        )


class CASRegister(Register):
    """Register plus compare-and-set: cas's value is [old, new]."""

    name = "cas-register"
    fs = frozenset({"read", "write", "cas"})

    def __init__(self, init: Any = None, *, nil_read: str = "empty", failed_cas: str = "drop") -> None:
        super().__init__(init, nil_read=nil_read)
        if failed_cas not in ("drop", "mismatch"):
            raise BadInput(f"failed_cas must be 'drop' or 'mismatch', not {failed_cas!r}")
        self.failed_cas = failed_cas

    def step(self, state: State, call: Call) -> StepResult:
        if call.f != "cas":
            return super().step(state, call)
        try:
            old, new = call.input
        except (TypeError, ValueError):
            return False, f"cas needs [old, new], got {thaw(call.input)!r}"
        if call.outcome == "fail":
            if state != old:
                return True, state
            return False, Why("cas {}->{} failed, yet the register held {}", old, new, old)
        if state == old:
            return True, new
        return False, Why("cas {}->{} but the register holds {}", old, new, state)

    def compile(self, call: Call) -> Callable[[State], StepResult]:
        if call.f != "cas" or not (isinstance(call.input, tuple) and len(call.input) == 2):
            return super().compile(call)
        old, new = call.input
        if call.outcome == "fail":
            return lambda state: (True, state) if state != old else _NO
        ok = (True, new)
        return lambda state: ok if state == old else _NO

    def keeps_failed(self, call: Call) -> bool:
        return call.f == "cas" and self.failed_cas == "mismatch" and call.error is None


class OffsetsRegister(Register):
    """Committed offsets: one register per (group, topic, partition) key, as our offsets workload
    records them (commit_offset writes, fetch_offset reads; null = nothing committed)."""

    name = "offsets"
    fs = frozenset({"fetch", "fetch_offset", "read", "commit", "commit_offset", "write"})
    read_fs = frozenset({"fetch", "fetch_offset", "read"})
    write_fs = frozenset({"commit", "commit_offset", "write"})


class KV(Model):
    """Porcupine's key/value store: put replaces, append concatenates, get returns the string
    ("" when absent). Keys are independent."""

    name = "kv"
    fs = frozenset({"get", "put", "append"})

    def __init__(self, init: Any = "") -> None:
        self.initial = "" if init is None else init

    def init(self) -> State:
        return self.initial

    def step(self, state: State, call: Call) -> StepResult:
        f = call.f
        if f == "put":
            return True, call.input
        if f == "append":
            return True, state + (call.input or "")
        if f == "get":
            v = call.output if call.output is not None else ""
            if v == state:
                return True, state
            return False, Why("get returned {} but the value is {}", v, state)
        return False, f"kv has no operation {f!r}"

    def droppable(self, call: Call) -> bool:
        return call.f == "get" and not call.known


class MultiRegister(Model):
    """Knossos's multi-register: f "txn" with [[f k v] ...] micro-ops; null reads are legal.
    Also accepts f "read"/"write" with a {k: v} map. One partition: transactions span keys."""

    name = "multi-register"
    fs = frozenset({"txn", "read", "write"})

    def __init__(self, init: Any = None) -> None:
        self.initial = FrozenDict(freeze(init or {}))

    def init(self) -> State:
        return self.initial

    def key(self, op: Any) -> Hashable:
        return None

    def step(self, state: State, call: Call) -> StepResult:
        micro = _micro_ops(call)
        if micro is None:
            return False, f"multi-register cannot read {call.f!r} {thaw(call.value)!r}"
        d = dict(state)
        for f, k, v in micro:
            if f == "write":
                d[k] = v
            elif f == "read":
                if v is not None and call.known and d.get(k) != v:
                    return False, Why("read {}={} but it holds {}", k, v, d.get(k))
            else:
                return False, f"unknown micro-op {f!r}"
        return True, FrozenDict(d.items())

    def droppable(self, call: Call) -> bool:
        micro = _micro_ops(call)
        return micro is not None and all(f == "read" for f, _, _ in micro) and not call.known


def _micro_ops(call: Call) -> list[tuple[str, Any, Any]] | None:
    v = call.value
    if call.f == "txn" and isinstance(v, tuple):
        out = []
        for m in v:
            if not (isinstance(m, tuple) and len(m) == 3):
                return None
            out.append((m[0], m[1], m[2]))
        return out
    if call.f in ("read", "write") and isinstance(v, FrozenDict):
        return [(call.f, k, x) for k, x in v]
    return None


class Mutex(Model):
    """acquire succeeds only when free, release only when held."""

    name = "mutex"
    fs = frozenset({"acquire", "release"})

    def __init__(self, init: Any = None) -> None:
        self.initial = bool(init)

    def init(self) -> State:
        return self.initial

    def step(self, state: State, call: Call) -> StepResult:
        if call.f == "acquire":
            return (True, True) if not state else (False, "acquire while the lock is held")
        if call.f == "release":
            return (True, False) if state else (False, "release while the lock is free")
        return False, f"mutex has no operation {call.f!r}"

    def describe_state(self, state: State) -> Any:
        return "locked" if state else "free"


class SetModel(Model):
    """add puts an element in; read returns the whole set."""

    name = "set"
    fs = frozenset({"add", "read"})

    def __init__(self, init: Any = None) -> None:
        self.initial = frozenset(freeze(x) for x in (init or ()))

    def init(self) -> State:
        return self.initial

    def step(self, state: State, call: Call) -> StepResult:
        if call.f == "add":
            return True, state | {call.input}
        if call.f == "read":
            got = frozenset(call.output or ())
            if got == state:
                return True, state
            return False, Why("read {} but the set is {}", got, state)
        return False, f"set has no operation {call.f!r}"

    def droppable(self, call: Call) -> bool:
        return call.f == "read" and not call.known


class FIFOQueue(Model):
    """enqueue appends; dequeue returns the head (an ok dequeue of null: the queue was empty).
    An info dequeue removes the head if there is one."""

    name = "fifo-queue"
    fs = frozenset({"enqueue", "dequeue"})

    def __init__(self, init: Any = None) -> None:
        self.initial = tuple(freeze(x) for x in (init or ()))

    def init(self) -> State:
        return self.initial

    def step(self, state: State, call: Call) -> StepResult:
        if call.f == "enqueue":
            return True, (*state, call.input)
        if call.f == "dequeue":
            if not call.known:
                return True, state[1:]
            v = call.output
            if v is None:
                return (True, state) if not state else (False, Why("dequeued nothing from {}", state))
            if state and state[0] == v:
                return True, state[1:]
            if not state:
                return False, Why("dequeued {} from an empty queue", v)
            return False, Why("dequeued {} but the head is {}", v, state[0])
        return False, f"fifo-queue has no operation {call.f!r}"


class UnorderedQueue(Model):
    """enqueue adds to a multiset; dequeue removes a present element. An info dequeue can only
    make later dequeues harder, so it is dropped (not taking effect is always a choice)."""

    name = "unordered-queue"
    fs = frozenset({"enqueue", "dequeue"})

    def __init__(self, init: Any = None) -> None:
        counts: dict[Any, int] = {}
        for x in init or ():
            counts[freeze(x)] = counts.get(freeze(x), 0) + 1
        self.initial = frozenset(counts.items())

    def init(self) -> State:
        return self.initial

    def step(self, state: State, call: Call) -> StepResult:
        counts = dict(state)
        if call.f == "enqueue":
            counts[call.input] = counts.get(call.input, 0) + 1
            return True, frozenset(counts.items())
        if call.f == "dequeue":
            v = call.output
            if v is None:
                return (True, state) if not counts else (False, "dequeued nothing from a non-empty queue")
            n = counts.get(v, 0)
            if n == 0:
                return False, Why("dequeued {}, which is not in the queue", v)
            if n == 1:
                del counts[v]
            else:
                counts[v] = n - 1
            return True, frozenset(counts.items())
        return False, f"unordered-queue has no operation {call.f!r}"

    def droppable(self, call: Call) -> bool:
        return call.f == "dequeue" and not call.known

    def describe_state(self, state: State) -> Any:
        out: list[Any] = []
        for v, n in state:
            out.extend([thaw(v)] * n)
        return out


CREATE_FS = frozenset({"create", "create_topic", "create-topic"})
DESCRIBE_FS = frozenset({"describe", "describe_topic", "describe-topic"})


class TopicCreate(Model):
    """One topic name: absent until created. create succeeds only when absent; "already exists"
    (a fail whose error mentions exist, or an ok with value false / "exists") proves it present;
    describe returning data proves present, returning null or "not found" proves absent."""

    name = "topics"
    fs = CREATE_FS | DESCRIBE_FS

    def __init__(self, init: Any = None) -> None:
        self.initial = bool(init)

    def init(self) -> State:
        return self.initial

    def step(self, state: State, call: Call) -> StepResult:
        f = call.f
        if f in CREATE_FS:
            if call.outcome == "info":
                return True, True
            if _says_exists(call):
                return (True, True) if state else (False, "create said already-exists but it is absent")
            return (True, True) if not state else (False, "create succeeded but the topic existed")
        if f in DESCRIBE_FS:
            absent = call.outcome == "fail" or call.output is None
            if absent:
                return (True, state) if not state else (False, "describe found nothing but it exists")
            return (True, state) if state else (False, "describe found the topic but it is absent")
        return False, f"topics has no operation {f!r}"

    def keeps_failed(self, call: Call) -> bool:
        err = str(call.error or "").lower()
        if call.f in CREATE_FS:
            return "exist" in err
        return call.f in DESCRIBE_FS and ("not-found" in err or "not_found" in err or "unknown" in err)

    def droppable(self, call: Call) -> bool:
        return call.f in DESCRIBE_FS and not call.known

    def describe_state(self, state: State) -> Any:
        return "created" if state else "absent"


def _says_exists(call: Call) -> bool:
    if call.outcome == "fail":
        return True
    v = call.output
    if v is False or (isinstance(v, str) and "exist" in v.lower()):
        return True
    return isinstance(v, FrozenDict) and v.get("created", True) is False


_FACTORIES: dict[str, Callable[..., Model]] = {
    "register": Register,
    "cas-register": CASRegister,
    "multi-register": MultiRegister,
    "mutex": Mutex,
    "set": SetModel,
    "fifo-queue": FIFOQueue,
    "unordered-queue": UnorderedQueue,
    "offsets": OffsetsRegister,
    "topics": TopicCreate,
    "kv": KV,
}
MODELS: tuple[str, ...] = tuple(_FACTORIES)


def get_model(name: str, init: Any = None, **options: Any) -> Model:
    """A model by name with its initial state (`init`, as Knossos's constructors take one).
    Options: `nil_read` and `failed_cas` for the register models (module docstring)."""
    factory = _FACTORIES.get(name)
    if factory is None:
        raise BadInput(f"unknown model {name!r} (known: {', '.join(MODELS)})")
    try:
        return factory(init, **options) if init is not None else factory(**options)
    except TypeError as e:
        raise BadInput(f"model {name!r}: {e}") from None
