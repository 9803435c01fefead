"""Schedule files: written, read back identical, and every damaged file refused with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jepsen_py.bugs import check_bugs
from jepsen_py.cli import build_parser
from jepsen_py.errors import BadInput
from jepsen_py.explore import rerun
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.schedule import Event, Schedule, fault_windows, renumber_threads
from jepsen_py.plugins import (
    builtin_workloads,
    check_workload_name,
    db_option_keys,
    declared_bugs,
    load_object,
)
from jepsen_py.protocols import TestSpec
from tests.jepsen_py.explore.damage import damaged, raw_values


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


@pytest.mark.parametrize("content, message", [("{not json", "not valid JSON"), ("[1, 2]", "a JSON object"),
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


# A recorded schedule of two simulated seconds: the smallest real replay.
SHORT = Path(__file__).with_name("schedules") / "split-brain-metadata-commit-then-bump-clock.json"


def _replay(tmp_path: Path, schedule: Path, *extra: str) -> tuple[int, str]:
    """`jepsen-py run --schedule` in a process of its own (a FIFO must not hang the test run)."""
    proc = subprocess.run([sys.executable, "-m", "jepsen_py", "run", "--backend", "sim", "--schedule",
                           str(schedule), "--results-dir", str(tmp_path / "r"), "--no-progress", *extra],
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr


def test_db_options_the_db_does_not_declare_are_refused_as_the_flag_is(tmp_path: Path) -> None:
    # The same key on the command line is refused; from a schedule file it used to run anyway.
    d = json.loads(SHORT.read_text())
    d["db_options"] = {"colour": "blue"}
    bad = _write(tmp_path, d)
    code, err = _replay(tmp_path, bad)
    assert code == 254, err
    assert err.strip().splitlines() == [
        f"jepsen-py: --schedule: {bad}: db_options: jepsen_py.raftdb:RaftMetadataDB takes no 'colour' "
        "(it takes: none)"]
    assert not (tmp_path / "r").exists(), "refused before anything was provisioned"
    flag = subprocess.run([sys.executable, "-m", "jepsen_py", "run", "--backend", "sim", "--db-option",
                           "colour=blue", "--results-dir", str(tmp_path / "r2")], capture_output=True,
                          text=True, timeout=120)
    assert flag.returncode == 254 and "takes no 'colour' (it takes: none)" in flag.stderr


@pytest.mark.parametrize("damage, message", [
    (lambda p, d: p.write_text('{"events": ' + "[" * 100_000 + "]" * 100_000 + "}"),
     "nested deeper than a schedule is"),
    (lambda p, d: p.write_text(json.dumps({**d, "events": [{**d["events"][0], "value": _nested(40)}]})),
     "nested deeper than a schedule is"),
    (lambda p, d: p.write_text(json.dumps({**d, "seed": "x"})), "'seed' must be an integer"),
    (lambda p, d: p.write_text(json.dumps({**d, "db_options": {"reads": 3}})),
     "db_options must be an object"),
    (lambda p, d: p.write_text(json.dumps({**d, "bugs": ["no-such-bug"]})),
     "bugs: unknown bug 'no-such-bug'"),
    (lambda p, d: p.write_text(json.dumps({**d, "workload": "no-such"})), "workload: unknown workload"),
    (lambda p, d: p.write_text(json.dumps({**d, "time_limit": float("nan")})), "'time_limit' must be"),
    (lambda p, d: p.write_bytes(b"\xff" + json.dumps(d).encode()), "not UTF-8"),
    (lambda p, d: p.write_text(json.dumps(d)[:100]), "not valid JSON"),
    (lambda p, d: os.mkfifo(p), "is a FIFO (named pipe), not a schedule file"),
])
def test_a_damaged_schedule_is_refused_with_one_line_before_anything_runs(
        tmp_path: Path, damage: object, message: str) -> None:
    p = tmp_path / "s.json"
    damage(p, json.loads(SHORT.read_text()))  # type: ignore[operator]
    code, err = _replay(tmp_path, p)
    assert code == 254, err
    [line] = err.strip().splitlines()
    assert line.startswith("jepsen-py: ") and str(p) in line and message in line, line
    assert not (tmp_path / "r").exists()


# Where a damaged value goes in a schedule, and the values: deep nesting, wrong types, NaN and
# Infinity, numbers past every bound, names no DB or workload has, keys no DB declares.
_PATHS: list[tuple[object, ...]] = [
    ("format",), ("version",), ("workload",), ("nodes",), ("nodes", 0), ("seed",), ("time_limit",),
    ("concurrency",), ("read_mode",), ("bugs",), ("bugs", 0), ("nemesis_interval",), ("options",),
    ("options", "rate"), ("db_options",), ("db_options", "colour"), ("db_options", ""), ("recorded_on",),
    ("anomaly",), ("t0",), ("events",), ("events", 0), ("events", 0, "at"), ("events", 0, "thread"),
    ("events", 0, "f"), ("events", 0, "key"), ("events", 0, "value"), ("events", 0, "node"),
    ("events", 0, "t"), ("events", 0, "w"), ("events", 1, "f"), ("events", 1, "value"), ("final",),
    ("final", 0, "thread"), ("final", 0, "node"), ("no_such_field",)]
_VALUES = raw_values(["86401", '["n1", "n1"]', '"nemesis"', '"kill"', '"start-partition"', '"lease"',
                       '"local"', '{"colour": "blue"}', '{"rate": NaN}', '{"rate": 1e10}', '[null, 1.5]',
                       "7"])


@st.composite
def damaged_schedules(draw: st.DrawFn) -> bytes:
    """The short schedule with up to three values replaced by raw JSON text, maybe torn, maybe with
    a byte that is not UTF-8."""
    return damaged(draw, json.loads(SHORT.read_text()), _PATHS, _VALUES)


class _Ran(Exception):
    """The replay was about to start: everything before it took the file."""


def _about_to_run(s: Schedule, spec: TestSpec, *_: object, **__: object) -> None:
    """Stands in for the replay: the spec it was handed is one `run` would take from flags (its
    db_options declared by the DB, its workload and bugs known), then stops."""
    undeclared = set(spec.db_options) - set(db_option_keys(load_object(spec.db)))
    assert not undeclared, f"a replay started with db_options {undeclared} its DB does not declare"
    check_workload_name(spec.workload, builtin_workloads())
    if spec.bugs:
        check_bugs(spec.bugs, declared_bugs(spec.db))
    raise _Ran


_UNDECLARED = SHORT.read_text().replace('"options": {', '"db_options": {"colour": "blue"}, "options": {', 1)


@example(raw=_UNDECLARED.encode())
@example(raw=SHORT.read_text().replace('"events": [', '"events": [' + "[" * 100_000 + "]" * 100_000 + ", ",
                                       1).encode())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(raw=damaged_schedules())
def test_any_damage_to_a_schedule_is_refused_with_one_line_or_replayed(raw: bytes) -> None:
    """`run --schedule FILE` up to the replay (which a stub stands in for): a damaged file is
    refused with one BadInput line (254) naming the file, or reaches the replay with what `run`
    would take from flags; never another exception, never a replay of db_options the DB lacks."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "s.json"
        p.write_bytes(raw)
        args = build_parser().parse_args(["run", "--backend", "sim", "--schedule", str(p), "--results-dir",
                                          str(Path(tmp) / "r"), "--no-progress"])
        with mock.patch.object(rerun, "replay_run", _about_to_run):
            try:
                rerun.run_schedule(args)
            except BadInput as e:
                assert e.exit_code == 254
                assert str(p) in str(e) and "\n" not in str(e) and len(str(e)) < 1200, str(e)
            except _Ran:
                pass
            else:
                raise AssertionError("the replay neither ran nor was refused")
