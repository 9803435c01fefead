"""Damaged or hostile inputs never pass the gate and never crash it: each gives 0/1/2 or one line
naming file:line with exit 254 (never a traceback, never 255)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from jepsen_py import cli
from jepsen_py.history import MAX_TIME_NS
from tests.jepsen_py.test_cli import fake_run, use_fakes


def op(index: int, typ: str, process: int, f: str, value: object = None, *, time: int | None = None,
       key: object = None) -> str:
    d = {"index": index, "time": index if time is None else time, "type": typ, "process": process,
         "f": f, "value": value}
    if key is not None:
        d["key"] = key
    return json.dumps(d)


def write_ok_register(path: Path, extra: str = "") -> Path:
    path.write_text("\n".join([op(0, "invoke", 0, "write", 1), op(1, "ok", 0, "write", 1),
                               op(2, "invoke", 0, "read"), op(3, "ok", 0, "read", 1)]) + "\n" + extra)
    return path


def check(capsys: pytest.CaptureFixture[str], path: Path, *argv: str, model: str = "register"
          ) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["check", str(path), "--model", model, "--workers", "1", *argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return code, err


def test_a_file_with_no_recognisable_op_is_bad_input(tmp_path, capsys) -> None:
    cases = {"x.jsonl": b"not json", "prose.log": b"Dear diary,\nnothing happened today.\n",
             "empty.edn": b"", "blank.jsonl": b"\n\n"}
    for name, content in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        code, err = check(capsys, p)
        assert code == 254, (name, err)
        assert str(p) in err


def test_a_torn_last_line_is_refused_unless_allowed_and_then_counted(tmp_path, capsys) -> None:
    # The torn line is the stale read that would make this history invalid.
    h = write_ok_register(tmp_path / "h.jsonl", op(4, "invoke", 1, "read") + "\n" +
                          op(5, "ok", 1, "read", 0)[:-3])
    code, err = check(capsys, h)
    assert code == 254 and f"{h}:6: history truncated mid-line" in err and "--allow-truncated" in err
    code, err = check(capsys, h, "--allow-truncated")
    assert code == 0 and f"{h}:6: torn last line dropped (1 line" in err


@pytest.mark.parametrize(("content", "where", "words"), [
    (op(0, "invoke", 0, "write", 1, time=10**15 * 1000) + "\n", ":1:", "outside 0.."),
    (op(0, "invoke", 0, "write", 1, time=-5) + "\n", ":1:", "outside 0.."),
    ('{"index":0,"time":0,"type":["invoke"],"process":0,"f":"write"}\n', ":1:", "unknown op type"),
    ('{"index":0,"time":0,"type":"invoke","process":0,"f":{"a":1}}\n', ":1:", "f must be a name"),
    ('{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":' + "9" * 5000 + "}\n",
     ":1:", "not usable JSON"),
    ('{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":' + "[" * 100_000 +
     "]" * 100_000 + "}\n", ":1:", "nested"),
    ('{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":NaN}\n', ":1:", "NaN"),
    (op(0, "invoke", 0, "write", 1) + "\n" + op(1, "ok", 0, "write", 1) + "\n\xff\xfe\n", ":3:", "UTF-8"),
])
def test_bad_jsonl_fields_name_file_and_line(tmp_path, capsys, content, where, words) -> None:
    p = tmp_path / "h.jsonl"
    p.write_bytes(content.encode("utf-8", "surrogateescape") if "\xff" not in content
                  else content.encode("latin-1"))
    code, err = check(capsys, p)
    assert code == 254 and f"{p}{where}" in err and words in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("name", "content", "words"), [
    ("h.edn", '[{:type :invoke, :process 0, :f :write, :value "\\uZZZZ"}]', "\\u escape"),
    ("h.edn", "[{:type :invoke, :process 0, :f :write, :value 1/0}]", "bad number"),
    ("h.edn", "[{:type :invoke, :process 0, :f :write, :value " + "[" * 5000 + "]" * 5000 + "}]", "deep"),
    ("h.edn", "[{:type [:invoke], :process 0, :f :write}]", "unknown op type"),
    ("h.edn", "[{:type :invoke, :process 0, :f {:a 1}}]", ":f must be"),
    ("h.edn", "[{:type :invoke, :process 0, :f :write, :time 1000000000000000000}]", "outside"),
    ("h.log", "INFO  jepsen.util - --3\t:invoke\t:read\tnil\n", "process must be"),
    ("h.log", "INFO  jepsen.util - \u00b2\t:invoke\t:read\tnil\n", "process must be"),
])
def test_bad_edn_and_logs_name_file_and_line(tmp_path, capsys, name, content, words) -> None:
    p = tmp_path / name
    p.write_text(content)
    code, err = check(capsys, p, model="cas-register")
    assert code == 254 and f"{p}:1" in err and words in err, err


def test_values_that_do_not_fit_the_model_name_the_op(tmp_path, capsys) -> None:
    kv = tmp_path / "kv.jsonl"
    kv.write_text("\n".join([
        op(0, "invoke", 0, "put", "x", key="a"), op(1, "ok", 0, "put", "x", key="a"),
        op(2, "invoke", 0, "append", 5, key="a"), op(3, "ok", 0, "append", 5, key="a"),
        op(4, "invoke", 0, "get", key="a"), op(5, "ok", 0, "get", "x5", key="a")]) + "\n")
    code, err = check(capsys, kv, model="kv")
    assert code == 254 and f"{kv}:3: append 5" in err
    s = tmp_path / "set.jsonl"
    s.write_text("\n".join([op(0, "invoke", 0, "add", 1), op(1, "ok", 0, "add", 1),
                            op(2, "invoke", 0, "read"), op(3, "ok", 0, "read", 7)]) + "\n")
    code, err = check(capsys, s, model="set")
    assert code == 254 and f"{s}:3: read" in err
    code, err = check(capsys, s, "--init", '{"a": 1}', model="set")
    assert code == 254 and "--init" in err
    code, err = check(capsys, s, "--init", "[" * 10000 + "]" * 10000, model="set")
    assert code == 254 and "--init" in err


def test_unreadable_and_directory_inputs(tmp_path, capsys) -> None:
    d = tmp_path / "dir.jsonl"
    d.mkdir()
    code, err = check(capsys, d)
    assert code == 254 and "directory" in err
    code, err = check(capsys, tmp_path / "absent.jsonl")
    assert code == 254 and "no such" in err


def test_analyze_with_damaged_test_json_and_history(tmp_path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path)) == 0
    run_dir = (tmp_path / "results" / "latest").resolve()
    spec = json.loads((run_dir / "test.json").read_text())
    for field, bad in (("nodes", 3), ("time_limit", "sixty"), ("options", []), ("nemesis", [1]),
                       ("seed", True)):
        (run_dir / "test.json").write_text(json.dumps({**spec, field: bad}))
        capsys.readouterr()
        assert cli.main(["analyze", str(run_dir)]) == 254
        err = capsys.readouterr().err
        assert f"test.json: {field} must be" in err, err
    (run_dir / "test.json").write_bytes(b'{"name": "\xff"}')
    assert cli.main(["analyze", str(run_dir)]) == 254
    assert "not UTF-8" in capsys.readouterr().err
    (run_dir / "test.json").write_text(json.dumps(spec))
    history = run_dir / "history.jsonl"
    good = history.read_bytes()
    history.unlink()
    history.mkdir()
    assert cli.main(["analyze", str(run_dir)]) == 254
    assert "is a directory" in capsys.readouterr().err
    history.rmdir()
    history.write_bytes(good.replace(b'"time":', b'"time":1000000000000000000', 1)
                        .replace(b'"time":1000000000000000000', b'"time":10000000000000000000', 1))
    assert cli.main(["analyze", str(run_dir)]) == 254
    assert f"{history}:1: time" in capsys.readouterr().err


def test_nan_is_never_written_bare_into_results_json(tmp_path) -> None:
    from jepsen_py import store

    store.write_json(tmp_path / "r.json", {"a": math.nan, "b": [math.inf, -math.inf, 1.5]})
    text = (tmp_path / "r.json").read_text()
    assert "NaN" in text and json.loads(text, parse_constant=lambda c: pytest.fail(c)) == {
        "a": "NaN", "b": ["Infinity", "-Infinity", 1.5]}


def test_an_absurd_time_is_refused_before_any_per_second_view(tmp_path) -> None:
    """An op edited to 10^15 ns (11.6 days) made analyze write a 14 MB results.json (one availability
    bucket per second); past 10^5 s a history is refused at read time."""
    from tests.checkers.runfixture import make_run

    run = make_run(tmp_path, 60)
    h = run.run_dir / "history.jsonl"
    before = (run.run_dir / "results.json").read_bytes()
    lines = h.read_text().splitlines()
    for t in (10**15, MAX_TIME_NS + 1):
        last = json.loads(lines[-1])
        last["time"] = t
        h.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
        assert cli.main(["analyze", str(run.run_dir), "--no-render"]) == 254
        assert (run.run_dir / "results.json").read_bytes() == before
