"""The Model protocol: what a linearizability checker needs to know about a data type.

A model is a sequential specification, as in Knossos and Porcupine: an initial state and a step
function. States must be hashable, because the search memoizes (set of linearized ops, state) pairs
(Lowe's memo); use tuples, frozensets and plain scalars. A new model is a few lines::

    class Counter(Model):
        name = "counter"
        def init(self): return 0
        def step(self, state, call):
            if call.f == "add":
                return True, state + call.input
            return (call.output == state, state) if call.known else (True, state)

`Call` is one operation as the checker sees it: the invocation's value (`input`), the
completion's value (`output`, meaningful only when `known`), and how it ended.

`step` must depend only on the state and the call's f, input, output, known, outcome and error:
the search treats two calls equal in those as interchangeable (a symmetry cut).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

INF = math.inf

State = Hashable
# step's answer: (True, new_state), or (False, why) where `why` is a string or None.
StepResult = tuple[bool, Any]


@dataclass(frozen=True, slots=True)
class Call:
    """One operation of one key, ready for the search.

    `start`/`end` are positions in the history's event order (the record's place in the file), so
    real-time precedence is `a.end < b.start`. `end` is infinity for an op that never completed or
    completed `info`: it may take effect at any time after `start`, or never.
    """

    id: int
    index: int
    complete_index: int | None
    process: Any
    f: str
    key: Any
    input: Any
    output: Any
    known: bool
    outcome: str
    start: int
    end: float
    error: Any = None

    @property
    def value(self) -> Any:
        """The value that matters for this op: the completion's when known, else the invocation's."""
        if self.known and self.output is not None:
            return self.output
        return self.input

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "complete_index": self.complete_index,
            "process": self.process,
            "f": self.f,
            "key": thaw(self.key),
            "value": thaw(self.value),
            "type": self.outcome,
        }


class Model:
    """Base class with the defaults most models want; subclasses override `init` and `step`.

    - `key(op)`: the partition key (P-compositionality); ops of different keys are checked apart.
    - `droppable(call)`: an op with neither effect nor constraint (an info read); removing it
      shrinks the search and changes no verdict.
    - `keeps_failed(call)`: a `fail` completion that is a definite observation (a CAS whose compare
      did not match, a create that found the topic existing); other fail ops did not happen.
    - `fastpath`: "register" when the unique-value polynomial check applies (reads `read_fs`,
      writes `write_fs`).
    """

    name: str = "model"
    # The op names this model speaks; other ops (a workload's "list", say) are left out of the
    # check and counted in the result's "ignored". None: every op is the model's.
    fs: frozenset[str] | None = None
    fastpath: str | None = None
    read_fs: frozenset[str] = frozenset()
    write_fs: frozenset[str] = frozenset()

    def init(self) -> State:
        raise NotImplementedError

    def step(self, state: State, call: Call) -> StepResult:
        raise NotImplementedError

    def key(self, op: Any) -> Hashable:
        return freeze(getattr(op, "key", None))

    def compile(self, call: Call) -> Callable[[State], StepResult]:
        """`step` bound to one call, which the search calls many times. Models may return a
        specialised function (a read as one comparison); the default just binds."""
        step = self.step
        return lambda state: step(state, call)

    def droppable(self, call: Call) -> bool:
        return False

    def keeps_failed(self, call: Call) -> bool:
        return False

    def describe_state(self, state: State) -> Any:
        """The state as JSON-able data for reports."""
        return thaw(state)

    def describe(self) -> str:
        return self.name


class Why:
    """A failure reason formatted only when someone reads it: the search rejects millions of
    steps and reads the reasons of a handful."""

    __slots__ = ("args", "template")

    def __init__(self, template: str, *args: Any) -> None:
        self.template = template
        self.args = args

    def __str__(self) -> str:
        return self.template.format(*(repr(thaw(a)) for a in self.args))

    __repr__ = __str__


# Values freeze returns as they are, tested first: most values it sees are these, one per element.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(v: Any) -> Hashable:
    """JSON values into hashable ones: lists become tuples, dicts sorted item tuples of a marker."""
    if type(v) in _SCALARS:
        return v
    if isinstance(v, list | tuple):
        return tuple([freeze(x) for x in v])
    if isinstance(v, dict):
        return FrozenDict((freeze(k), freeze(x)) for k, x in v.items())
    if isinstance(v, set | frozenset):
        return frozenset(freeze(x) for x in v)
    return v


class FrozenDict(frozenset):
    """A dict value made hashable; thaw() turns it back into a dict."""

    def get(self, key: Any, default: Any = None) -> Any:
        for k, v in self:
            if k == key:
                return v
        return default


def thaw(v: Any) -> Any:
    """The inverse of freeze, for reports (JSON has no tuples or sets)."""
    if isinstance(v, FrozenDict):
        return {_json_key(k): thaw(x) for k, x in v}
    if isinstance(v, tuple):
        return [thaw(x) for x in v]
    if isinstance(v, set | frozenset):
        items = [thaw(x) for x in v]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(v, float) and math.isinf(v):
        return None
    return v


def _json_key(k: Any) -> Any:
    return k if isinstance(k, str | int | float | bool) or k is None else str(thaw(k))
