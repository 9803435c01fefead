"""unique-ids (Maelstrom's workloads.md, "Workload: Unique-ids"): every op asks a node for a new id.

  f          invoke value   request body             ok completion value
  generate   None           {"type": "generate"}     the reply's `id` (any JSON value)

After heal every node generates once more, so a run with faults shows each node serving again (the
availability checker asks for an ok op after the faults). Checked by checkers.maelstrom.unique_ids
(no id twice).
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.maelstrom.unique_ids import UniqueIdsChecker
from jepsen_py.workloads.common import run_checkers
from jepsen_py.workloads.maelstrom.codec import Outcome, decode, field

from jepsen_py.generator import defer, fn
from jepsen_py.history import Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

FS = frozenset({"generate"})


class UniqueIdsCodec:
    """generate ops as Maelstrom's generate messages."""

    fs = FS

    def request(self, op: Op) -> dict[str, Any]:
        return {"type": "generate"}

    def outcome(self, op: Op, reply: dict[str, Any]) -> Outcome:
        return decode(reply, "generate_ok", lambda r: field(r, "id"))


def unique_ids_workload(spec: TestSpec) -> Workload:
    return Workload(
        name="unique-ids",
        fs=FS,
        generator=fn(lambda ctx: {"f": "generate"}),
        final_generator=defer(lambda ctx: [{"f": "generate", "node": n} for n in (ctx.nodes or (None,))]),
        checkers=[UniqueIdsChecker(), *run_checkers(spec)],
        meta={"maelstrom": "unique-ids"},
    )
