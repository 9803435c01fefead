"""Hand-written Maelstrom histories: each op an invoke at `start` ms and its completion at `end` ms
(None: never completes), indices in time order as the HistoryWriter gives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jepsen_py.generator import SimOp, simulate
from jepsen_py.history import Op, validate

MS = 1_000_000
_UNSET = object()


@dataclass
class H:
    events: list[tuple[float, int, Op]] = field(default_factory=list)

    def op(self, process: int, f: str, value: Any, start: float, end: float | None, kind: str = "ok",
           result: Any = _UNSET, key: Any = None, node: str | None = None, error: Any = None,
           meta: dict[str, Any] | None = None) -> H:
        """One op; the completion's value is `result` when given, else the invoke's value."""
        m = dict(meta or {})
        self.events.append((start, len(self.events), Op(0, 0, "invoke", process, f, key, value, node,
                                                        None, m)))
        if end is not None:
            out = value if result is _UNSET else result
            self.events.append((end, len(self.events), Op(0, 0, kind, process, f, key, out, node,
                                                          error, dict(m))))
        return self

    def build(self) -> list[Op]:
        ops = []
        for i, (t, _, op) in enumerate(sorted(self.events, key=lambda e: (e[0], e[1]))):
            op.index, op.time = i, int(t * MS)
            ops.append(op)
        validate(ops)
        return ops


def drive(gen: Any, n: int = 200, nodes: tuple[str, ...] = ("n1", "n2", "n3"), seed: int = 3) -> list[SimOp]:
    """The first `n` ops `gen` hands out to 4 client threads in virtual time, every op ok."""
    return simulate(gen, concurrency=4, seed=seed, latency=0.01, nodes=nodes, max_ops=n)[:n]
