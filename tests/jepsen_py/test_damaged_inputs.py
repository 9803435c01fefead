"""Damaged or hostile inputs never pass the gate and never crash it: each gives 0/1/2 or one line
naming file:line with exit 254 (never a traceback, never 255)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jepsen_py import cli, inputfile
from jepsen_py.history import MAX_TIME_NS
from jepsen_py.importers import load_history
from tests.anchors import ANCHORS
from tests.jepsen_py.history_formats import to_edn, to_jsonl
from tests.jepsen_py.test_cli import REPO, fake_run, use_fakes


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


def anchor(rel: str) -> Path:
    p = ANCHORS / rel
    if not p.exists():
        pytest.skip(f"Porcupine's test data not at {ANCHORS}")
    return p


def test_a_completion_whose_f_differs_from_its_invocation_is_damage(tmp_path, capsys) -> None:
    """etcd_000 is not linearizable. With one `:ok :read` completion renamed `:reax`, the checker
    dropped the completion (not a cas-register op) and left the read open: it passed. In every
    format, and in analyze, that is now damage naming the line."""
    lines = anchor("jepsen/etcd_000.log").read_text().splitlines(keepends=True)
    assert lines[85] == "INFO  jepsen.util - 11\t:ok\t:read\t2\n"
    log = tmp_path / "etcd.log"
    log.write_text("".join([*lines[:85], lines[85].replace(":read", ":reax"), *lines[86:]]))
    code, err = check(capsys, log, model="cas-register")
    assert code == 254 and f"{log}:86: ok 'reax' for process 11 completes an invocation of 'read'" in err
    assert "(its invocation: line 85)" in err
    ops, _, _ = load_history(log)  # the reader takes the file; the pairing rule refuses it
    for name, text in (("etcd.jsonl", to_jsonl(ops)), ("etcd.edn", to_edn(ops))):
        p = tmp_path / name
        p.write_text(text)
        code, err = check(capsys, p, "--failed-cas", "mismatch", model="cas-register")
        assert code == 254 and f"{p}:" in err and "completes an invocation of 'read'" in err, err


def test_analyze_refuses_a_completion_that_does_not_match(tmp_path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path)) == 0
    run_dir = (tmp_path / "results" / "latest").resolve()
    history = run_dir / "history.jsonl"
    good = history.read_text().splitlines()
    i = next(i for i, ln in enumerate(good) if '"type":"ok"' in ln and '"f":"read"' in ln)
    for field, bad in (("f", "reax"), ("key", "another-key"), ("time", 0)):
        d = json.loads(good[i])
        d[field] = bad
        history.write_text("\n".join([*good[:i], json.dumps(d), *good[i + 1:]]) + "\n")
        capsys.readouterr()
        assert cli.main(["analyze", str(run_dir), "--no-render"]) == 254, field
        err = capsys.readouterr().err
        assert f"{history}:{i + 1}: ok" in err and "its invocation: line" in err, err
        assert "Traceback" not in err


def test_a_completion_on_another_key_is_damage(tmp_path, capsys) -> None:
    kv = tmp_path / "kv.txt"
    kv.write_text('{:process 0, :type :invoke, :f :put, :key "a", :value "x"}\n'
                  '{:process 0, :type :ok, :f :put, :key "b", :value "x"}\n'
                  '{:process 1, :type :invoke, :f :get, :key "b", :value nil}\n'
                  '{:process 1, :type :ok, :f :get, :key "b", :value "x"}\n')
    code, err = check(capsys, kv, model="kv")
    assert code == 254 and f"{kv}:2: ok of key 'b' for process 0 completes an invocation on key 'a'" in err
    # jepsen.independent's [key value] pairs are checked after unwrapping.
    ind = tmp_path / "ind.edn"
    ind.write_text("{:process 0, :type :invoke, :f :write, :value [:a 1]}\n"
                   "{:process 0, :type :ok, :f :write, :value [:b 1]}\n"
                   "{:process 1, :type :invoke, :f :read, :value [:b nil]}\n"
                   "{:process 1, :type :ok, :f :read, :value [:b 1]}\n")
    code, err = check(capsys, ind, model="register")
    assert code == 254 and f"{ind}:2:" in err and "key 'a'" in err, err


LOG = ("INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:ok\t:write\t1\n"
       "INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:ok\t:read\t12\n")
EDN = ("[{:index 0 :time 0 :type :invoke :process 0 :f :write :value 1}\n"
       " {:index 1 :time 5 :type :ok :process 0 :f :write :value 1}\n"
       " {:index 2 :time 6 :type :invoke :process 1 :f :read :value nil}\n"
       " {:index 3 :time 7 :type :ok :process 1 :f :read :value 1}]\n")
JSONL = "\n".join([op(0, "invoke", 0, "write", 1), op(1, "ok", 0, "write", 1),
                   op(2, "invoke", 1, "read"), op(3, "ok", 1, "read", 1)]) + "\n"


@pytest.mark.parametrize(("name", "content", "where", "words"), [
    # A torn last line of a text log: `:read 12` cut to `:read 1` reads as an op.
    ("torn.log", LOG[:-2], ":4:", "truncated mid-line"),
    ("torn.log", LOG[:-10], ":4:", "truncated mid-line"),
    ("torn.log", LOG[:-len("jepsen.util - 1\t:ok\t:read\t12\n")], ":4:", "truncated mid-line"),
    ("torn.edn", EDN[:-4], ":4:", "truncated mid-line"),
    ("torn.edn", EDN[:-2], ":4:", "truncated mid-line"),  # only the vector's bracket is gone
    ("nan.log", LOG.replace("\t12", "\t##NaN"), ":4:", "##NaN"),
    ("inf.log", LOG.replace("\t12", "\t[1 ##Inf]"), ":4:", "##Inf"),
    ("big.jsonl", JSONL.replace('"value": 1}', '"value": 1e999}', 2).replace('1e999', '1', 1), ":2:",
     "1e999"),
    ("nan.edn", EDN.replace(":value 1}]", ":value ##NaN}]"), ":4:", "##NaN"),
    ("inf.edn", EDN.replace(":value 1}]", ":value 1e999}]"), ":4:", "1e999"),
    ("time.edn", EDN.replace(":time 5", ":time ##NaN"), ":2:", "##NaN"),
    ("time.edn", EDN.replace(":time 5", ':time "yesterday"'), ":2:", "time must be integer"),
    ("time.edn", EDN.replace(":time 5", ":time 1.5e30"), ":2:", "time must be integer"),
    ("index.edn", EDN.replace(":index 1", ":index :foo"), ":2:", "index must be"),
    ("index.edn", EDN.replace(":index 2", ":index 1"), ":3:", "indices must increase"),
    ("before.edn", EDN.replace(":time 7", ":time 2"), ":4:", "before its invocation"),
    ("index.jsonl", JSONL.replace('"index": 2', '"index": 1'), ":3:", "indices must increase"),
    ("index.jsonl", JSONL.replace('"index": 3', '"index": 0'), ":4:", "indices must increase"),
    ("before.jsonl", JSONL.replace('"index": 3, "time": 3', '"index": 3, "time": 1'), ":4:",
     "before its invocation at time 2"),
])
def test_every_reader_refuses_damage_naming_the_line(tmp_path, capsys, name, content, where, words) -> None:
    p = tmp_path / name
    p.write_text(content)
    code, err = check(capsys, p, model="cas-register")
    assert code == 254 and f"{p}{where}" in err and words in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("name", "content", "ops_left"), [
    ("torn.jsonl", JSONL[:-9], 3), ("torn.log", LOG[:-2], 3), ("torn.edn", EDN[:-4], 3),
    ("torn.edn", EDN[:-2], 4), ("torn.txt", EDN[1:-4].replace("\n ", "\n"), 3),
])
def test_allow_truncated_drops_a_torn_tail_in_every_format_and_says_so(tmp_path, capsys, name, content,
                                                                      ops_left) -> None:
    p = tmp_path / name
    p.write_text(content)
    code, err = check(capsys, p, model="cas-register")
    assert code == 254 and "pass --allow-truncated" in err, err
    code, err = check(capsys, p, "--allow-truncated", model="cas-register")
    assert code in (0, 1) and f"{p}:4: torn last line dropped" in err, err
    assert f"checking the {ops_left} ops before it" in err


def test_fifos_devices_and_oversized_files_are_refused(tmp_path, monkeypatch, capsys) -> None:
    fifo = tmp_path / "h.jsonl"
    os.mkfifo(fifo)
    for target in (fifo, Path("/dev/zero")):
        for fmt in ("auto", "edn", "jepsen-log"):
            p = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "check", str(target), "--model",
                                "register", "--format", fmt], capture_output=True, text=True, cwd=REPO,
                               timeout=60)
            assert p.returncode == 254 and p.stderr.count("\n") == 1, p.stderr
            assert f"{target}: is a " in p.stderr and "not a history file" in p.stderr
    # A stored run whose history or test.json is a FIFO: refused, not waited on.
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path)) == 0
    run_dir = (tmp_path / "results" / "latest").resolve()
    for name in ("history.jsonl", "test.json"):
        saved = (run_dir / name).read_bytes()
        (run_dir / name).unlink()
        os.mkfifo(run_dir / name)
        p = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "analyze", str(run_dir), "--no-render"],
                           capture_output=True, text=True, cwd=REPO, timeout=60)
        assert p.returncode == 254 and "is a FIFO" in p.stderr and "Traceback" not in p.stderr, p.stderr
        (run_dir / name).unlink()
        (run_dir / name).write_bytes(saved)
    # Sizes: a file over the cap, a line over the cap (small caps, so the test stays small).
    h = write_ok_register(tmp_path / "h2.jsonl")
    monkeypatch.setattr(inputfile, "MAX_FILE_BYTES", h.stat().st_size - 1)
    code, err = check(capsys, h)
    assert code == 254 and f"{h}: {h.stat().st_size} bytes, over the" in err
    monkeypatch.setattr(inputfile, "MAX_FILE_BYTES", 1 << 30)
    monkeypatch.setattr(inputfile, "MAX_LINE_BYTES", 100)
    long = write_ok_register(tmp_path / "long.jsonl", op(4, "invoke", 1, "write", "x" * 200) + "\n")
    code, err = check(capsys, long)
    assert code == 254 and f"{long}:5: line longer than 100 bytes" in err
    log = tmp_path / "long.log"
    log.write_text(LOG + "INFO  jepsen.util - 2\t:invoke\t:write\t" + "7" * 200 + "\n")
    code, err = check(capsys, log, model="cas-register")
    assert code == 254 and f"{log}:5: line longer than 100 bytes" in err
