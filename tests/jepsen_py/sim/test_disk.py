"""The simulated disk: what a crash keeps (synced data, synced names) and loses, and the real WAL on it."""

from __future__ import annotations

import random

import pytest
from jepsen_py.cluster.raft.messages import Entry, HardState
from jepsen_py.cluster.wal import WAL

from jepsen_py.sim.disk import DiskProfile, SimDisk

NO_TEARS = DiskProfile(torn_p=0.0)


def disk(seed: int = 1, profile: DiskProfile = NO_TEARS) -> tuple[SimDisk, list[float]]:
    charged: list[float] = []
    d = SimDisk(random.Random(seed), profile, charge=charged.append)
    d.makedirs("/data")
    return d, charged


def durable_file(d: SimDisk, path: str, data: bytes) -> None:
    d.write_file(path, data, sync=True)
    d.sync_dir("/data")


def test_unsynced_appends_are_lost_synced_ones_kept() -> None:
    d, charged = disk()
    durable_file(d, "/data/f", b"")
    f = d.open_append("/data/f")
    f.write(b"kept")
    f.sync()
    f.write(b"lost")
    assert d.read_bytes("/data/f") == b"keptlost"
    d.crash()
    assert d.read_bytes("/data/f") == b"kept"
    assert len(charged) == 3 and all(c > 0 for c in charged)  # write_file, sync_dir, sync
    with pytest.raises(OSError):
        f.write(b"from a dead process")


def test_a_torn_tail_is_a_prefix_of_the_unsynced_data_same_seed_same_tear() -> None:
    def tear(seed: int) -> bytes:
        d, _ = disk(seed, DiskProfile(torn_p=1.0))
        durable_file(d, "/data/f", b"head")
        f = d.open_append("/data/f")
        f.write(b"0123456789" * 10)
        d.crash()
        return d.read_bytes("/data/f")

    tears = {tear(s) for s in range(20)}
    assert all(t.startswith(b"head") and (b"head" + b"0123456789" * 10).startswith(t) for t in tears)
    assert len(tears) > 1
    assert tear(3) == tear(3)


def test_creates_and_renames_are_durable_only_after_sync_dir() -> None:
    d, _ = disk()
    durable_file(d, "/data/old", b"v1")
    d.write_file("/data/new.tmp", b"v2", sync=True)
    d.rename("/data/new.tmp", "/data/old")
    d.write_file("/data/other", b"x", sync=True)
    assert d.listdir("/data") == ["old", "other"]
    d.crash()
    assert d.listdir("/data") == ["old"]
    assert d.read_bytes("/data/old") == b"v1"

    d.write_file("/data/new.tmp", b"v2", sync=True)
    d.rename("/data/new.tmp", "/data/old")
    d.sync_dir("/data")
    d.crash()
    assert d.read_bytes("/data/old") == b"v2"
    assert not d.exists("/data/new.tmp")


def test_an_unsynced_remove_is_undone_by_a_crash() -> None:
    d, _ = disk()
    durable_file(d, "/data/f", b"data")
    d.remove("/data/f")
    assert not d.exists("/data/f")
    d.crash()
    assert d.read_bytes("/data/f") == b"data"


def test_an_unsynced_overwrite_or_truncate_is_undone_by_a_crash() -> None:
    d, _ = disk()
    durable_file(d, "/data/f", b"0123456789")
    d.truncate("/data/f", 4, sync=False)
    assert d.read_bytes("/data/f") == b"0123"
    d.crash()
    assert d.read_bytes("/data/f") == b"0123456789"
    d.write_file("/data/f", b"new", sync=False)
    d.crash()
    assert d.read_bytes("/data/f") == b"0123456789"
    d.truncate("/data/f", 4, sync=True)
    d.crash()
    assert d.read_bytes("/data/f") == b"0123"


def test_lock_is_exclusive_until_the_process_dies() -> None:
    d, _ = disk()
    assert d.lock("/data/LOCK")
    assert not d.lock("/data/LOCK")
    d.crash()
    assert d.lock("/data/LOCK")


def test_missing_paths_raise_as_the_os_does() -> None:
    d, _ = disk()
    with pytest.raises(FileNotFoundError):
        d.read_bytes("/data/nope")
    with pytest.raises(FileNotFoundError):
        d.write_file("/nodir/f", b"", sync=False)
    with pytest.raises(FileNotFoundError):
        d.listdir("/nodir")


def test_io_error_fault_fails_writes_and_syncs() -> None:
    d, _ = disk()
    f = d.open_append("/data/f")
    d.io_error = True
    with pytest.raises(OSError):
        f.write(b"x")
    with pytest.raises(OSError):
        d.write_file("/data/g", b"x", sync=True)


def test_log_lines_survive_a_crash_but_a_dead_process_writes_none() -> None:
    d, _ = disk()
    log = d.open_log("/data/node.log")
    log("one")
    d.crash()
    log("from the dead process")
    d.open_log("/data/node.log")("two")
    assert d.logs()["/data/node.log"] == ["one", "two"]


def test_the_real_wal_recovers_exactly_what_was_synced() -> None:
    d, _ = disk()
    wal, rec = WAL.open(d, "/data", "c1", "n1")
    assert rec.entries == []
    wal.save(HardState(term=1, vote="n1", commit=0), [Entry(1, 1, {"op": "a"}), Entry(1, 2, {"op": "b"})])
    wal.save(HardState(term=1, vote="n1", commit=2), [Entry(1, 3, {"op": "c"})], sync=False)
    d.crash()
    _, rec = WAL.open(d, "/data", "c1", "n1")
    assert [e.index for e in rec.entries] == [1, 2]
    assert rec.hard_state == HardState(term=1, vote="n1", commit=0)


def test_the_real_wal_cuts_a_torn_tail_after_a_crash() -> None:
    for seed in range(10):
        d, _ = disk(seed, DiskProfile(torn_p=1.0))
        wal, _ = WAL.open(d, "/data", "c1", "n1")
        wal.save(HardState(term=1, commit=1), [Entry(1, 1, {"op": "a"})])
        wal.save(HardState(term=1, commit=2), [Entry(1, 2, {"op": "b" * 200})], sync=False)
        d.crash()
        _, rec = WAL.open(d, "/data", "c1", "n1")
        assert [e.index for e in rec.entries] in ([1], [1, 2])
