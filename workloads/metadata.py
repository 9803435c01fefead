"""metadata: offsets, topic creation and describes mixed, the traffic a Kafka controller sees.

Half the ops are consumer offset commits and fetches, the rest topic creates, describes and lists;
each family keeps its own keys (offsets "group/topic/partition", topics "topic-N", described topics
"desc-N") and its own checkers, run on its own ops only.
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.leaders import LeadersChecker
from jepsen_py.checkers.staleness import OffsetsProjection, StalenessChecker, TopicsProjection
from jepsen_py.checkers.topics import TopicsChecker
from jepsen_py.workloads import describe, offsets, topics
from jepsen_py.workloads.common import Linearizable, run_checkers

from jepsen_py.generator import Context, defer, fn
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload


class MetadataGen:
    def __init__(self, spec: TestSpec) -> None:
        o = spec.options
        self.offsets = offsets.OffsetsGen(int(o.get("active_keys", max(2, spec.concurrency // 4))),
                                          int(o.get("ops_per_key", 200)), float(o.get("read_fraction", 0.5)))
        self.topics = topics.TopicsGen(int(o.get("active_names", 3)), int(o.get("ops_per_name", 30)))
        self.describe = describe.DescribeGen(int(o.get("describe_topics", 3)), 0.05)
        self.weights = (0.5, 0.25, 0.25)

    def op(self, ctx: Context) -> dict[str, Any]:
        r = ctx.rng.random()
        if r < self.weights[0]:
            return self.offsets.op(ctx)
        if r < self.weights[0] + self.weights[1]:
            return self.topics.op(ctx)
        return self.describe.op(ctx)

    def final(self, ctx: Context) -> list[dict[str, Any]]:
        return self.offsets.final(ctx) + self.topics.final(ctx) + self.describe.final(ctx)


def metadata_workload(spec: TestSpec) -> Workload:
    state = MetadataGen(spec)
    return Workload(
        name="metadata",
        fs=offsets.FS | topics.FS | describe.FS,
        generator=fn(lambda ctx: state.op(ctx)),
        final_generator=defer(lambda ctx: state.final(ctx)),
        checkers=[
            Linearizable("offsets", offsets.FS, name="linearizable-offsets"),
            Linearizable("topics", topics.MODEL_FS, name="linearizable-topics"),
            StalenessChecker(OffsetsProjection(), name="staleness-offsets"),
            StalenessChecker(TopicsProjection(), name="staleness-topics"),
            TopicsChecker(),
            LeadersChecker(),
            *run_checkers(spec),
        ],
        meta={"models": ["offsets", "topics"]},
    )
