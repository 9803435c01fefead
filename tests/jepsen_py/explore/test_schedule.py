"""Schedule files: written, read back identical, and every damaged file refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jepsen_py.errors import BadInput
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.schedule import Event, Schedule, fault_windows, renumber_threads


def sample() -> Schedule:
    return Schedule(
        workload="offsets", nodes=["n1", "n2", "n3"], seed=7, time_limit=20.0, concurrency=2,
        read_mode="lease", bugs=["zombie-leader"], nemesis_interval=3.0,
        events=[Event(3.0, "nemesis", "start-partition", value="leader"),
                Event(1.0, 0, "commit", key=("g", "t", 0), value=1),
                Event(1.5, 1, "fetch", key=("g", "t", 0)),
                Event(6.0, "nemesis", "stop-partition"),
                Event(7.0, "nemesis", "kill", value="all"),
                Event(8.0, "nemesis", "pause", value="one")],
        final=[Event(0.0, 0, "fetch", key=("g", "t", 0), node="n2")], anomaly="stale-read")


def test_round_trip(tmp_path: Path) -> None:
    s = sample()
    path = sched.save(s, tmp_path / "schedule.json")
    back = sched.load(path)
    assert back == s
    assert back.size() == {"faults": 3, "nemesis_ops": 4, "client_ops": 2, "clients": 2, "keys": 1,
                           "nodes": 3, "time_limit": 20.0}
    assert back.families() == ["partition", "kill", "pause"]
    assert back.fault_targets() == ["all", "one"]


def test_windows_pair_each_start_with_the_stop_that_ends_it() -> None:
    ws = fault_windows(sample().events)
    assert [(w.family, w.start.at, w.stop.at if w.stop else None) for w in ws] == [
        ("partition", 3.0, 6.0), ("kill", 7.0, None), ("pause", 8.0, None)]


def test_renumbering_threads_closes_gaps() -> None:
    events = [Event(0.0, 4, "read"), Event(1.0, 2, "read"), Event(2.0, "nemesis", "kill")]
    out, k = renumber_threads(events)
    assert k == 2 and [e.thread for e in out] == [0, 1, "nemesis"]


def _write(tmp_path: Path, data: object) -> Path:
    p = tmp_path / "s.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("workload"), "missing 'workload'"),
    (lambda d: d.update(nodes=[]), "nodes must be distinct"),
    (lambda d: d.update(nodes=["n1", "n1"]), "nodes must be distinct"),
    (lambda d: d.update(seed=-1), "seed must be >= 0"),
    (lambda d: d.update(seed=2**63), "seed: must be <= 9223372036854775807"),
    (lambda d: d.update(seed="7"), "'seed' must be an integer"),
    (lambda d: d.update(time_limit=float("nan")), "'time_limit' must be a positive number"),
    (lambda d: d.update(time_limit=0), "'time_limit' must be a positive number"),
    (lambda d: d.update(concurrency=0), "concurrency must be >= 1"),
    (lambda d: d.update(read_mode="eventual"), "read_mode 'eventual'"),
    (lambda d: d.update(format="other"), "is not a jepsen-py-schedule"),
    (lambda d: d.update(version=9), "schedule version 9"),
    (lambda d: d["events"].append({"at": 1, "thread": "nemesis", "f": "explode"}),
     "no nemesis does 'explode'"),
    (lambda d: d["events"].append({"at": 1, "thread": 5, "f": "fetch"}), "a client 0..1"),
    (lambda d: d["events"].append({"at": -1, "thread": 0, "f": "fetch"}), "'at' must be seconds >= 0"),
    (lambda d: d["events"].append({"at": 99, "thread": 0, "f": "fetch"}), "past the time limit"),
    (lambda d: d["events"].append({"at": 1, "thread": 0, "f": "fetch", "when": 2}), "unknown fields when"),
    (lambda d: d["events"].append(3), "an event is an object"),
    (lambda d: d["final"].append({"at": 0, "thread": "nemesis", "f": "kill"}), "no nemesis ops"),
])
def test_damaged_files_are_one_line(tmp_path: Path, mutate: object, message: str) -> None:
    d = sample().to_json()
    mutate(d)  # type: ignore[operator]
    with pytest.raises(BadInput) as e:
        sched.load(_write(tmp_path, json.dumps(d)))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert e.value.exit_code == 254


@pytest.mark.parametrize("content, message", [("{not json", "not JSON"), ("[1, 2]", "a JSON object"),
                                              (b"\xff\xfe", "cannot read")])
def test_unreadable_files(tmp_path: Path, content: str | bytes, message: str) -> None:
    p = tmp_path / "s.json"
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    with pytest.raises(BadInput, match=message):
        sched.load(p)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file"):
        sched.load(tmp_path / "nope.json")
    with pytest.raises(BadInput, match="is a directory"):
        sched.load(tmp_path)


def test_final_reads_may_name_a_worker_a_shrunk_schedule_no_longer_has(tmp_path: Path) -> None:
    s = sample()
    s = s.with_events(s.events, final=[Event(0.0, 7, "fetch", key=("g", "t", 0), node="n1")])
    assert sched.load(sched.save(s, tmp_path / "s.json")).final[0].thread == 7


def _nested(depth: int) -> list[object]:
    v: list[object] = []
    for _ in range(depth):
        v = [v]
    return v


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(time_limit=86_401), "the bound of --time-limit"),
    (lambda d: d.update(time_limit=1e308), "the bound of --time-limit"),
    (lambda d: d.update(nemesis_interval=1e308), "the bound of --nemesis-interval"),
    (lambda d: d.update(concurrency=10**12), "the bound of --concurrency"),
    (lambda d: d.update(seed=2**63), "the bound of --seed"),
    (lambda d: d.update(seed=10**400), "the bound of --seed"),
    (lambda d: d.update(nodes=[f"n{i}" for i in range(100_001)]), "the bound of --node-count"),
    (lambda d: d["options"].update(rate=1e10), "the bound of --rate"),
    (lambda d: d["options"].update(rate="fast"), "expected a number"),
    (lambda d: d["options"].update(checkers=["os:system"]), "options 'checkers' are not a schedule's to set"),
    (lambda d: d["options"].update(ssh_hosts=["n1=evil"]), "options 'ssh_hosts' are not a schedule's to set"),
    (lambda d: d["events"].append({"at": 10**400, "thread": 0, "f": "fetch"}), "'at' must be seconds >= 0"),
    (lambda d: d["events"].append({"at": 1, "thread": 0, "f": "fetch", "t": 1e308}), "must be <= 604800"),
    (lambda d: d["events"].append({"at": 1, "thread": 0, "f": "fetch", "w": [1e308]}), "must be <= 604800"),
    (lambda d: d.update(t0=10**400), "'t0' must be seconds or null"),
    (lambda d: d["events"].append({"at": 1, "thread": 0, "f": "fetch", "value": _nested(40)}),
     "nested deeper than a schedule is"),
])
def test_numbers_and_sizes_past_the_flags_bounds_are_one_line(tmp_path: Path, mutate: object,
                                                               message: str) -> None:
    d = sample().to_json()
    mutate(d)  # type: ignore[operator]
    with pytest.raises(BadInput) as e:
        sched.load(_write(tmp_path, json.dumps(d)))
    assert message in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < 400
    assert e.value.exit_code == 254


def test_a_file_refuses_exactly_what_the_flag_refuses(tmp_path: Path) -> None:
    from jepsen_py import cli

    parser = cli.build_parser()
    for flag, field, top in (("--time-limit", "time_limit", 86_400),
                             ("--nemesis-interval", "nemesis_interval", 7 * 24 * 3600)):
        parser.parse_args(["run", flag, str(top)])
        with pytest.raises(SystemExit):
            parser.parse_args(["run", flag, str(top + 1)])
        d = sample().to_json()
        d[field] = top
        assert getattr(sched.load(_write(tmp_path, json.dumps(d))), field) == top
        d[field] = top + 1
        with pytest.raises(BadInput, match=f"the bound of {flag}"):
            sched.load(_write(tmp_path, json.dumps(d)))


def test_deeply_nested_and_oversized_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = _write(tmp_path, '{"events": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(BadInput, match="nested deeper than a schedule is"):
        sched.load(deep)
    path = sched.save(sample(), tmp_path / "ok.json")
    monkeypatch.setattr(sched, "MAX_FILE_BYTES", 100)
    with pytest.raises(BadInput, match="larger than"):
        sched.load(path)
    monkeypatch.setattr(sched, "MAX_FILE_BYTES", 10**6)
    monkeypatch.setattr(sched, "MAX_EVENTS", 5)
    with pytest.raises(BadInput, match="6 events, more than a schedule holds"):
        sched.load(path)
