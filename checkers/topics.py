"""Create-if-absent, read plainly: a topic name acknowledged as created twice is a duplicate create.

The linearizability check (model "topics") already rejects such a history; this names the anomaly
the way a post-mortem does ("orders was created twice, by n1 in term 3 and by n4 in term 3"), the
split-brain-metadata bug's signature, and counts what was created.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from jepsen_py.history import FAIL, OK, Op, pairs
from jepsen_py.protocols import Test


class TopicsChecker:
    name = "topics"

    def __init__(self, create_f: str = "create") -> None:
        self.create_f = create_f

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        oks: dict[Any, list[Op]] = defaultdict(list)
        exists = 0
        attempted: set[Any] = set()
        for p in pairs(history):
            if p.invoke.f != self.create_f or not isinstance(p.invoke.process, int):
                continue
            attempted.add(p.invoke.key)
            if p.type == OK and p.complete is not None:
                oks[p.invoke.key].append(p.complete)
            elif p.type == FAIL and "exist" in str(p.complete.error if p.complete else "").lower():
                exists += 1
        dups = {k: v for k, v in oks.items() if len(v) > 1}
        anomalies = [
            {"kind": "duplicate-create", "ops": [c.index for c in cs][:10],
             "explanation": f"{k!r} was created {len(cs)} times: " + ", ".join(
                 f"by {c.node} ({c.meta.get('role')}, term {c.meta.get('term')})" for c in cs[:5])}
            for k, cs in sorted(dups.items(), key=lambda kv: str(kv[0]))
        ]
        return {
            "valid": not dups,
            "names_attempted": len(attempted),
            "names_created": len(oks),
            "already_exists_answers": exists,
            "duplicate_creates": len(dups),
            "anomalies": anomalies,
        }
