"""echo (Maelstrom's workloads.md, "Workload: Echo"): each op sends a random string and expects it
back.

  f      invoke value    request body                     ok completion value
  echo   a string        {"type": "echo", "echo": s}      the reply's `echo` (checked to equal s)

After heal every node echoes once more, so a run with faults shows each node serving again (the
availability checker asks for an ok op after the faults). Checked by checkers.maelstrom.echo.
Option: echo_length (characters of each payload, default 16).
"""

from __future__ import annotations

import string
from typing import Any

from jepsen_py.checkers.maelstrom.echo import EchoChecker
from jepsen_py.workloads.common import run_checkers
from jepsen_py.workloads.maelstrom.codec import Outcome, decode, field

from jepsen_py.generator import Context, defer, fn
from jepsen_py.history import Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

FS = frozenset({"echo"})
ALPHABET = string.ascii_letters + string.digits


class EchoCodec:
    """echo ops as Maelstrom's echo messages."""

    fs = FS

    def request(self, op: Op) -> dict[str, Any]:
        return {"type": "echo", "echo": op.value}

    def outcome(self, op: Op, reply: dict[str, Any]) -> Outcome:
        return decode(reply, "echo_ok", lambda r: field(r, "echo"))


def echo_op(ctx: Context, length: int = 16) -> dict[str, Any]:
    """One echo of a fresh random payload (from the run's seeded rng)."""
    return {"f": "echo", "value": "".join(ctx.rng.choice(ALPHABET) for _ in range(length))}


def final_echoes(ctx: Context, length: int) -> list[dict[str, Any]]:
    """One echo on every node."""
    return [{**echo_op(ctx, length), "node": n} for n in (ctx.nodes or (None,))]


def echo_workload(spec: TestSpec) -> Workload:
    length = max(1, int(spec.options.get("echo_length", 16)))
    return Workload(
        name="echo",
        fs=FS,
        generator=fn(lambda ctx: echo_op(ctx, length)),
        final_generator=defer(lambda ctx: final_echoes(ctx, length)),
        checkers=[EchoChecker(), *run_checkers(spec)],
        meta={"maelstrom": "echo", "echo_length": length},
    )
