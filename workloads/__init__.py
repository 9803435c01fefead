"""Workloads: what clients do to the system and how their history is checked (DESIGN.md section 7).

  offsets   commit_offset / fetch_offset per (group, topic, partition): register, unique values
  topics    create_topic races on shared names, describe, list: create-if-absent
  describe  describe_topic on every node while the leader moves: one leader per partition and epoch
  metadata  all of the above mixed

`WORKLOADS[name](spec)` builds a Workload; `cluster_client(name, db)` is the client template for OUR
cluster (cluster/db.py's RaftMetadataDB.client delegates here). Workload knobs come from
spec.options (active_keys, ops_per_key, read_fraction, active_names, ops_per_name, describe_topics)
and the availability thresholds from `availability_*` options (see `add_workload_arguments`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from jepsen_py.errors import BadInput
from jepsen_py.protocols import Client, TestSpec
from jepsen_py.workload import Workload


def _offsets(spec: TestSpec) -> Workload:
    from workloads.offsets import offsets_workload

    return offsets_workload(spec)


def _topics(spec: TestSpec) -> Workload:
    from workloads.topics import topics_workload

    return topics_workload(spec)


def _describe(spec: TestSpec) -> Workload:
    from workloads.describe import describe_workload

    return describe_workload(spec)


def _metadata(spec: TestSpec) -> Workload:
    from workloads.metadata import metadata_workload

    return metadata_workload(spec)


WORKLOADS: dict[str, Callable[[TestSpec], Workload]] = {
    "offsets": _offsets,
    "topics": _topics,
    "describe": _describe,
    "metadata": _metadata,
}


def cluster_client(workload_name: str, db: Any) -> Client:
    """The client template for our metadata cluster for `workload_name`."""
    from workloads.client import MetadataClient

    if workload_name not in WORKLOADS:
        raise BadInput(f"--workload: the cluster has no client for {workload_name!r} "
                       f"(choose from {', '.join(WORKLOADS)})")
    return MetadataClient(port=int(getattr(db, "CLIENT_PORT", 9092)))


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for the run command whose values land in spec.options under the same names
    (dest availability_max_recovery_s etc.); a negative threshold switches that check off."""
    g = parser.add_argument_group("availability thresholds (fail the run when broken)")
    g.add_argument("--availability-max-recovery-s", dest="availability_max_recovery_s", type=float,
                   default=30.0, metavar="S",
                   help="an ok op must follow the heal within S seconds (default 30)")
    g.add_argument("--availability-min-ok-fraction", dest="availability_min_ok_fraction", type=float,
                   default=None, metavar="F", help="fail if fewer than F of all ops were ok (default off)")
    g.add_argument("--availability-max-unavailable-s", dest="availability_max_unavailable_s", type=float,
                   default=None, metavar="S", help="fail if no op succeeded for S seconds (default off)")
    g.add_argument("--availability-max-terms-per-minute", dest="availability_max_terms_per_minute",
                   type=float, default=120.0, metavar="N",
                   help="fail on election churn: terms growing faster than N per minute (default 120)")


WORKLOAD_OPTIONS = ("availability_max_recovery_s", "availability_min_ok_fraction",
                    "availability_max_unavailable_s", "availability_max_terms_per_minute")


def workload_options(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of the flags `add_workload_arguments` added (for TestSpec.options)."""
    return {d: getattr(args, d) for d in WORKLOAD_OPTIONS if hasattr(args, d)}
