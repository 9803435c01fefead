"""kafka (Maelstrom's workloads.md, "Workload: Kafka"): append-only logs by string key; sends are
given offsets, consumers poll onward from their own positions, commit what they read and list the
committed offsets. The ops, generator and checker are the generic kafka workload's
(workloads/kafka.py, checkers/kafka.py); this is their messages:

  f                        request body                                     completion value of the ok reply
  send                     {"type": "send", "key": k, "msg": m}             send_ok's `offset`
  poll                     {"type": "poll", "offsets": {k: o}}              poll_ok's `msgs`, {k: [[o, m]]}
  commit_offsets           {"type": "commit_offsets", "offsets": {k: o}}    the offsets asked for
  list_committed_offsets   {"type": "list_committed_offsets", "keys": [k]}  list_committed_offsets_ok's
                                                                            `offsets`: {k: o}

Options as the generic workload's: key_count (default 10), send_fraction, final_delay,
final_poll_time, final_idle_polls.
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.kafka import FS
from jepsen_py.workloads.kafka import kafka_workload as generic_kafka_workload
from jepsen_py.workloads.maelstrom.codec import Outcome, decode, field, is_int

from jepsen_py.history import Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload


def _msgs(v: Any) -> bool:
    """poll_ok's msgs: {key: [[offset, message], ...]}."""
    return isinstance(v, dict) and all(
        isinstance(prs, list)
        and all(isinstance(pr, list) and len(pr) == 2 and is_int(pr[0]) for pr in prs)
        for prs in v.values())


def _offsets(v: Any) -> bool:
    return isinstance(v, dict) and all(is_int(o) for o in v.values())


class KafkaCodec:
    """The kafka ops as Maelstrom's kafka messages."""

    fs = FS

    def request(self, op: Op) -> dict[str, Any]:
        if op.f == "send":
            return {"type": "send", "key": op.key, "msg": op.value}
        if op.f == "poll":
            return {"type": "poll", "offsets": op.value}
        if op.f == "commit_offsets":
            return {"type": "commit_offsets", "offsets": op.value}
        return {"type": "list_committed_offsets", "keys": op.value}

    def outcome(self, op: Op, reply: dict[str, Any]) -> Outcome:
        if op.f == "send":
            return decode(reply, "send_ok", lambda r: field(r, "offset", is_int))
        if op.f == "poll":
            return decode(reply, "poll_ok", lambda r: field(r, "msgs", _msgs))
        if op.f == "commit_offsets":
            return decode(reply, "commit_offsets_ok", lambda r: op.value)
        return decode(reply, "list_committed_offsets_ok", lambda r: field(r, "offsets", _offsets))


def kafka_workload(spec: TestSpec) -> Workload:
    return generic_kafka_workload(spec, meta={"maelstrom": "kafka"})
