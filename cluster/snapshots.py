"""Snapshot files: the state machine's image at some index, written atomically.

Each snapshot is one file `snap-<index>.snap` holding one CRC-checked record (the WAL's format) with
the cluster id, index, term, peers and the state. It is written to a temp file, fsync'd, renamed into
place and the directory fsync'd, so a crash leaves either the old set of snapshots or the new one,
never a half file under a snapshot's name. The WAL is compacted only after that, so the log entries a
snapshot replaces are never gone before the snapshot is durable.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import re
from collections.abc import Callable

from .io import Disk
from .raft.messages import MessageDecodeError, Snapshot
from .wal import SNAPSHOT, WALError, _record_at, encode_record

SNAP_RECORD = SNAPSHOT  # the same record format as the WAL; one record per file
NAME = re.compile(r"^snap-(\d{20})\.snap$")
KEEP = 2


def _path(data_dir: str, index: int) -> str:
    return posixpath.join(data_dir, f"snap-{index:020d}.snap")


def save(disk: Disk, data_dir: str, cluster_id: str, snap: Snapshot, fsync: bool = True) -> str:
    """Writes `snap` durably and atomically; removes all but the newest KEEP snapshot files."""
    body = {"cluster_id": cluster_id, **snap.to_dict()}
    final = _path(data_dir, snap.index)
    tmp = final + ".tmp"
    disk.write_file(tmp, encode_record(SNAP_RECORD, body), sync=fsync)
    disk.rename(tmp, final)
    if fsync:
        disk.sync_dir(data_dir)
    for old in list_indexes(disk, data_dir)[:-KEEP]:
        with contextlib.suppress(FileNotFoundError):
            disk.remove(_path(data_dir, old))
    return final


def list_indexes(disk: Disk, data_dir: str) -> list[int]:
    """Indexes of the snapshot files present, oldest first."""
    try:
        names = disk.listdir(data_dir)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for n in names if (m := NAME.match(n)))


def read(disk: Disk, path: str, cluster_id: str) -> Snapshot:
    """The snapshot in `path`; WALError if it is damaged or from another cluster."""
    buf = disk.read_bytes(path)
    got = _record_at(buf, 0)
    if got is None or got[0] != SNAP_RECORD or got[2] != len(buf):
        raise WALError(f"{path}: damaged snapshot file (bad length or CRC)")
    try:
        body = json.loads(got[1])
        if body.get("cluster_id") != cluster_id:
            raise WALError(f"{path}: snapshot of cluster {body.get('cluster_id')!r}, not {cluster_id!r}")
        return Snapshot.from_dict(body)
    except (ValueError, AttributeError, MessageDecodeError) as e:
        raise WALError(f"{path}: malformed snapshot: {e}") from None


def load_newest(
    disk: Disk,
    data_dir: str, cluster_id: str, at_least: int, log: Callable[[str], None] = lambda _m: None
) -> Snapshot | None:
    """The newest readable snapshot with index >= at_least (the WAL's compaction point).

    A damaged newer file is logged and skipped; if nothing readable covers `at_least`, the entries
    the WAL dropped are gone, so this raises WALError and the node refuses to start.
    """
    for index in reversed(list_indexes(disk, data_dir)):
        if index < at_least:
            break
        try:
            return read(disk, _path(data_dir, index), cluster_id)
        except (OSError, WALError) as e:
            log(f"snapshots: skipping unreadable snapshot: {e}")
    if at_least > 0:
        raise WALError(
            f"{data_dir}: the WAL starts after index {at_least} but no readable snapshot covers it: "
            "refusing to start"
        )
    return None

