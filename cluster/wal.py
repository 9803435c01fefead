"""The write-ahead log: term, vote and entries are durable (fsync'd) before the node acts on them.

One append-only file, `wal.log`, of CRC-checked records:

    [u32 length][u32 crc32(type + payload)][u8 type][payload: compact JSON]

Record types: META (cluster id and node id, always first), HARDSTATE (term, vote, commit), ENTRIES (a
batch of consecutive entries) and SNAPSHOT (the log now starts after this index). Replay rules:

- An ENTRIES record starting at index i replaces every entry from i on (a leader overwrote a
  conflicting suffix); so recovery holds exactly one entry per index, the newest.
- A record cut short or failing its CRC at the very end of the file is a torn write from a crash
  (never acknowledged, because the fsync had not returned): it is cut off and logged. The same damage
  with a valid record after it is corruption of durable data: the node refuses to start.
- META names the cluster: a data dir from another cluster, or another node's, refuses to start.

Compaction rewrites the file atomically (temp file, fsync, rename, fsync dir) with the entries after
the latest snapshot, so restart time stays bounded by the snapshot interval.
"""

from __future__ import annotations

import itertools
import json
import posixpath
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .bugs import NO_BUGS, Bugs
from .framing import dumps
from .io import AppendFile, Disk
from .raft.messages import Entry, HardState

WAL_NAME = "wal.log"
HEADER = struct.Struct(">IIB")  # length of payload, crc32 of type byte + payload, type
MAX_RECORD = 256 << 20

META, HARDSTATE, ENTRIES, SNAPSHOT = 1, 2, 3, 4
RECORD_NAMES = {META: "meta", HARDSTATE: "hardstate", ENTRIES: "entries", SNAPSHOT: "snapshot"}


class WALError(Exception):
    """The WAL cannot be used; the message says what is wrong and where. The node refuses to start."""


class ClusterMismatch(WALError):
    """The data dir belongs to another cluster or another node."""


@dataclass
class Recovered:
    """What replaying the WAL yields: the durable state as of the last fsync that completed."""

    hard_state: HardState = field(default_factory=HardState)
    snapshot_index: int = 0
    snapshot_term: int = 0
    entries: list[Entry] = field(default_factory=list)
    torn_bytes: int = 0
    records: int = 0


def _crc(rtype: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(bytes((rtype,))))


def encode_record(rtype: int, body: Any) -> bytes:
    payload = dumps(body).encode()
    return HEADER.pack(len(payload), _crc(rtype, payload), rtype) + payload


def _record_at(buf: bytes, off: int) -> tuple[int, bytes, int] | None:
    """(type, payload, next offset) of a well-formed record at `off`, or None."""
    if off + HEADER.size > len(buf):
        return None
    length, crc, rtype = HEADER.unpack_from(buf, off)
    end = off + HEADER.size + length
    if rtype not in RECORD_NAMES or length > MAX_RECORD or end > len(buf):
        return None
    payload = buf[off + HEADER.size : end]
    if _crc(rtype, payload) != crc:
        return None
    return rtype, payload, end


def _valid_record_after(buf: bytes, off: int) -> int | None:
    """Offset of some well-formed record past `off`: proof that damage at `off` is not a torn tail."""
    for j in range(off + 1, len(buf) - HEADER.size + 1):
        length, _crc_v, rtype = HEADER.unpack_from(buf, j)
        if rtype in RECORD_NAMES and j + HEADER.size + length <= len(buf) and _record_at(buf, j):
            return j
    return None


def _entries_from(body: Any, where: str) -> list[Entry]:
    if not isinstance(body, list):
        raise WALError(f"{where}: entries record is not a list")
    out = []
    for item in body:
        if (
            not isinstance(item, list)
            or len(item) != 3
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in item[:2])
            or not (item[2] is None or isinstance(item[2], dict))
        ):
            raise WALError(f"{where}: malformed entry {str(item)[:80]}")
        out.append(Entry(term=item[0], index=item[1], data=item[2]))
    for a, b in itertools.pairwise(out):
        if b.index != a.index + 1:
            raise WALError(f"{where}: entries record is not consecutive ({a.index} then {b.index})")
    return out


def replay_entries(log: list[Entry], batch: list[Entry], snapshot_index: int, where: str,
                   bugs: Bugs = NO_BUGS) -> None:
    """Applies one ENTRIES record to the replayed log: the batch replaces every entry from its first
    index on, which is how a truncated conflicting suffix disappears.

    Under the recovery-duplicates bug every version of an index is kept, so the recovered log is
    longer than its index range and `first + len - 1` overstates the last index, as Chronik's
    recovery did before its dedup fix."""
    batch = [e for e in batch if e.index > snapshot_index]
    if not batch:
        return
    if bugs.recovery_duplicates:
        log.extend(batch)
        return
    first = batch[0].index
    next_index = log[-1].index + 1 if log else snapshot_index + 1
    if first > next_index:
        raise WALError(f"{where}: gap in the log: entry {first} follows entry {next_index - 1}")
    keep = first - (log[0].index if log else snapshot_index + 1)
    del log[keep:]
    log.extend(batch)


class WAL:
    """An open write-ahead log. Not thread-safe: the node drives it from its one event loop."""

    def __init__(self, disk: Disk, path: str, cluster_id: str, node_id: str, fsync: bool) -> None:
        self.disk = disk
        self.path = path
        self._file: AppendFile | None = disk.open_append(path)
        self.cluster_id = cluster_id
        self.node_id = node_id
        self.fsync_enabled = fsync
        self.bytes_since_rewrite = 0
        self.syncs = 0

    # ---- opening ----------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        disk: Disk,
        data_dir: str,
        cluster_id: str,
        node_id: str,
        log: Callable[[str], None] = lambda _m: None,
        fsync: bool = True,
        bugs: Bugs = NO_BUGS,
    ) -> tuple[WAL, Recovered]:
        """Opens (or creates) the WAL in data_dir and replays it.

        Raises ClusterMismatch for another cluster's or node's data dir and WALError for corruption
        that is not a torn tail.
        """
        disk.makedirs(data_dir)
        path = posixpath.join(data_dir, WAL_NAME)
        if not disk.exists(path):
            tmp = path + ".tmp"
            header = encode_record(META, {"cluster_id": cluster_id, "node_id": node_id})
            disk.write_file(tmp, header, sync=True)
            disk.rename(tmp, path)
            disk.sync_dir(data_dir)
            log(f"wal: created {path} for cluster {cluster_id} node {node_id}")
        buf = disk.read_bytes(path)
        rec = cls._replay(buf, path, cluster_id, node_id, bugs)
        if rec.torn_bytes:
            good = len(buf) - rec.torn_bytes
            disk.truncate(path, good, sync=True)
            log(
                f"wal: cut a torn tail of {rec.torn_bytes} bytes at offset {good} of {path} (crash mid-write)"
            )
        wal = cls(disk, path, cluster_id, node_id, fsync)
        log(
            f"wal: replayed {rec.records} records: term {rec.hard_state.term} vote {rec.hard_state.vote} "
            f"commit {rec.hard_state.commit}, snapshot {rec.snapshot_index}, "
            f"entries {rec.entries[0].index if rec.entries else '-'}.."
            f"{rec.entries[-1].index if rec.entries else '-'}"
        )
        return wal, rec

    @staticmethod
    def _replay(buf: bytes, path: str, cluster_id: str, node_id: str, bugs: Bugs = NO_BUGS) -> Recovered:
        rec = Recovered()
        off = 0
        while off < len(buf):
            got = _record_at(buf, off)
            if got is None:
                later = _valid_record_after(buf, off)
                if later is not None:
                    raise WALError(
                        f"{path}: corrupt record at offset {off} followed by valid data at offset {later}: "
                        "refusing to start (durable data damaged; restore this node from its peers)"
                    )
                if off == 0:
                    raise WALError(f"{path}: no valid header record: not a jepsen-py WAL or damaged")
                rec.torn_bytes = len(buf) - off
                break
            rtype, payload, end = got
            where = f"{path} record at offset {off}"
            try:
                body = json.loads(payload)
            except ValueError:
                raise WALError(f"{where}: CRC matches but payload is not JSON") from None
            if rec.records == 0:
                if rtype != META or not isinstance(body, dict):
                    raise WALError(f"{path}: first record is not the cluster header")
                if body.get("cluster_id") != cluster_id:
                    raise ClusterMismatch(
                        f"{path} belongs to cluster {body.get('cluster_id')!r}, not {cluster_id!r}: "
                        "refusing to start (use an empty --data-dir for a new cluster)"
                    )
                if body.get("node_id") != node_id:
                    raise ClusterMismatch(
                        f"{path} belongs to node {body.get('node_id')!r}, not {node_id!r}: refusing to start"
                    )
            elif rtype == HARDSTATE:
                try:
                    rec.hard_state = HardState.from_dict(body)
                except ValueError as e:
                    raise WALError(f"{where}: bad hard state: {e}") from None
            elif rtype == ENTRIES:
                replay_entries(rec.entries, _entries_from(body, where), rec.snapshot_index, where, bugs)
            elif rtype == SNAPSHOT:
                if not isinstance(body, dict) or not all(
                    isinstance(body.get(k), int) for k in ("index", "term")
                ):
                    raise WALError(f"{where}: bad snapshot marker")
                idx = body["index"]
                if idx >= rec.snapshot_index:
                    rec.snapshot_index, rec.snapshot_term = idx, body["term"]
                    rec.entries = [e for e in rec.entries if e.index > idx]
                    if rec.entries and rec.entries[0].index != idx + 1:
                        rec.entries = []
            else:
                raise WALError(f"{where}: unexpected record type {rtype}")
            rec.records += 1
            off = end
        return rec

    # ---- writing ----------------------------------------------------------------------------------

    def save(self, hard_state: HardState | None, entries: Sequence[Entry], sync: bool = True) -> None:
        """Appends entries (replacing the stored suffix from entries[0].index) and the hard state,
        then fsyncs once: the batched fsync of one Ready."""
        parts = []
        if entries:
            # an Entry is a tuple, which JSON encodes as the record's [term, index, data]
            parts.append(encode_record(ENTRIES, list(entries)))
        if hard_state is not None:
            parts.append(encode_record(HARDSTATE, hard_state.to_dict()))
        if not parts:
            return
        data = b"".join(parts)
        f = self._open_file()
        f.write(data)
        self.bytes_since_rewrite += len(data)
        if sync and self.fsync_enabled:
            f.sync()
            self.syncs += 1

    def rewrite(
        self, snapshot_index: int, snapshot_term: int, hard_state: HardState, entries: Sequence[Entry]
    ) -> None:
        """Atomically replaces the WAL by: header, snapshot marker, hard state, `entries` (those after
        the snapshot). Called after the snapshot file itself is durable."""
        tmp = self.path + ".tmp"
        parts = [
            encode_record(META, {"cluster_id": self.cluster_id, "node_id": self.node_id}),
            encode_record(SNAPSHOT, {"index": snapshot_index, "term": snapshot_term}),
            encode_record(HARDSTATE, hard_state.to_dict()),
        ]
        ents = [e for e in entries if e.index > snapshot_index]
        for i in range(0, len(ents), 512):
            parts.append(encode_record(ENTRIES, ents[i : i + 512]))
        self.disk.write_file(tmp, b"".join(parts), sync=self.fsync_enabled)
        self.close()
        self.disk.rename(tmp, self.path)
        if self.fsync_enabled:
            self.disk.sync_dir(posixpath.dirname(self.path) or ".")
        self._file = self.disk.open_append(self.path)
        self.bytes_since_rewrite = 0

    def _open_file(self) -> AppendFile:
        if self._file is None:
            raise WALError(f"{self.path}: the WAL is closed")
        return self._file

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
