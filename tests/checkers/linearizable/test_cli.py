"""`jepsen-py check`: verdict exit codes, formats, and bad input as one line naming file:line (254)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jepsen_py.cli import main
from tests.checkers.linearizable.test_anchors import ANCHORS
from tests.conftest import require


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _op(i, typ, p, f, value=None, key=None):
    return {"index": i, "time": i, "type": typ, "process": p, "f": f, "key": key, "value": value}


def test_valid_invalid_unknown_exit_codes(tmp_path, capsys):
    good = _jsonl(tmp_path / "good.jsonl", [
        _op(0, "invoke", 0, "write", 3), _op(1, "ok", 0, "write", 3),
        _op(2, "invoke", 1, "read"), _op(3, "ok", 1, "read", 3)])
    assert main(["check", str(good), "--model", "register"]) == 0
    assert "linearizable" in capsys.readouterr().out
    bad = _jsonl(tmp_path / "bad.jsonl", [
        _op(0, "invoke", 0, "write", 3), _op(1, "ok", 0, "write", 3),
        _op(2, "invoke", 1, "read"), _op(3, "ok", 1, "read", 4)])
    assert main(["check", str(bad), "--model", "register", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is False and out["failures"][0]["op"]["index"] == 2
    # --init sets the initial state: reading 0 first is fine with init 0, not with the empty register
    init_read = _jsonl(tmp_path / "init.jsonl", [_op(0, "invoke", 0, "read"), _op(1, "ok", 0, "read", 0)])
    assert main(["check", str(init_read), "--model", "cas-register", "--init", "0"]) == 0
    assert main(["check", str(init_read), "--model", "cas-register"]) == 1
    # unknown: a hard history and a tiny time budget
    rows = [_op(i, "invoke", i, "add", i) for i in range(20)] + [_op(20, "invoke", 20, "read")]
    rows += [_op(21 + i, "ok", i, "add", i) for i in range(20)] + [_op(41, "ok", 20, "read", [-1])]
    rows += [_op(42, "invoke", 21, "read"), _op(43, "ok", 21, "read", list(range(20)))]
    hard = _jsonl(tmp_path / "hard.jsonl", rows)
    assert main(["check", str(hard), "--model", "set", "--time-limit", "0.3"]) == 2
    assert "time limit" in capsys.readouterr().out


@pytest.mark.parametrize(("rows", "line", "words"), [
    ([_op(0, "ok", 0, "read", 1)], 1, "without an invocation"),
    ([_op(0, "invoke", 0, "read"), _op(1, "invoke", 0, "read")], 2, "still in flight"),
    ([_op(0, "invoke", 0, "read"), {**_op(1, "ok", 0, "read"), "type": "done"}], 2, "unknown op type"),
    ([_op(0, "invoke", 0, "write", 1), _op(1, "info", 0, "write", 1), _op(2, "invoke", 0, "read")], 3,
     "after an info"),
])
def test_rule_breaking_history_is_bad_input_with_file_and_line(tmp_path, capsys, rows, line, words):
    path = _jsonl(tmp_path / "h.jsonl", rows)
    assert main(["check", str(path), "--model", "register"]) == 254
    err = capsys.readouterr().err.strip()
    assert f"{path}:{line}" in err and words in err
    assert len(err.splitlines()) == 1


def test_unparsable_lines_name_file_and_line(tmp_path, capsys):
    p = tmp_path / "h.jsonl"
    first, last = json.dumps(_op(0, "invoke", 0, "read")), json.dumps(_op(1, "ok", 0, "read"))
    p.write_text(first + "\n{oops\n" + last + "\n")
    assert main(["check", str(p), "--model", "register"]) == 254
    assert f"{p}:2" in capsys.readouterr().err
    e = tmp_path / "h.edn"
    e.write_text("{:process 0, :type :invoke, :f :read, :value nil}\n{:process 0, :type :ok :f\n")
    assert main(["check", str(e), "--model", "register"]) == 254
    assert f"{e}:2" in capsys.readouterr().err
    log = tmp_path / "h.log"
    log.write_text("INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:okay\t:read\t1\n")
    assert main(["check", str(log), "--model", "register"]) == 254
    assert f"{log}:2" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "missing.jsonl"), "--model", "register"]) == 254
    assert main(["check", str(log), "--model", "register", "--init", "{nope"]) == 254
    with pytest.raises(SystemExit) as e:  # argparse's own error path, mapped to 254 by the CLI
        main(["check", str(log), "--model", "no-such-model"])
    assert e.value.code == 254


def test_anchor_files_through_the_real_command():
    if not (ANCHORS / "expected.tsv").exists():
        require(f"the Porcupine anchors at {ANCHORS}", False)
    argv = [sys.executable, "-m", "jepsen_py.cli", "check"]
    r = subprocess.run([*argv, str(ANCHORS / "jepsen/etcd_000.log"), "--model", "cas-register"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "NOT linearizable" in r.stdout
    r = subprocess.run([*argv, str(ANCHORS / "kv/c10-ok.txt"), "--model", "kv", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["format"] == "porcupine-kv"


def test_independent_edn_history_is_checked_per_key(tmp_path, capsys):
    p = tmp_path / "ind.edn"
    p.write_text("[{:process 0, :type :invoke, :f :write, :value [1 5]}\n"
                 " {:process 0, :type :ok, :f :write, :value [1 5]}\n"
                 " {:process 1, :type :invoke, :f :read, :value [2 nil]}\n"
                 " {:process 1, :type :ok, :f :read, :value [2 5]}]\n")
    assert main(["check", str(p), "--model", "cas-register", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["keys_checked"] == 2 and out["invalid_keys"] == ["2"]
    # Read as one register instead, the pairs are plain values: [2 5] was never written.
    assert main(["check", str(p), "--model", "cas-register", "--independent", "no", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["keys_checked"] == 1
