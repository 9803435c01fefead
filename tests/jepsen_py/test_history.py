"""History records: round trip, crash safety of the writer, bad lines named by file:line, Jepsen's
pairing rules."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jepsen_py.errors import BadInput
from jepsen_py.history import (
    FAIL,
    INFO,
    INVOKE,
    NEMESIS,
    OBSERVER,
    OK,
    HistoryWriter,
    Op,
    iter_history,
    pairs,
    parse_line,
    read_history,
    validate,
)

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=4)
                           | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(
    type_=st.sampled_from([INVOKE, OK, FAIL, INFO]),
    process=st.integers(0, 10_000) | st.sampled_from([NEMESIS, OBSERVER]),
    f=st.text(min_size=1, max_size=12),
    key=json_values,
    value=json_values,
    node=st.none() | st.sampled_from(["n1", "n2"]),
    meta=st.dictionaries(st.text(max_size=8), json_values, max_size=3),
)
def test_an_op_survives_the_round_trip(tmp_path_factory: pytest.TempPathFactory, type_: str,
                                       process: int | str, f: str, key: object, value: object,
                                       node: str | None, meta: dict) -> None:
    path = tmp_path_factory.mktemp("h") / "history.jsonl"
    op = Op(-1, 123, type_, process, f, key, value, node, None, meta)
    with HistoryWriter(path) as w:
        w.append(op)
    [back] = read_history(path)
    assert back == op
    assert json.loads(op.to_json()) == op.to_dict()


def test_indices_are_assigned_in_line_order_under_many_threads(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    w = HistoryWriter(path)

    def spam(p: int) -> None:
        for i in range(300):
            w.append(Op(-1, i, INVOKE if i % 2 == 0 else OK, p, "w", value=i))

    threads = [threading.Thread(target=spam, args=(p,)) for p in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    ops = read_history(path)
    assert [o.index for o in ops] == list(range(16 * 300))
    validate(ops)


def test_tuples_and_sets_are_written_as_lists(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "h.jsonl") as w:
        w.append(Op(-1, 0, INVOKE, 0, "r", key=("g", "t", 0), value=frozenset({1})))
    [op] = read_history(tmp_path / "h.jsonl")
    assert op.key == ["g", "t", 0] and op.value == [1]


def test_appending_after_close_is_an_error(tmp_path: Path) -> None:
    w = HistoryWriter(tmp_path / "h.jsonl")
    w.close()
    with pytest.raises(RuntimeError, match="closed"):
        w.append(Op(-1, 0, INVOKE, 0, "r"))


CHILD = textwrap.dedent("""
    import sys, time
    from jepsen_py.history import HistoryWriter, Op
    w = HistoryWriter(sys.argv[1])
    i = 0
    while True:
        w.append(Op(-1, i, "invoke", 0, "write", key="k", value="x" * 200))
        w.append(Op(-1, i, "ok", 0, "write", key="k", value="x" * 200))
        i += 1
        if i == 50:
            print("ready", flush=True)
""")


def test_sigkill_mid_write_leaves_a_readable_history(tmp_path: Path) -> None:
    """A controller killed with SIGKILL while writing as fast as it can: every line but possibly a
    torn last one reads back, and the prefix is a valid history."""
    path = tmp_path / "history.jsonl"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)
    assert child.returncode == -signal.SIGKILL
    ops = read_history(path)
    assert len(ops) >= 100
    assert [o.index for o in ops] == list(range(len(ops)))
    validate(ops)
    lines = path.read_text().split("\n")
    assert len(ops) in (len(lines) - 1, len(lines))  # complete lines, plus at most a torn tail


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    good = Op(0, 1, INVOKE, 0, "r").to_json()
    path.write_text(good + "\n" + good[: len(good) // 2])
    assert len(read_history(path)) == 1


def test_a_bad_line_in_the_middle_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    good = Op(0, 1, INVOKE, 0, "r").to_json()
    path.write_text(good + "\n" + "{not json\n" + good + "\n")
    with pytest.raises(BadInput, match=rf"{path}:2: not a JSON object"):
        read_history(path)


@pytest.mark.parametrize(("line", "message"), [
    ('[1, 2]', "expected a JSON object"),
    ('{"index": 0, "time": 0, "type": "invoke"}', "missing process, f"),
    ('{"index": 0, "time": 0, "type": "done", "process": 0, "f": "r"}', "unknown op type 'done'"),
    ('{"index": 0, "time": 0, "type": "ok", "process": 1.5, "f": "r"}', "process must be"),
    ('{"index": 0, "time": "soon", "type": "ok", "process": 1, "f": "r"}', "time must be integer"),
])
def test_malformed_records_are_named(line: str, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        parse_line(line, where="h.jsonl:7")


def test_missing_and_directory_histories(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such history file"):
        list(iter_history(tmp_path / "nope.jsonl"))
    with pytest.raises(BadInput, match="is a directory"):
        list(iter_history(tmp_path))


def ops_of(*rows: tuple) -> list[Op]:
    return [Op(i, i, t, p, f) for i, (t, p, f) in enumerate(rows)]


def test_validate_accepts_jepsen_shaped_histories() -> None:
    validate(ops_of(
        (INVOKE, 0, "w"), (INVOKE, 1, "r"), (OK, 1, "r"), (INFO, 0, "w"),
        (INVOKE, 2, "w"),  # the crashed worker came back as process 0 + concurrency
        (OK, OBSERVER, "status"), (FAIL, OBSERVER, "status"),  # samples stand alone
        (INVOKE, NEMESIS, "start"), (INFO, NEMESIS, "start"),
        (INVOKE, NEMESIS, "stop"), (INFO, NEMESIS, "stop"),  # the nemesis goes on after info
        (FAIL, 2, "w"),
    ))


@pytest.mark.parametrize(("rows", "message"), [
    (((INVOKE, 0, "w"), (INVOKE, 0, "r")), "still in flight"),
    (((OK, 0, "w"),), "without an invocation"),
    (((INVOKE, 0, "w"), (INFO, 0, "w"), (INVOKE, 0, "r")), "invokes again after an info"),
])
def test_validate_names_the_first_broken_rule(rows: tuple, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        validate(ops_of(*rows), source="h.jsonl")


def test_validate_can_name_lines() -> None:
    ops = ops_of((INVOKE, 0, "w"), (INVOKE, 0, "r"))
    with pytest.raises(BadInput, match=r"^h.jsonl:2: process 0"):
        validate(ops, locate=lambda op: f"h.jsonl:{op.index + 1}")


def test_pairs_match_invocations_with_completions() -> None:
    ops = ops_of((INVOKE, 0, "w"), (INVOKE, 1, "r"), (OK, OBSERVER, "status"), (OK, 1, "r"),
                 (INVOKE, 1, "r"), (FAIL, 0, "w"))
    ps = pairs(ops)
    assert [(p.invoke.index, p.complete.index if p.complete else None, p.type) for p in ps] == [
        (0, 5, FAIL), (1, 3, OK), (4, None, INFO)]


def test_parse_line_measures_depths_only_when_the_brackets_allow_a_deep_field(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A line with no more brackets than MAX_DEPTH cannot hold a field nested deeper: its fields'
    depths are not walked (every line of every history is parsed); a line with more still is, and
    the limit holds either side of it."""
    import jepsen_py.history as history

    walked: list[object] = []
    real = history.depth_ok

    def counted(v: object, limit: int = history.MAX_DEPTH) -> bool:
        walked.append(v)
        return real(v, limit)

    monkeypatch.setattr(history, "depth_ok", counted)
    base = {"index": 0, "time": 1, "type": "ok", "process": 0, "f": "read", "key": "k",
            "value": {"a": [1, 2, {"b": None}]}, "node": "n1", "meta": {"role": "leader", "w": "[[[{{"}}
    op = parse_line(json.dumps(base), where="h:1")
    assert op.value == {"a": [1, 2, {"b": None}]} and walked == []

    deepest = history.MAX_DEPTH - 1  # a value of MAX_DEPTH nested lists: the most that is allowed
    ok_line = json.dumps({**base, "value": json.loads("[" * (deepest + 1) + "]" * (deepest + 1))})
    assert parse_line(ok_line, where="h:2").value is not None and walked
    too_deep = json.dumps({**base, "value": json.loads("[" * (deepest + 2) + "]" * (deepest + 2))})
    with pytest.raises(BadInput, match="h:3: value is nested more than 64 deep"):
        parse_line(too_deep, where="h:3")


def test_parse_line_refuses_a_byte_order_mark_as_json_loads_did() -> None:
    line = "\ufeff" + json.dumps({"index": 0, "time": 1, "type": "ok", "process": 0, "f": "read"})
    with pytest.raises(BadInput, match=r"h:1: not a JSON object \(Unexpected UTF-8 BOM"):
        parse_line(line, where="h:1")
