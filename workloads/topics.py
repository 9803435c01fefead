"""topics: clients racing to create the same topic names, describing and listing them.

Names are drawn from a small rotating pool, so several clients try to create the same name at once:
exactly one may succeed, the rest must hear "already exists" (create-if-absent). A name created twice
is the split-brain-metadata bug; a describe or list that misses a topic whose create was already
acknowledged is a stale (or lost) read. After heal every name is described, and the list read, on
every node.
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.staleness import StalenessChecker, TopicsProjection
from jepsen_py.checkers.topics import TopicsChecker
from jepsen_py.workloads.common import KeyRotation, Linearizable, replication_factor, run_checkers

from jepsen_py.generator import Context, defer, fn
from jepsen_py.protocols import Checker, TestSpec
from jepsen_py.workload import Workload

FS = frozenset({"create", "describe", "list"})
MODEL_FS = frozenset({"create", "describe"})


class TopicsGen:
    def __init__(self, active_names: int, ops_per_name: int, prefix: str = "topic",
                 weights: tuple[float, float, float] = (0.35, 0.5, 0.15)) -> None:
        self.names = KeyRotation(active_names, ops_per_name)
        self.prefix = prefix
        self.weights = weights

    def name(self, i: int) -> str:
        return f"{self.prefix}-{i}"

    def op(self, ctx: Context) -> dict[str, Any]:
        r = ctx.rng.random()
        create_w, describe_w, _ = self.weights
        if r >= create_w + describe_w:
            return {"f": "list"}
        name = self.name(self.names.pick(ctx))
        if r < create_w:
            rf = replication_factor(len(ctx.nodes))
            return {"f": "create", "key": name, "value": {"partitions": ctx.rng.randint(1, 3), "rf": rf}}
        return {"f": "describe", "key": name}

    def final(self, ctx: Context) -> list[dict[str, Any]]:
        nodes = list(ctx.nodes) or [None]
        ops: list[dict[str, Any]] = [{"f": "describe", "key": self.name(i), "node": n}
                                     for i in self.names.used for n in nodes]
        return ops + [{"f": "list", "node": n} for n in nodes]


def topics_checkers(spec: TestSpec, *, suffix: str = "") -> list[Checker]:
    return [
        Linearizable("topics", MODEL_FS, name="linearizable" + suffix),
        StalenessChecker(TopicsProjection(), name="staleness" + suffix),
        TopicsChecker(),
    ]


def topics_workload(spec: TestSpec) -> Workload:
    o = spec.options
    state = TopicsGen(active_names=int(o.get("active_names", 3)), ops_per_name=int(o.get("ops_per_name", 30)))
    return Workload(
        name="topics",
        fs=FS,
        generator=fn(lambda ctx: state.op(ctx)),
        final_generator=defer(lambda ctx: state.final(ctx)),
        checkers=[*topics_checkers(spec), *run_checkers(spec)],
        meta={"model": "topics", "active_names": state.names.active, "ops_per_name": state.names.ops_per_key},
    )
