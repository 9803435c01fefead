"""WAL and snapshot files: durability rules, torn tails, corruption, cluster identity, compaction."""

from __future__ import annotations

import os

import pytest
from jepsen_py.cluster import snapshots
from jepsen_py.cluster.raft.messages import Entry, HardState, Snapshot
from jepsen_py.cluster.realio import OSDisk
from jepsen_py.cluster.wal import ENTRIES, WAL, WAL_NAME, ClusterMismatch, WALError, encode_record

DISK = OSDisk()


def ents(term: int, lo: int, hi: int) -> list[Entry]:
    return [Entry(term=term, index=i, data={"op": "noop", "i": i, "t": term}) for i in range(lo, hi + 1)]


def reopen(d: str, logs: list[str] | None = None):
    wal, rec = WAL.open(DISK, d, "c1", "n1", log=(logs.append if logs is not None else lambda _m: None))
    wal.close()
    return rec


def test_fresh_dir_recovers_empty_state(tmp_path):
    wal, rec = WAL.open(DISK, str(tmp_path), "c1", "n1")
    wal.close()
    assert rec.hard_state == HardState()
    assert rec.entries == [] and rec.snapshot_index == 0 and rec.torn_bytes == 0


def test_entries_and_hard_state_survive_reopen(tmp_path):
    d = str(tmp_path)
    wal, _ = WAL.open(DISK, d, "c1", "n1")
    wal.save(HardState(term=1, vote="n1", commit=0), ents(1, 1, 5))
    wal.save(HardState(term=1, vote="n1", commit=5), [])
    wal.close()
    rec = reopen(d)
    assert rec.hard_state == HardState(term=1, vote="n1", commit=5)
    assert [e.index for e in rec.entries] == [1, 2, 3, 4, 5]
    assert rec.entries[2].data == {"op": "noop", "i": 3, "t": 1}


def test_conflicting_suffix_is_replaced_exactly_one_entry_per_index(tmp_path):
    d = str(tmp_path)
    wal, _ = WAL.open(DISK, d, "c1", "n1")
    wal.save(HardState(term=1), ents(1, 1, 10))
    # a new leader of term 2 overwrites from index 6 with a shorter suffix
    wal.save(HardState(term=2), ents(2, 6, 7))
    wal.save(None, ents(2, 8, 8))
    wal.close()
    rec = reopen(d)
    expected = [(i, 1) for i in range(1, 6)] + [(6, 2), (7, 2), (8, 2)]
    assert [(e.index, e.term) for e in rec.entries] == expected
    assert len({e.index for e in rec.entries}) == len(rec.entries)


def test_gap_in_log_is_refused(tmp_path):
    d = str(tmp_path)
    wal, _ = WAL.open(DISK, d, "c1", "n1")
    wal.save(HardState(term=1), ents(1, 1, 3))
    wal.save(None, ents(1, 7, 8))
    wal.close()
    with pytest.raises(WALError, match="gap"):
        reopen(d)


@pytest.mark.parametrize("cut", [1, 5, 9, 20])
def test_torn_tail_is_cut_and_logged(tmp_path, cut):
    d = str(tmp_path)
    wal, _ = WAL.open(DISK, d, "c1", "n1")
    wal.save(HardState(term=1, vote="n1"), ents(1, 1, 3))
    size_before = os.path.getsize(os.path.join(d, WAL_NAME))
    wal.save(HardState(term=1, vote="n1", commit=3), ents(1, 4, 6))
    wal.close()
    path = os.path.join(d, WAL_NAME)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - cut)
    logs: list[str] = []
    rec = reopen(d, logs)
    assert rec.torn_bytes > 0
    assert any("torn tail" in m for m in logs)
    # the first batch is intact; the torn record and anything after it is gone
    assert [e.index for e in rec.entries][:3] == [1, 2, 3]
    assert os.path.getsize(path) >= size_before
    # a second open sees a clean file
    assert reopen(d).torn_bytes == 0


def test_zero_filled_tail_counts_as_torn(tmp_path):
    d = str(tmp_path)
    wal, _ = WAL.open(DISK, d, "c1", "n1")
    wal.save(HardState(term=3), ents(3, 1, 2))
    wal.close()
    with open(os.path.join(d, WAL_NAME), "ab") as f:
        f.write(b"\0" * 4096)
    rec = reopen(d)
    assert rec.torn_bytes == 4096 and [e.index for e in rec.entries] == [1, 2]


def test_corrupt_record_in_the_middle_refuses_to_start(tmp_path):
    d = str(tmp_path)
    wal, _ = WAL.open(DISK, d, "c1", "n1")
    wal.save(HardState(term=1), ents(1, 1, 3))
    mid = os.path.getsize(os.path.join(d, WAL_NAME))
    wal.save(HardState(term=1, commit=2), ents(1, 4, 6))
    wal.save(HardState(term=1, commit=6), ents(1, 7, 9))
    wal.close()
    path = os.path.join(d, WAL_NAME)
    with open(path, "r+b") as f:
        f.seek(mid + 20)
        b = f.read(1)
        f.seek(mid + 20)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(WALError, match="corrupt record at offset"):
        reopen(d)


def test_data_dir_of_another_cluster_or_node_refuses(tmp_path):
    d = str(tmp_path)
    WAL.open(DISK, d, "c1", "n1")[0].close()
    with pytest.raises(ClusterMismatch, match="belongs to cluster 'c1'"):
        WAL.open(DISK, d, "c2", "n1")
    with pytest.raises(ClusterMismatch, match="belongs to node 'n1'"):
        WAL.open(DISK, d, "c1", "n2")


def test_garbage_file_is_not_a_wal(tmp_path):
    with open(tmp_path / WAL_NAME, "wb") as f:
        f.write(b"hello, this is not a write-ahead log at all" * 10)
    with pytest.raises(WALError, match="not a jepsen-py WAL"):
        WAL.open(DISK, str(tmp_path), "c1", "n1")


def test_rewrite_compacts_and_keeps_the_tail(tmp_path):
    d = str(tmp_path)
    wal, _ = WAL.open(DISK, d, "c1", "n1")
    wal.save(HardState(term=2, vote="n2", commit=90), ents(2, 1, 100))
    big = os.path.getsize(os.path.join(d, WAL_NAME))
    snap = Snapshot(index=90, term=2, peers=("n1", "n2", "n3"), data={"x": 1})
    snapshots.save(DISK, d, "c1", snap)
    wal.rewrite(90, 2, HardState(term=2, vote="n2", commit=90), ents(2, 1, 100))
    wal.save(None, ents(2, 101, 102))
    wal.close()
    assert os.path.getsize(os.path.join(d, WAL_NAME)) < big
    rec = reopen(d)
    assert rec.snapshot_index == 90 and rec.snapshot_term == 2
    assert [e.index for e in rec.entries] == list(range(91, 103))
    assert rec.hard_state.commit == 90
    loaded = snapshots.load_newest(DISK, d, "c1", rec.snapshot_index)
    assert loaded == snap


def test_snapshot_files_are_atomic_and_pruned(tmp_path):
    d = str(tmp_path)
    for i in (10, 20, 30, 40):
        snapshots.save(DISK, d, "c1", Snapshot(index=i, term=1, peers=("n1",), data={"i": i}))
    assert snapshots.list_indexes(DISK, d) == [30, 40]
    assert not [n for n in os.listdir(d) if n.endswith(".tmp")]
    # a damaged newest snapshot is skipped in favour of the older one when that still covers the WAL
    newest = os.path.join(d, f"snap-{40:020d}.snap")
    with open(newest, "r+b") as f:
        f.seek(12)
        f.write(b"X")
    logs: list[str] = []
    assert snapshots.load_newest(DISK, d, "c1", 30, log=logs.append).index == 30
    assert any("unreadable" in m for m in logs)
    # but not when the WAL was compacted past it
    with pytest.raises(WALError, match="no readable snapshot"):
        snapshots.load_newest(DISK, d, "c1", 40)
    with pytest.raises(WALError, match="not 'c2'"):
        snapshots.read(DISK, os.path.join(d, f"snap-{30:020d}.snap"), "c2")


# ---- property: any crash point recovers exactly the log of the records written whole ------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def save_scripts(draw):
    """A sequence of (first index, count, term) appends, each at or before the log's end, with terms
    that never decrease (a new leader overwriting a suffix has a higher term)."""
    last, term, script = 0, 1, []
    for _ in range(draw(st.integers(1, 12))):
        first = draw(st.integers(max(1, last - 4), last + 1))
        term = term + draw(st.integers(0, 1))
        count = draw(st.integers(0, 5))
        script.append((first, count, term))
        if count:
            last = first + count - 1
    return script


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=save_scripts(), cut_seed=st.integers(0, 10**6))
def test_any_torn_write_recovers_the_log_of_whole_records(tmp_path_factory, script, cut_seed):
    import random

    d = str(tmp_path_factory.mktemp("prop"))
    wal, _ = WAL.open(DISK, d, "c1", "n1")
    path = os.path.join(d, WAL_NAME)
    model: list[Entry] = []
    # after each save: (file size before it, size once its ENTRIES record is whole, model before, after)
    history = []
    for first, count, term in script:
        batch = [Entry(term, i, {"op": "noop", "t": term, "i": i}) for i in range(first, first + count)]
        before = os.path.getsize(path)
        entries_len = len(encode_record(ENTRIES, [[e.term, e.index, e.data] for e in batch])) if batch else 0
        wal.save(HardState(term=term, vote="n1"), batch)
        new_model = model[: first - 1] + batch if batch else model
        history.append((before, before + entries_len, model, new_model))
        model = new_model
    wal.close()
    assert reopen(d).entries == model  # undamaged: the whole log comes back
    # a crash tore the final save somewhere inside it: its entries survive iff their record is whole
    before, entries_end, old_model, new_model = history[-1]
    cut = random.Random(cut_seed).randrange(before, os.path.getsize(path))
    with open(path, "r+b") as f:
        f.truncate(cut)
    rec = reopen(d)
    assert rec.entries == (new_model if cut >= entries_end else old_model)
    assert [e.index for e in rec.entries] == list(range(1, len(rec.entries) + 1))


def test_a_record_is_length_crc_type_then_compact_json():
    import json
    import zlib

    from jepsen_py.cluster.wal import ENTRIES, HEADER, encode_record

    body = [[3, 7, {"op": "commit_offset", "topic": "é", "offset": 5}], [3, 8, None]]
    rec = encode_record(ENTRIES, body)
    payload = json.dumps(body, separators=(",", ":")).encode()
    assert rec[HEADER.size:] == payload
    length, crc, rtype = HEADER.unpack_from(rec)
    assert (length, rtype) == (len(payload), ENTRIES)
    assert crc == zlib.crc32(payload, zlib.crc32(bytes((ENTRIES,))))
