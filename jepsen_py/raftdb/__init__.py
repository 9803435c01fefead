"""Our Raft metadata cluster (the `cluster` package, uploaded to nodes) as seen from the controller.

`RaftMetadataDB` is the DB the command line names by default (`--db jepsen_py.raftdb:RaftMetadataDB`;
the older `cluster.db:RaftMetadataDB` is an alias); `client` is the blocking wire client the workloads
and the observer speak to a node with; `local` runs a cluster of real node processes on loopback.
Everything that runs on a node stays in `cluster` and imports nothing from here.
"""

from __future__ import annotations

from jepsen_py.raftdb.db import RaftMetadataDB

__all__ = ["RaftMetadataDB"]
