"""What every Maelstrom workload's codec shares: a reply body made into the op's outcome.

A Maelstrom node answers a client's request with `<type>_ok` or with an error body (doc/protocol.md,
"Errors"). The codecs here are pure (op in, request body out; reply body in, outcome out), so the
workloads are written once whatever carries the messages: the router's `call`, a recorded exchange
in a test. Definite error codes end the op fail (it did not and never will happen); indefinite ones,
custom codes, no reply and a reply the workload does not define end it info (it may have happened).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from jepsen_py.history import FAIL, INFO, OK, Op
from jepsen_py.maelstrom.protocol import error_code

#: The `error` of an op whose request got no reply in time: Maelstrom's own timeout, code 0.
TIMEOUT = {"code": 0, "name": "timeout", "text": "no reply in time"}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a reply makes of an op: the completion's type, value and error."""

    type: str
    value: Any = None
    error: Any = None

    def completion(self, invoke: Op) -> Op:
        """The completion of `invoke` this outcome describes (the runner numbers and times it)."""
        return replace(invoke, type=self.type, value=self.value, error=self.error, meta=dict(invoke.meta))


class Codec(Protocol):
    """One workload's messages: the ops it judges, each op's request body, a reply's outcome."""

    fs: frozenset[str]

    def request(self, op: Op) -> dict[str, Any]: ...

    def outcome(self, op: Op, reply: dict[str, Any]) -> Outcome: ...


def error_outcome(reply: dict[str, Any]) -> Outcome:
    """An error body's outcome: fail for a definite code, info for any other (custom codes and
    codes that are not integers included: when in doubt, the op may have happened)."""
    code = reply.get("code")
    known = error_code(code) if isinstance(code, int) and not isinstance(code, bool) else None
    error = {"code": code, "name": known.name if known else "unknown", "text": reply.get("text")}
    return Outcome(FAIL if known is not None and known.definite else INFO, None, error)


def timeout_outcome() -> Outcome:
    """No reply: the request may have been applied, so the op is info."""
    return Outcome(INFO, None, dict(TIMEOUT))


def malformed(reply: dict[str, Any], why: str) -> Outcome:
    """A reply the workload does not define: info (the node may have done the op), with the reason,
    so a node that answers wrongly is visible in the history rather than silently unknown."""
    return Outcome(INFO, None, {"code": None, "name": "malformed-reply", "text": why,
                                "reply_type": reply.get("type")})


def decode(reply: dict[str, Any], ok_type: str, value: Callable[[dict[str, Any]], Any]) -> Outcome:
    """The outcome of `reply` to a request whose success is `ok_type`, carrying `value(reply)`;
    `value` raises KeyError, TypeError or ValueError on a reply that lacks what it needs."""
    kind = reply.get("type")
    if kind == "error":
        return error_outcome(reply)
    if kind != ok_type:
        return malformed(reply, f"expected {ok_type} or error, got {kind!r}")
    try:
        return Outcome(OK, value(reply))
    except (KeyError, TypeError, ValueError) as e:
        return malformed(reply, f"{ok_type} without a well-formed {e}")


def is_int(x: Any) -> bool:
    """A JSON integer (booleans are not)."""
    return isinstance(x, int) and not isinstance(x, bool)


def field(reply: dict[str, Any], name: str, check: Callable[[Any], bool] | None = None) -> Any:
    """`reply[name]`, KeyError naming it when absent or not passing `check`."""
    if name not in reply or (check is not None and not check(reply[name])):
        raise KeyError(name)
    return reply[name]
