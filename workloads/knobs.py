"""The knobs `--workload-option KEY=VALUE` sets for our workloads, and what each may be.

VALUE is read as JSON, so `active_keys=NaN` was a float NaN (`int()` of it crashed the run with 255),
`active_keys=-3` silently meant 1 and `active_keys=100000000000` had the generator make keys until
the simulator's watchdog stopped it. A knob our workloads read is checked here, once, with one line
naming it; a key none of them reads goes to outside workloads as given (non-finite numbers never:
NaN, Infinity and 1e999 stay text).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from jepsen_py.errors import BadInput
from jepsen_py.numbers import MAX_SECONDS


@dataclass(frozen=True)
class Knob:
    """What one knob holds: a whole number in [lo, hi], a number in [lo, hi], a boolean, or names
    (checked where they are read)."""

    kind: str  # "count", "number", "flag" or "names"
    lo: float = 0
    hi: float = 0
    what: str = ""


# Keys live at once: each is its own linearizability search, and the generator makes them all up
# front; far beyond any run's clients.
_MAX_ACTIVE = 100_000
# Ops before a key is retired: beyond any run's op count.
_MAX_OPS = 1_000_000_000
# Micro-ops in one transaction: Elle's searches and any system's transaction limits are far below.
_MAX_TXN = 10_000
# Topics the describe workload creates and reads on every node after the heal.
_MAX_TOPICS = 1_000

KNOBS: dict[str, Knob] = {
    "active_keys": Knob("count", 1, _MAX_ACTIVE, "keys in use at once"),
    "ops_per_key": Knob("count", 1, _MAX_OPS, "ops before a key is retired"),
    "active_names": Knob("count", 1, _MAX_ACTIVE, "topic names in use at once"),
    "ops_per_name": Knob("count", 1, _MAX_OPS, "ops before a name is retired"),
    "describe_topics": Knob("count", 1, _MAX_TOPICS, "topics described"),
    "key_count": Knob("count", 1, _MAX_ACTIVE, "keys in use at once"),
    "min_txn_length": Knob("count", 1, _MAX_TXN, "micro-ops in a transaction, at least"),
    "max_txn_length": Knob("count", 1, _MAX_TXN, "micro-ops in a transaction, at most"),
    "max_writes_per_key": Knob("count", 1, _MAX_OPS, "writes before a key is retired"),
    "read_fraction": Knob("number", 0, 1, "a fraction"),
    "cas_fraction": Knob("number", 0, 1, "a fraction"),
    "create_fraction": Knob("number", 0, 1, "a fraction"),
    "dequeue_fraction": Knob("number", 0, 1, "a fraction"),
    "send_fraction": Knob("number", 0, 1, "a fraction"),
    "final_delay": Knob("number", 0, MAX_SECONDS, "seconds"),
    "final_poll_time": Knob("number", 0, MAX_SECONDS, "seconds"),
    "final_idle_polls": Knob("count", 1, _MAX_OPS, "polls that bring nothing new"),
    "linearizable": Knob("flag", what="true or false"),
    "wfr_keys": Knob("flag", what="true or false"),
    "sequential_keys": Knob("flag", what="true or false"),
    "linearizable_keys": Knob("flag", what="true or false"),
    "exact": Knob("flag", what="true or false"),
    # The transactional check's models and anomalies: each one's default depends on the other, so
    # the pair is parsed and checked once, by checkers/elle/wanted.py, as `check`'s flags are.
    "consistency_models": Knob("names", what="consistency models"),
    "anomalies": Knob("names", what="anomalies"),
}


def _finite_only(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(text)
    return v


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def parse_value(text: str) -> Any:
    """VALUE as JSON when it parses to finite numbers only, else the text itself."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_only)
    except (ValueError, RecursionError):
        return text


def check(key: str, value: Any) -> Any:
    """`value` if `key` is a knob it fits (or no knob of ours); else BadInput naming both."""
    knob = KNOBS.get(key)
    if knob is None or knob.kind == "names":
        return value
    flag = f"--workload-option {key}"
    if knob.kind == "flag":
        if not isinstance(value, bool):
            raise BadInput(f"{flag}: expected true or false, got {value!r}")
        return value
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    whole = is_number and (isinstance(value, int) or float(value).is_integer())
    if knob.kind == "count" and not whole:
        raise BadInput(f"{flag}: expected a whole number ({knob.what}), got {_short(value)}")
    if not is_number:
        raise BadInput(f"{flag}: expected a number ({knob.what}), got {_short(value)}")
    if not knob.lo <= value <= knob.hi:
        raise BadInput(f"{flag}: must be {_show(knob.lo)}..{_show(knob.hi)} ({knob.what}), "
                       f"got {_short(value)}")
    return int(value) if knob.kind == "count" else value


def _show(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."
