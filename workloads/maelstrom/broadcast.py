"""broadcast (Maelstrom's workloads.md, "Workload: Broadcast"): unique ints broadcast to one node
each, reads of every message a node holds, and first a topology for every node.

  f           invoke value          request body                           ok completion value
  topology    {node: [neighbours]}  {"type": "topology", "topology": t}    t (not judged)
  broadcast   int message           {"type": "broadcast", "message": m}    the message
  read        None                  {"type": "read"}                       the reply's `messages`

The topology ops go first, one per node, and every one completes before any broadcast (a
`phases` barrier). After a quiet period every node is read once more, marked final. Checked by
checkers.maelstrom.converge: set-full, not linearizable, plus every node's final read holding every
acknowledged (or seen) message. Options: topology (grid, line, total, tree2, tree3, tree4; default
grid), read_fraction (default 0.2), final_delay (seconds, default 2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from jepsen_py.checkers.maelstrom.converge import ConvergenceChecker
from jepsen_py.workloads.common import run_checkers
from jepsen_py.workloads.maelstrom.codec import Outcome, decode, field
from jepsen_py.workloads.maelstrom.gset import FINAL_DELAY_S, Elements, final_reads

from jepsen_py.errors import BadInput
from jepsen_py.generator import Context, Generator, defer, fn, phases, seq, sleep
from jepsen_py.history import Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

FS = frozenset({"broadcast", "read"})
TOPOLOGIES = ("grid", "line", "total", "tree2", "tree3", "tree4")


def topology(kind: str, nodes: Sequence[str]) -> dict[str, list[str]]:
    """Each node's neighbours, from the nodes in the order given. grid: a square grid, row by row,
    each node linked to the nodes above, below, left and right; line: each to the one before and
    after; total: each to every other; treeK: a K-ary tree in breadth-first order, each linked to
    its parent and children. Every shape is symmetric and connected."""
    n = len(nodes)
    links: dict[int, list[int]]
    if kind == "total":
        links = {i: [j for j in range(n) if j != i] for i in range(n)}
    elif kind == "line":
        links = {i: [j for j in (i - 1, i + 1) if 0 <= j < n] for i in range(n)}
    elif kind == "grid":
        side = max(1, math.ceil(math.sqrt(n)))
        links = {}
        for i in range(n):
            row, col = divmod(i, side)
            near = [(row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)]
            links[i] = sorted(r * side + c for r, c in near if 0 <= c < side and 0 <= r * side + c < n
                              and r >= 0)
    elif kind.startswith("tree") and kind[4:].isdigit() and int(kind[4:]) >= 1:
        k = int(kind[4:])
        links = {i: ([(i - 1) // k] if i else []) + [c for c in range(k * i + 1, k * i + k + 1) if c < n]
                 for i in range(n)}
    else:
        raise BadInput(f"unknown broadcast topology {kind!r} (known: {', '.join(TOPOLOGIES)})")
    return {nodes[i]: [nodes[j] for j in links[i]] for i in range(n)}


class BroadcastCodec:
    """topology, broadcast and read ops as Maelstrom's broadcast messages."""

    fs = FS

    def request(self, op: Op) -> dict[str, Any]:
        if op.f == "topology":
            return {"type": "topology", "topology": op.value}
        if op.f == "broadcast":
            return {"type": "broadcast", "message": op.value}
        return {"type": "read"}

    def outcome(self, op: Op, reply: dict[str, Any]) -> Outcome:
        if op.f in ("topology", "broadcast"):
            return decode(reply, f"{op.f}_ok", lambda r: op.value)
        return decode(reply, "read_ok", lambda r: field(r, "messages", lambda v: isinstance(v, list)))


def topology_ops(kind: str) -> Generator:
    """One topology op per node, each carrying the whole map, as Maelstrom sends it."""
    def ops(ctx: Context) -> list[dict[str, Any]]:
        t = topology(kind, list(ctx.nodes))
        return [{"f": "topology", "node": n, "value": t} for n in ctx.nodes]
    return defer(ops)


def broadcast_op(ctx: Context, messages: Elements, read_fraction: float) -> dict[str, Any]:
    if ctx.rng.random() < read_fraction:
        return {"f": "read"}
    return {"f": "broadcast", "value": messages.take()}


def broadcast_workload(spec: TestSpec) -> Workload:
    o = spec.options
    kind = str(o.get("topology", "grid"))
    topology(kind, list(spec.nodes))  # refuse an unknown shape before anything runs
    messages = Elements()
    read_fraction = float(o.get("read_fraction", 0.2))
    return Workload(
        name="broadcast",
        fs=FS,
        generator=phases(topology_ops(kind), fn(lambda ctx: broadcast_op(ctx, messages, read_fraction))),
        final_generator=seq(sleep(float(o.get("final_delay", FINAL_DELAY_S))), final_reads()),
        checkers=[ConvergenceChecker(name="broadcast", add_f="broadcast"), *run_checkers(spec)],
        meta={"maelstrom": "broadcast", "topology": kind, "read_fraction": read_fraction},
    )
