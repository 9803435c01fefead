"""`--backend maelstrom` end to end: a node program in any language run by the one runner, through
`jepsen-py maelstrom` (Maelstrom's flags) and `jepsen-py run --backend maelstrom`. Maelstrom's own
demo nodes, unchanged, pass; tiny buggy nodes written here fail with the anomaly their bug makes; a
node that never answers its init is one line and 254."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from jepsen_py import cli, runflags
from jepsen_py.commands import maelstrom as maelstrom_command
from jepsen_py.commands import run as run_command
from tests.jepsen_py.maelstrom.conftest import demo_argv, write_node

#: A node answering init, echo and generate; ECHO and ID say what it answers (its bug, or none).
TINY_NODE = """
import json, sys

me = None
counter = 0
for line in sys.stdin:
    msg = json.loads(line)
    body = msg["body"]
    reply = {"in_reply_to": body["msg_id"]}
    if body["type"] == "init":
        me = body["node_id"]
        reply["type"] = "init_ok"
    elif body["type"] == "echo":
        reply.update(type="echo_ok", echo=ECHO)
    elif body["type"] == "generate":
        counter += 1
        reply.update(type="generate_ok", id=ID)
    print(json.dumps({"src": me, "dest": msg["src"], "body": reply}), flush=True)
"""


def tiny(tmp_path: Path, name: str, echo: str = 'body["echo"]', id_: str = 'f"{me}-{counter}"') -> list[str]:
    """`--bin` and `--bin-arg` for a tiny node with the given answers."""
    python, path = write_node(tmp_path, name, TINY_NODE.replace("ECHO", echo).replace("ID", id_))
    return ["--bin", python, "--bin-arg", path]


def bin_flags(argv: list[str]) -> list[str]:
    return ["--bin", argv[0], *(f"--bin-arg={a}" for a in argv[1:])]


@pytest.fixture(autouse=True)
def no_pictures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pictures and Parquet are the CLI's post-run steps, the same for every backend: not here."""
    monkeypatch.setattr(run_command, "CLI_POST_RUN", ())


def maelstrom(tmp_path: Path, *flags: str, time_limit: str = "3") -> int:
    return cli.main(["maelstrom", *flags, "--time-limit", time_limit, "--results-dir",
                     str(tmp_path / "results"), "--no-progress", "--seed", "7"])


def results(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "results" / "latest" / "results.json").read_text())


def test_maelstrom_python_echo_demo_passes_and_its_run_is_analyzed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's first "done when": Maelstrom's Python echo node, by its path, one node, 10 s."""
    echo_py = demo_argv("python", "echo.py")[-1]
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # no __pycache__ beside the shared demo
    assert maelstrom(tmp_path, "--bin", echo_py, "--workload", "echo", "--node-count", "1",
                     time_limit="10") == 0
    r = results(tmp_path)
    net = r["stats"]["net"]
    assert r["valid"] is True and r["stats"]["ok"] > 20
    assert net["clients"]["sent"] == net["all"]["sent"] >= 2 * r["stats"]["invokes"]
    assert net["servers"]["sent"] == 0 and net["all"]["msgs_per_op"] >= 2
    run_dir = (tmp_path / "results" / "latest").resolve()
    assert (run_dir / "nodes" / "n1" / "n1.log").is_file()
    test = json.loads((run_dir / "test.json").read_text())
    assert test["backend"] == "maelstrom" and test["db"] == "jepsen_py.maelstrom_world.world:MaelstromDB"
    assert cli.main(["analyze", str(run_dir)]) == 0  # the workload found again by the run's backend


@pytest.mark.parametrize("lang, script", [("ruby", "echo.rb"), ("ruby", "echo_full.rb"), ("js", "echo.js"),
                                          ("js", "echo_minimal.js")])
def test_ruby_and_js_echo_demos_pass_on_three_nodes(tmp_path: Path, lang: str, script: str) -> None:
    argv = demo_argv(lang, script)
    assert maelstrom(tmp_path, *bin_flags(argv), "--workload", "echo", "--node-count", "3",
                     "--rate", "30") == 0


def test_an_echo_node_that_answers_another_echo_fails(tmp_path: Path) -> None:
    assert maelstrom(tmp_path, *tiny(tmp_path, "bad_echo", echo='body["echo"] + "!"'), "--workload", "echo",
                     "--node-count", "1", "--rate", "20") == 1
    assert results(tmp_path)["checkers"]["echo"]["valid"] is False


def test_unique_ids_pass_with_the_node_id_in_each_id(tmp_path: Path) -> None:
    assert maelstrom(tmp_path, *tiny(tmp_path, "ids"), "--workload", "unique-ids", "--node-count", "3",
                     "--rate", "50") == 0


def test_unique_ids_fail_from_a_counter_alone_on_three_nodes(tmp_path: Path) -> None:
    assert maelstrom(tmp_path, *tiny(tmp_path, "counter_ids", id_="counter"), "--workload", "unique-ids",
                     "--node-count", "3", "--rate", "50") == 1
    assert results(tmp_path)["checkers"]["unique-ids"]["valid"] is False


def test_echo_under_partitions_completes_with_a_verdict(tmp_path: Path) -> None:
    """Clients are never cut off (a partition is between nodes): the run ends with a verdict, the
    partitions in its history. (Whether echo is valid there is the workload's to say.)"""
    assert maelstrom(tmp_path, *tiny(tmp_path, "echo3"), "--workload", "echo", "--node-count", "3",
                     "--rate", "30", "--nemesis", "partition", "--nemesis-interval", "1") in (0, 1)
    run_dir = tmp_path / "results" / "latest"
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert any(op["f"] == "start-partition" and op["type"] == "info" for op in history)
    r = results(tmp_path)
    assert r["valid"] in (True, False) and r["checkers"]["echo"]["valid"] is True


def test_a_node_that_never_answers_init_is_one_line_and_254(tmp_path: Path) -> None:
    """The real command line: one line on stderr naming the node, no traceback."""
    silent = tmp_path / "silent.py"
    silent.write_text("import sys\nfor line in sys.stdin:\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "jepsen_py", "maelstrom", "--bin", sys.executable, "--bin-arg", str(silent),
         "--workload", "echo", "--node-count", "1", "--time-limit", "2", "--results-dir",
         str(tmp_path / "results"), "--no-progress"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 254, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "node n1 did not answer init within" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("argv, says", [
    (["maelstrom", "--bin", "/no/such/node", "--workload", "echo"], "--bin: /no/such/node: no such file"),
    (["maelstrom", "--bin", sys.executable, "--workload", "echo", "--nemesis", "clock"],
     "--nemesis: unknown fault 'clock'"),
    (["run", "--backend", "maelstrom", "--workload", "echo"], "--bin: required with --backend maelstrom"),
    (["run", "--backend", "maelstrom", "--bin", sys.executable, "--workload", "offsets"],
     "unknown workload 'offsets'"),
    (["run", "--backend", "maelstrom", "--bin", sys.executable, "--workload", "echo", "--image-base",
      "debian"], "--image-base: not an option of --backend maelstrom"),
    (["run", "--backend", "maelstrom", "--bin", sys.executable, "--workload", "echo", "--bug",
      "zombie-leader"], "--bug"),
    (["run", "--backend", "sim", "--bin", sys.executable], "--bin: not an option of the simulator"),
    (["maelstrom", "--bin", sys.executable, "--workload", "txn-rw-register", "--consistency-models",
      "serializable,serialisable"], "--consistency-models: unknown consistency model(s) serialisable"),
])
def test_what_the_backend_cannot_honour_is_one_line_and_254(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str) -> None:
    assert cli.main([*argv, "--results-dir", str(tmp_path / "results")]) == 254
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "results").exists()  # refused before a run directory exists


@pytest.mark.parametrize("flags, says", [
    (["--key-count", "0"], "argument --key-count: must be >= 1"),
    (["--max-txn-length", "x"], "argument --max-txn-length: expected an integer"),
    (["--max-writes-per-key=-1"], "argument --max-writes-per-key: must be >= 1"),
    (["--availability", "most"], "argument --availability: 'most': must be 'total' or a number from 0 to 1"),
])
def test_a_bad_txn_knob_is_one_line_and_254(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], says: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["maelstrom", "--bin", sys.executable, "--workload", "txn-list-append", *flags,
                  "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert exit_.value.code == 254 and says in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "results").exists()


def test_maelstrom_txn_knobs_become_the_txn_workloads_options() -> None:
    """--key-count, --max-txn-length, --max-writes-per-key and --consistency-models (Maelstrom's,
    spaces around commas allowed) are run's workload options; not given, none is (Maelstrom's
    defaults are the workloads' own)."""
    parser = argparse.ArgumentParser()
    maelstrom_command.add_arguments(parser)
    base = ["--bin", sys.executable, "--workload", "txn-rw-register"]
    argv = maelstrom_command.run_argv(parser.parse_args(
        [*base, "--key-count", "7", "--max-txn-length", "2", "--max-writes-per-key", "9",
         "--consistency-models", "read-committed, serializable"]))
    options = runflags.collect_options(runflags.parser().parse_args(argv))
    assert {k: options[k] for k in ("key_count", "max_txn_length", "max_writes_per_key",
                                     "consistency_models")} == {
        "key_count": 7, "max_txn_length": 2, "max_writes_per_key": 9,
        "consistency_models": "read-committed,serializable"}
    plain = maelstrom_command.run_argv(parser.parse_args(base))
    assert "--workload-option" not in plain


@pytest.mark.parametrize("workload, given, final_delay", [
    ("g-set", [], 10.0), ("kafka", ["--recovery-wait", "2.5"], 2.5), ("echo", [], None),
    ("txn-list-append", [], None)])
def test_the_final_reads_wait_for_recovery_as_maelstroms_do(
        workload: str, given: list[str], final_delay: float | None) -> None:
    """Maelstrom waits 10 s after the heal before the final reads of the workloads that have them
    (its final-generator); --recovery-wait changes it; the others get no wait."""
    parser = argparse.ArgumentParser()
    maelstrom_command.add_arguments(parser)
    argv = maelstrom_command.run_argv(parser.parse_args(
        ["--bin", sys.executable, "--workload", workload, *given]))
    options = runflags.collect_options(runflags.parser().parse_args(argv))
    assert options.get("final_delay") == final_delay


#: An echo node that refuses every third echo with error 11 (temporarily-unavailable, definite).
REFUSING_NODE = """
import json, sys

me, n = None, 0
for line in sys.stdin:
    msg = json.loads(line)
    body = msg["body"]
    reply = {"in_reply_to": body["msg_id"], "type": "echo_ok", "echo": body.get("echo")}
    if body["type"] == "init":
        me = body["node_id"]
        reply = {"in_reply_to": body["msg_id"], "type": "init_ok"}
    else:
        n += 1
        if n % 3 == 0:
            reply = {"in_reply_to": body["msg_id"], "type": "error", "code": 11, "text": "busy"}
    print(json.dumps({"src": me, "dest": msg["src"], "body": reply}), flush=True)
"""


@pytest.mark.parametrize("given, fraction", [(["--availability", "total"], 1.0),
                                             (["--availability", "0.99"], 0.99), ([], None)])
def test_maelstroms_availability_is_the_ok_fraction_the_run_needs(
        given: list[str], fraction: float | None) -> None:
    parser = argparse.ArgumentParser()
    maelstrom_command.add_arguments(parser)
    argv = maelstrom_command.run_argv(parser.parse_args(["--bin", sys.executable, "--workload", "echo",
                                                         *given]))
    assert runflags.parser().parse_args(argv).availability_min_ok_fraction == fraction


def test_an_echo_node_that_refuses_some_requests_fails_total_availability(tmp_path: Path) -> None:
    """Maelstrom's --availability total: a node answering one echo in three with a definite error
    is safe (the echo checker passes) but not available enough."""
    python, path = write_node(tmp_path, "refusing", REFUSING_NODE)
    code = maelstrom(tmp_path, "--bin", python, "--bin-arg", path, "--workload", "echo",
                     "--node-count", "1", "--rate", "50", "--availability", "total", time_limit="1")
    r = json.loads((tmp_path / "results" / "latest" / "results.json").read_text())
    assert code == 1 and r["checkers"]["availability"]["valid"] is False, r["checkers"]["availability"]


def test_kill_and_pause_act_on_the_node_processes(tmp_path: Path) -> None:
    """The project's kill and pause nemeses, unchanged, through the DB's kill/start/pause/resume: a
    killed node is started again with a fresh init, and the run ends with a verdict."""
    code = cli.main(["run", "--backend", "maelstrom", *tiny(tmp_path, "echo_kp"), "--workload", "echo",
                     "--node-count", "3", "--rate", "30", "--nemesis", "kill,pause", "--nemesis-interval",
                     "0.5", "--op-timeout", "1", "--time-limit", "3", "--seed", "3", "--results-dir",
                     str(tmp_path / "results"), "--no-progress"])
    assert code in (0, 1)
    history = [json.loads(line) for line in
               (tmp_path / "results" / "latest" / "history.jsonl").read_text().splitlines()]
    faults = [op for op in history if op["process"] == "nemesis" and op["type"] == "info"]
    assert {op["f"] for op in faults} & {"kill", "pause"}
    for op in faults:
        if op["f"] in ("kill", "start", "pause", "resume"):
            assert set(op["value"]["results"].values()) <= {"ok"}, op
    assert results(tmp_path)["checkers"]["echo"]["valid"] is True
