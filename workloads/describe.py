"""describe: every node asked to describe the same few topics while the leader moves.

Partition leadership follows the Raft leader, so each fault that moves leadership bumps every
partition's leader epoch. Describes are sent round-robin to every node (including one cut off or
deposed), and the answers must agree: one leader per (partition, epoch), epochs never going back in
real time. A few creates of the same names run throughout (the first one makes the topic; the rest
hear "already exists"), so the workload needs no setup phase of its own.
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.leaders import LeadersChecker
from jepsen_py.checkers.staleness import StalenessChecker, TopicsProjection
from jepsen_py.workloads.common import Linearizable, replication_factor, run_checkers

from jepsen_py.generator import Context, defer, fn
from jepsen_py.protocols import Checker, TestSpec
from jepsen_py.workload import Workload

FS = frozenset({"create", "describe"})


class DescribeGen:
    def __init__(self, topics: int, create_fraction: float, prefix: str = "desc") -> None:
        self.topics = [f"{prefix}-{i}" for i in range(max(1, topics))]
        self.create_fraction = create_fraction
        self.turn = 0

    def op(self, ctx: Context) -> dict[str, Any]:
        name = ctx.rng.choice(self.topics)
        if ctx.rng.random() < self.create_fraction:
            rf = replication_factor(len(ctx.nodes))
            return {"f": "create", "key": name, "value": {"partitions": 3, "rf": rf}}
        nodes = list(ctx.nodes)
        node = nodes[self.turn % len(nodes)] if nodes else None
        self.turn += 1
        return {"f": "describe", "key": name, "node": node}

    def final(self, ctx: Context) -> list[dict[str, Any]]:
        nodes = list(ctx.nodes) or [None]
        return [{"f": "describe", "key": t, "node": n} for t in self.topics for n in nodes]


def describe_checkers(spec: TestSpec, *, suffix: str = "") -> list[Checker]:
    return [
        LeadersChecker(),
        Linearizable("topics", FS, name="linearizable" + suffix),
        StalenessChecker(TopicsProjection(), name="staleness" + suffix),
    ]


def describe_workload(spec: TestSpec) -> Workload:
    o = spec.options
    state = DescribeGen(topics=int(o.get("describe_topics", 3)),
                        create_fraction=float(o.get("create_fraction", 0.05)))
    return Workload(
        name="describe",
        fs=FS,
        generator=fn(lambda ctx: state.op(ctx)),
        final_generator=defer(lambda ctx: state.final(ctx)),
        checkers=[*describe_checkers(spec), *run_checkers(spec)],
        meta={"model": "topics", "topics": state.topics},
    )
