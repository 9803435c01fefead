"""The command line: help that reads well, one-line errors with exit 254, and `run` / `analyze` end
to end against the in-process DB (the real cluster's runs are tested with the cluster)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.workloads import WORKLOADS

from jepsen_py import cli
from jepsen_py.errors import EnvironmentProblem
from jepsen_py.history import read_history, validate
from jepsen_py.protocols import TestSpec
from tests.jepsen_py.fakes import FakeDB, register_workload

FAKE_DB = "tests.jepsen_py.fakes:FakeDB"
REPO = Path(__file__).resolve().parents[2]


def jepsen(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_help_lists_the_commands_and_exit_codes() -> None:
    p = jepsen("--help")
    assert p.returncode == 0
    for word in ("run", "analyze", "254", "255"):
        assert word in p.stdout


def test_run_help_lists_the_options() -> None:
    p = jepsen("run", "--help")
    assert p.returncode == 0
    for flag in ("--workload", "--nemesis", "--nodes", "--node-count", "--time-limit", "--concurrency",
                 "--rate", "--nemesis-interval", "--test-count", "--seed", "--backend", "--read-mode",
                 "--bug", "--leave-db-running", "--results-dir", "--db", "--junit-xml"):
        assert flag in p.stdout, flag
    assert "3n" in p.stdout.replace("Kn", "3n")


def test_no_command_prints_help_and_exits_254() -> None:
    p = jepsen()
    assert p.returncode == 254 and "COMMAND" in p.stdout


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "--time-limit", "0"], "--time-limit: must be > 0"),
    (["run", "--workload", "no-such-workload"], "--workload: unknown workload 'no-such-workload'"),
    (["run", "--nemesis", "no-such-nemesis"], "unknown nemesis"),
    (["run", "--backend", "vagrant"], "--backend: unknown backend 'vagrant'"),
    (["run", "--concurrency", "lots"], "--concurrency"),
    (["run", "--bogus-flag"], "unrecognized arguments: --bogus-flag"),
    (["run", "--read-mode", "eventual"], "invalid choice: 'eventual'"),
    (["analyze", "/nonexistent/run"], "/nonexistent/run: no such run directory"),
])
def test_bad_input_is_one_line_and_254(argv: list[str], message: str) -> None:
    p = jepsen(*argv)
    assert p.returncode == 254, p.stderr
    assert message in p.stderr
    assert "Traceback" not in p.stderr
    assert len([ln for ln in p.stderr.splitlines() if ln.startswith("jepsen-py")]) == 1


def test_an_unwritable_results_dir_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = cli.main(["run", "--workload", "register", "--db", FAKE_DB, "--backend", "none",
                     "--results-dir", str(blocker), "--time-limit", "0.2", "--no-progress"])
    assert code == 254
    assert "is not a directory" in capsys.readouterr().err


def use_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    def factory(spec: TestSpec) -> Any:
        return register_workload(final=True)

    monkeypatch.setitem(WORKLOADS, "register", factory)


def fake_run(tmp_path: Path, *extra: str) -> list[str]:
    """`run` against the in-process DB; a flag in `extra` replaces the default one here (a flag
    given twice is refused)."""
    base = {"--workload": "register", "--db": FAKE_DB, "--backend": "none", "--node-count": "3",
            "--time-limit": "0.5", "--rate": "200", "--recovery-timeout": "0", "--seed": "5",
            "--results-dir": str(tmp_path / "results")}
    kept = [t for flag, value in base.items() if flag not in extra for t in (flag, value)]
    return ["run", *kept, "--no-progress", *extra]


def test_run_end_to_end_with_an_in_process_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch)
    junit = tmp_path / "junit.xml"
    code = cli.main(fake_run(tmp_path, "--junit-xml", str(junit)))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict" in out and "true" in out and "stored in" in out
    run_dir = (tmp_path / "results" / "latest").resolve()
    assert run_dir.parent.name == "register-none"
    spec = json.loads((run_dir / "test.json").read_text())
    assert spec["seed"] == 5 and spec["nodes"] == ["n1", "n2", "n3"] and spec["concurrency"] == 6
    assert json.loads((run_dir / "results.json").read_text())["valid"] is True
    suite = ET.parse(junit).getroot()
    assert suite.get("name") == f"register-none/{run_dir.name}"
    assert suite.get("tests") == str(1 + len(json.loads((run_dir / "results.json").read_text())["checkers"]))
    assert float(suite.get("time")) > 0


def test_test_count_runs_each_in_its_own_dir_with_its_own_seed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path, "--test-count", "2", "--time-limit", "0.2")) == 0
    assert "overall: true over 2 runs (2 valid, 0 invalid, 0 unknown)" in capsys.readouterr().out
    runs = sorted(p for p in (tmp_path / "results" / "register-none").iterdir() if p.name != "latest")
    assert len(runs) == 2
    assert [json.loads((r / "test.json").read_text())["seed"] for r in runs] == [5, 6]


def test_analyze_rechecks_a_stored_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path)) == 0
    run_dir = (tmp_path / "results" / "latest").resolve()
    before = json.loads((run_dir / "results.json").read_text())
    capsys.readouterr()
    assert cli.main(["analyze", str(run_dir)]) == 0
    after = json.loads((run_dir / "results.json").read_text())
    assert after["valid"] is True and "analyzed" in after
    assert after["checkers"] == before["checkers"]
    assert "verdict" in capsys.readouterr().out

    # A phantom read planted in the history turns the verdict to invalid (exit 1).
    history = run_dir / "history.jsonl"
    lines = history.read_text().splitlines()
    for i, line in enumerate(lines):
        op = json.loads(line)
        if op["f"] == "read" and op["type"] == "ok":
            op["value"] = "never-written"
            lines[i] = json.dumps(op)
            break
    history.write_text("\n".join(lines) + "\n")
    assert cli.main(["analyze", str(tmp_path / "results")]) == 1
    assert json.loads((run_dir / "results.json").read_text())["valid"] is False


def test_analyze_writes_junit_only_into_an_existing_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`analyze --junit-xml /nonexistent/dir/x.xml` made the whole directory tree: a typo in a CI
    path went unnoticed. Now refused (254) before the run is re-checked; the file itself is made."""
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path)) == 0
    run_dir = (tmp_path / "results" / "latest").resolve()
    results = (run_dir / "results.json").read_text()
    capsys.readouterr()
    nowhere = tmp_path / "nowhere" / "dir" / "x.xml"
    assert cli.main(["analyze", str(run_dir), "--junit-xml", str(nowhere)]) == 254
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == f"jepsen-py: --junit-xml: directory {tmp_path / 'nowhere' / 'dir'} does not exist"
    assert not (tmp_path / "nowhere").exists()
    assert (run_dir / "results.json").read_text() == results  # not re-checked
    assert cli.main(["analyze", str(run_dir), "--junit-xml", str(tmp_path / "x.xml")]) == 0
    assert ET.parse(tmp_path / "x.xml").getroot().tag == "testsuite"


def test_analyze_refuses_a_torn_tail_unless_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path)) == 0
    run_dir = (tmp_path / "results" / "latest").resolve()
    history = run_dir / "history.jsonl"
    n = len(history.read_text().splitlines())
    with history.open("a") as f:
        f.write('{"index": 99999, "time": 1, "ty')
    capsys.readouterr()
    assert cli.main(["analyze", str(run_dir)]) == 254
    assert f"history.jsonl:{n + 1}: history truncated mid-line" in capsys.readouterr().err
    assert cli.main(["analyze", "--allow-truncated", str(run_dir)]) == 0
    assert f"history.jsonl:{n + 1}: torn last line skipped" in capsys.readouterr().err


def test_analyze_bad_history_names_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path)) == 0
    run_dir = (tmp_path / "results" / "latest").resolve()
    history = run_dir / "history.jsonl"
    lines = history.read_text().splitlines()
    results_before = (run_dir / "results.json").read_text()

    lines_bad = [*lines[:9], "{this is not json", *lines[9:]]
    history.write_text("\n".join(lines_bad) + "\n")
    p = jepsen("analyze", str(run_dir))
    assert p.returncode == 254
    assert f"{history}:10: not a JSON object" in p.stderr and "Traceback" not in p.stderr

    # A completion without its invocation breaks Jepsen's rules: named by line too.
    first_invoke = next(i for i, ln in enumerate(lines) if '"type":"invoke"' in ln and '"process":0,' in ln)
    history.write_text("\n".join(lines[:first_invoke] + lines[first_invoke + 1:]) + "\n")
    p = jepsen("analyze", str(run_dir))
    assert p.returncode == 254
    assert f"{history}:" in p.stderr and "without an invocation" in p.stderr
    assert (run_dir / "results.json").read_text() == results_before  # nothing already written is lost


class NoEngineDB(FakeDB):
    """A DB whose nodes cannot be reached: what a stopped Docker engine looks like to the runner."""

    def setup(self, test: Any, node: str) -> None:
        raise EnvironmentProblem("no Docker engine reachable: start dockerd")


def test_an_environment_problem_is_one_line_254_after_cleanup(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch)
    argv = fake_run(tmp_path, "--test-count", "3")
    argv[argv.index(FAKE_DB)] = "tests.jepsen_py.test_cli:NoEngineDB"
    assert cli.main(argv) == 254
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if ln.strip()] == [
        ln for ln in err.splitlines() if ln.startswith("jepsen-py: no Docker engine reachable")]
    runs = [p for p in (tmp_path / "results" / "register-none").iterdir() if p.name != "latest"]
    assert len(runs) == 1  # stopped at the first run
    assert "no Docker engine" in json.loads((runs[0] / "results.json").read_text())["error"]


DRIVER = """
import sys
from jepsen_py import cli
from jepsen_py.workloads import WORKLOADS
from tests.jepsen_py.fakes import register_workload
WORKLOADS["register"] = lambda spec: register_workload()
sys.exit(cli.main(sys.argv[1:]))
"""


def test_sigterm_heals_and_tears_down_like_ctrl_c(tmp_path: Path) -> None:
    """A cancelled CI job (SIGTERM) still gets heal, teardown and a results.json."""
    import os
    import signal
    import time

    junit = tmp_path / "report.xml"
    argv = fake_run(tmp_path, "--time-limit", "60", "--junit-xml", str(junit))
    p = subprocess.Popen([sys.executable, "-c", DRIVER, *argv], cwd=REPO, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    history = tmp_path / "results" / "register-none"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = list(history.glob("*/history.jsonl")) if history.exists() else []
        if runs and runs[0].stat().st_size > 10_000:
            break
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 255, err
    assert "interrupted" in err
    run_dir = (tmp_path / "results" / "latest").resolve()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["error"] == "interrupted"
    assert "teardown" in results["stats"]["phases"]
    # A gate that reads only the JUnit report must see the interrupted run as an error, not a pass.
    import xml.etree.ElementTree as ET

    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    assert suite is not None and int(suite.get("tests", "0")) >= 1
    assert int(suite.get("errors", "0")) >= 1
    assert suite.find("testcase/error") is not None


def test_a_controller_killed_mid_run_leaves_an_analyzable_history(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kill -9 of `jepsen-py run` at full speed: every op already recorded reads back, the history
    obeys Jepsen's rules (ops in flight simply have no completion), and analyze can check it."""
    import os
    import signal
    import time

    argv = fake_run(tmp_path, "--time-limit", "60", "--rate", "0")
    p = subprocess.Popen([sys.executable, "-c", DRIVER, *argv], cwd=REPO, text=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    history_dir = tmp_path / "results" / "register-none"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = list(history_dir.glob("*/history.jsonl")) if history_dir.exists() else []
        if runs and runs[0].stat().st_size > 200_000:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait(30)
    run_dir = (tmp_path / "results" / "latest").resolve()
    assert not (run_dir / "results.json").exists()
    ops = read_history(run_dir / "history.jsonl")
    assert len(ops) > 1000
    validate(ops)
    use_fakes(monkeypatch)
    assert cli.main(["analyze", "--allow-truncated", "--no-render", str(run_dir)]) == 0
    assert json.loads((run_dir / "results.json").read_text())["valid"] is True
