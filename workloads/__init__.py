"""Workloads: what clients do to the system and how their history is checked.

  offsets   commit_offset / fetch_offset per (group, topic, partition): register, unique values
  topics    create_topic races on shared names, describe, list: create-if-absent
  describe  describe_topic on every node while the leader moves: one leader per partition and epoch
  metadata  all of the above mixed

Generic workloads, for any system whose DB plugin implements `client(name)` (contracts in each
module's docstring):

  register  read / write / cas on independent keys: cas-register, linearizable
  set       add / read of grow-only sets: lost, stale and unexpected elements
  append    append / read of lists (Jepsen's list-append): prefix order, lost, real-time order
  queue     enqueue / dequeue, drained after heal: lost, duplicated, unexpected elements
  list-append   multi-key transactions of appends and reads (Elle): isolation anomalies by name
  rw-register   multi-key transactions of writes and reads (Elle): isolation anomalies by name
  kafka     send / poll / commit_offsets / list_committed_offsets on append-only logs (Jepsen's kafka)

`WORKLOADS[name](spec)` builds a Workload; `cluster_client(name, db)` is the client template for OUR
cluster (jepsen_py/raftdb/db.py's RaftMetadataDB.client delegates here). Workload knobs come from
spec.options (active_keys, ops_per_key, read_fraction, active_names, ops_per_name, describe_topics)
and the availability thresholds from `availability_*` options (see `add_workload_arguments`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from jepsen_py.workloads import knobs
from jepsen_py.workloads.append import append_workload
from jepsen_py.workloads.client import MetadataClient
from jepsen_py.workloads.common import replication_factor
from jepsen_py.workloads.describe import describe_workload
from jepsen_py.workloads.kafka import kafka_workload
from jepsen_py.workloads.metadata import metadata_workload
from jepsen_py.workloads.offsets import offsets_workload
from jepsen_py.workloads.queues import queue_workload
from jepsen_py.workloads.register import register_workload
from jepsen_py.workloads.sets import set_workload
from jepsen_py.workloads.topics import topics_workload
from jepsen_py.workloads.txn import list_append_workload, rw_register_workload

from jepsen_py.errors import BadInput
from jepsen_py.numbers import MAX_SECONDS, number
from jepsen_py.protocols import Client, TestSpec
from jepsen_py.workload import Workload


def _offsets(spec: TestSpec) -> Workload:
    return offsets_workload(spec)


def _topics(spec: TestSpec) -> Workload:
    return topics_workload(spec)


def _describe(spec: TestSpec) -> Workload:
    return describe_workload(spec)


def _metadata(spec: TestSpec) -> Workload:
    return metadata_workload(spec)


def _register(spec: TestSpec) -> Workload:
    return register_workload(spec)


def _set(spec: TestSpec) -> Workload:
    return set_workload(spec)


def _append(spec: TestSpec) -> Workload:
    return append_workload(spec)


def _queue(spec: TestSpec) -> Workload:
    return queue_workload(spec)


def _list_append(spec: TestSpec) -> Workload:
    return list_append_workload(spec)


def _rw_register(spec: TestSpec) -> Workload:
    return rw_register_workload(spec)


def _kafka(spec: TestSpec) -> Workload:
    return kafka_workload(spec)


WORKLOADS: dict[str, Callable[[TestSpec], Workload]] = {
    "offsets": _offsets,
    "topics": _topics,
    "describe": _describe,
    "metadata": _metadata,
    "register": _register,
    "set": _set,
    "append": _append,
    "queue": _queue,
    "list-append": _list_append,
    "rw-register": _rw_register,
    "kafka": _kafka,
}
# Workloads our own cluster serves (cluster_client); the generic ones need a DB that speaks them.
CLUSTER_WORKLOADS = ("offsets", "topics", "describe", "metadata")
# The transactional workloads our cluster also serves (its "txn" request: one Raft entry each).
CLUSTER_TXN_WORKLOADS = ("list-append", "rw-register")
# Workloads that create topics, each asking for replication_factor(nodes) copies.
CREATES_TOPICS = ("topics", "describe", "metadata")


def min_nodes(workload_name: str, node_count: int) -> int:
    """The fewest nodes a run of `workload_name` recorded on `node_count` nodes still means the same
    thing on: its creates asked for as many copies as the cluster then allowed, and a cluster smaller
    than that refuses them (a different failure from whatever the run showed)."""
    if workload_name in CREATES_TOPICS:
        return replication_factor(node_count)
    return 1


def cluster_client(workload_name: str, db: Any) -> Client:
    """The client template for our metadata cluster for `workload_name`."""
    if workload_name not in (*CLUSTER_WORKLOADS, *CLUSTER_TXN_WORKLOADS):
        raise BadInput(f"--workload: the cluster has no client for {workload_name!r} "
                       f"(choose from {', '.join((*CLUSTER_WORKLOADS, *CLUSTER_TXN_WORKLOADS))})")
    return MetadataClient(port=int(getattr(db, "CLIENT_PORT", 9092)))


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for the run command whose values land in spec.options under the same names
    (dest availability_max_recovery_s etc.); a negative threshold switches that check off."""
    w = parser.add_argument_group("workload plugins and knobs")
    w.add_argument("--checker", dest="checkers", action="append", default=None, metavar="MODULE:FUNC",
                   help="an extra checker, FUNC(spec) -> Checker, or a 'jepsen_py.checker' entry point; "
                        "repeatable")
    w.add_argument("--generator", default=None, metavar="MODULE:FUNC",
                   help="replace the workload's main generator with FUNC(spec), or a "
                        "'jepsen_py.generator' entry point")
    w.add_argument("--workload-option", dest="workload_option", action="append", default=None,
                   metavar="KEY=VALUE",
                   help="a workload knob (e.g. active_keys=4, read_fraction=0.8); VALUE is read as "
                        "JSON when it parses, else as text; repeatable")
    g = parser.add_argument_group("availability thresholds (fail the run when broken)")
    g.add_argument("--availability-max-recovery-s", dest="availability_max_recovery_s",
                   type=number(0, MAX_SECONDS),
                   default=30.0, metavar="S",
                   help="an ok op must follow the heal within S seconds (default 30)")
    g.add_argument("--availability-min-ok-fraction", dest="availability_min_ok_fraction", type=number(0, 1),
                   default=None, metavar="F", help="fail if fewer than F of all ops were ok (default off)")
    g.add_argument("--availability-max-unavailable-s", dest="availability_max_unavailable_s",
                   type=number(0, MAX_SECONDS, lo_open=True),
                   default=None, metavar="S", help="fail if no op succeeded for S seconds (default off)")
    g.add_argument("--availability-max-terms-per-minute", dest="availability_max_terms_per_minute",
                   type=number(0, 1e9, lo_open=True), default=120.0, metavar="N",
                   help="fail on election churn: terms growing faster than N per minute (default 120)")


WORKLOAD_OPTIONS = ("availability_max_recovery_s", "availability_min_ok_fraction",
                    "availability_max_unavailable_s", "availability_max_terms_per_minute")


def workload_options(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of the flags `add_workload_arguments` added (for TestSpec.options)."""
    out = {d: getattr(args, d) for d in WORKLOAD_OPTIONS if hasattr(args, d)}
    if getattr(args, "checkers", None):
        out["checkers"] = list(args.checkers)
    if getattr(args, "generator", None):
        out["generator"] = args.generator
    given: set[str] = set()
    for item in getattr(args, "workload_option", None) or []:
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise BadInput(f"--workload-option: expected KEY=VALUE, got {item!r}")
        key = key.strip()
        if key in given:
            raise BadInput(f"--workload-option: {key} given more than once")
        given.add(key)
        out[key] = knobs.check(key, knobs.parse_value(text))
    return out
