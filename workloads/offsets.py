"""offsets: consumer groups committing and fetching offsets, a register per (group, topic, partition).

Each commit writes a value never written before to its key (a per-key counter), so every read names
the one write it saw: the linearizability check takes its polynomial path, and the staleness report
can say exactly how many versions behind a stale read was. Keys rotate (Jepsen's independent keys):
a few are live at once and each is retired after a bounded number of ops. After heal, every key ever
used is fetched once more on every node (final reads), so a node that lost or never got a commit is
caught even if no client read it during the run.
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.staleness import OffsetsProjection, StalenessChecker
from jepsen_py.workloads.common import KeyRotation, Linearizable, run_checkers

from jepsen_py.generator import Context, defer, fn
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

GROUPS = ("billing", "search", "audit")
TOPICS = ("orders", "payments")
FS = frozenset({"commit", "fetch"})


def key_name(key_id: int) -> str:
    """Key ids spread over groups and topics first, then partitions: g/t/p."""
    g = GROUPS[key_id % len(GROUPS)]
    t = TOPICS[(key_id // len(GROUPS)) % len(TOPICS)]
    p = key_id // (len(GROUPS) * len(TOPICS))
    return f"{g}/{t}/{p}"


class OffsetsGen:
    """The state behind the offsets generator: live keys and each key's next unique offset."""

    def __init__(self, active_keys: int, ops_per_key: int, read_fraction: float) -> None:
        self.keys = KeyRotation(active_keys, ops_per_key)
        self.next_value: dict[int, int] = {}
        self.read_fraction = read_fraction

    def op(self, ctx: Context) -> dict[str, Any]:
        k = self.keys.pick(ctx)
        if ctx.rng.random() < self.read_fraction:
            return {"f": "fetch", "key": key_name(k)}
        v = self.next_value.get(k, 0) + 1
        self.next_value[k] = v
        return {"f": "commit", "key": key_name(k), "value": v}

    def final(self, ctx: Context) -> list[dict[str, Any]]:
        nodes = list(ctx.nodes) or [None]
        return [{"f": "fetch", "key": key_name(k), "node": n} for k in self.keys.used for n in nodes]


def offsets_workload(spec: TestSpec) -> Workload:
    o = spec.options
    state = OffsetsGen(
        active_keys=int(o.get("active_keys", max(2, spec.concurrency // 4))),
        ops_per_key=int(o.get("ops_per_key", 200)),
        read_fraction=float(o.get("read_fraction", 0.5)),
    )
    # Lambdas, not bound methods: deepcopy (each_thread, cycle) copies a bound method's object but
    # not a function, so the main and final generators keep sharing `state`.
    return Workload(
        name="offsets",
        fs=FS,
        generator=fn(lambda ctx: state.op(ctx)),
        final_generator=defer(lambda ctx: state.final(ctx)),
        checkers=[
            Linearizable("offsets", FS),
            StalenessChecker(OffsetsProjection()),
            *run_checkers(spec),
        ],
        meta={"model": "offsets", "groups": list(GROUPS), "topics": list(TOPICS),
              "ops_per_key": state.keys.ops_per_key, "active_keys": state.keys.active},
    )
