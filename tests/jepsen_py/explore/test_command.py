"""`jepsen-py explore` and `jepsen-py run --schedule`: what a user can get wrong is one line, exit 254,
before anything runs or is created."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jepsen_py.cli import main
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.schedule import Event, Schedule

RAFT = "jepsen_py.raftdb:RaftMetadataDB"


def _code(argv: list[str]) -> int:
    """The exit code, whether the command returned it or argparse raised it."""
    try:
        return main(argv)
    except SystemExit as e:
        return int(e.code or 0)


@pytest.mark.parametrize("argv, message", [
    (["--backend", "none"], "--backend none: has no nodes to run a DB on"),
    (["--backend", "docker", "--bug", "no-such-bug"], "--bug: unknown bug 'no-such-bug' for "),
    (["--backend", "docker", "--workload", "register"], "serves offsets, topics"),
    (["--backend", "docker", "--read-mode", "eventual"], f"--read-mode: {RAFT} serves"),
    (["--backend", "docker", "--db-option", "reads=stale"], f"--db-option: {RAFT} takes no"),
    (["--backend", "docker", "--db-option", "nokey"], "--db-option: expected KEY=VALUE"),
    (["--backend", "docker", "--nemesis", "flood"], "'flood' is not a fault family"),
    (["--backend", "docker", "--db", "no_such_module_xyz:DB"], "--db"),
    (["--backend", "docker", "--db", "tests.jepsen_py.explore.plaindb:PlainDB", "--workload", "register",
      "--nemesis", "kill"], "--nemesis: kill needs a DB that can kill and restart its nodes"),
    (["--backend", "docker", "--db", "tests.jepsen_py.explore.plaindb:PlainDB", "--workload", "register",
      "--nemesis", "leader-clock"], "name its leaders and pause and resume its nodes and run its daemons"),
    (["--backend", "docker", "--db", "tests.jepsen_py.explore.plaindb:PlainDB"],
     "declares no workloads() to explore"),
    (["--backend", "docker", "--db", "tests.jepsen_py.explore.plaindb:PlainDB", "--workload", "register",
      "--read-mode", "lease"], "--read-mode: tests.jepsen_py.explore.plaindb:PlainDB has no read modes"),
    (["--backend", "docker", "--reproduce", "3/2"], "--reproduce: K must be from 1 to N"),
    (["--backend", "docker", "--reproduce", "0/2"], "--reproduce: K must be from 1 to N"),
    (["--backend", "docker", "--reproduce", "1/0"], "--reproduce: N must be from 1 to 20"),
    (["--backend", "docker", "--reproduce", "1/99"], "--reproduce: N must be from 1 to 20"),
    (["--backend", "docker", "--reproduce", "half"], "--reproduce: expected K/N"),
    (["--backend", "docker", "--reproduce", "1/2/3"], "--reproduce: expected K/N"),
    (["--reproduce", "1/2"], "--reproduce: a simulated replay is exact"),
    (["--ssh-host", "n1=h1"], "--ssh-host: not an option of the simulator"),
    (["--backend", "ssh"],
     "--backend ssh: explore runs on the hosts you name, one --ssh-host NODE=HOST[:PORT] per node"),
    (["--backend", "ssh", "--ssh-host", "n1=h1", "--ssh-host", "n2=h2", "--ssh-host", "n3=h3",
      "--node-count", "5"], "--node-count 5: --backend ssh has 3 host(s) (n1, n2, n3)"),
    (["--backend", "ssh", "--ssh-host", "n1=h1", "--ssh-host", "n1=h2"], "--ssh-host: node 'n1' given twice"),
    (["--backend", "ssh", "--ssh-host", "n/1=h1"], "--ssh-host"),
    (["--backend", "docker", "--db", "tests.jepsen_py.explore.plaindb:PlainDB", "--workload", "register",
      "--bug", "x"], "--bug: unknown bug 'x' for tests.jepsen_py.explore.plaindb:PlainDB (known: none)"),
    (["--db", "tests.jepsen_py.explore.plaindb:PlainDB"], "--db: the simulator runs our cluster only"),
    (["--db-option", "reads=stale"], "--db-option: our cluster in the simulator takes none"),
    (["--bug", "no-such-bug"], "--bug: unknown bug 'no-such-bug' (known: split-brain"),
    (["--workload", "register"], "'register' cannot be explored"),
    (["--nemesis", "flood"], "'flood' is not a fault family"),
    (["--read-mode", "eventual"], "unknown read mode 'eventual'"),
    (["--budget", "0"], "--budget"),
    (["--budget", "nan"], "--budget"),
    (["--node-count", "0"], "--node-count"),
    (["--time-limit", "-3"], "--time-limit"),
    (["--budgt", "3"], "unrecognized arguments"),
])
def test_explore_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                           message: str) -> None:
    code = _code(["explore", *argv, "--results-dir", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 254
    assert message in err
    assert err.strip().count("\n") == 0 or "usage:" in err, err  # one line (argparse adds its usage)
    assert not (tmp_path / "r").exists(), "nothing is created for a refused command"


def _schedule_file(tmp_path: Path) -> Path:
    s = Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=1, time_limit=5.0, concurrency=3,
                 events=[Event(1.0, "nemesis", "start-partition", value="leader"),
                         Event(3.0, "nemesis", "stop-partition")], anomaly="stale-read")
    return sched.save(s, tmp_path / "s.json")


@pytest.mark.parametrize("extra, message", [
    (["--seed", "4"], "--seed: the schedule file decides this"),
    (["--nemesis", "kill"], "--nemesis: the schedule file decides this"),
    (["--bug", "zombie-leader"], "--bug: the schedule file decides this"),
    (["--node-count", "3"], "--node-count: the schedule file decides this"),
    (["--read-mode", "lease"], "--read-mode: the schedule file decides this"),
    (["--db-option", "reads=replica"], "--db-option: the schedule file decides this"),
    (["--test-count", "2"], "a schedule is one run"),
    (["--backend", "floppy"], "unknown backend 'floppy'"),
    (["--backend", "ssh", "--ssh-host", "n1=h1", "--ssh-host", "n2=h2"],
     "s.json runs on n1, n2, n3; --ssh-host NODE=HOST[:PORT] names n1, n2, not n3"),
    (["--backend", "sim", "--ssh-host", "n1=h1"], "--ssh-host: not an option of the simulator"),
])
def test_run_schedule_refuses_flags_the_schedule_decides(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          extra: list[str], message: str) -> None:
    code = _code(["run", "--schedule", str(_schedule_file(tmp_path)), *extra, "--results-dir",
                 str(tmp_path / "r"), "--no-progress"])
    assert code == 254
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("{", "not valid JSON"),
    (json.dumps({"workload": "offsets"}), "missing 'nodes'"),
])
def test_run_schedule_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None,
                               message: str) -> None:
    path = tmp_path / "s.json"
    if content is not None:
        path.write_text(content)
    code = main(["run", "--schedule", str(path), "--results-dir", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 254 and message in err and err.count("\n") == 1


@pytest.mark.parametrize("change, message", [
    ({"time_limit": 86_401}, "the bound of --time-limit"),
    ({"time_limit": 1e308}, "the bound of --time-limit"),
    ({"nemesis_interval": 1e308}, "the bound of --nemesis-interval"),
    ({"concurrency": 10**6}, "clients is more than this machine drives"),
    ({"nodes": [f"n{i}" for i in range(1, 5001)]}, "nodes is more than this machine holds"),
    ({"options": {"rate": 1e308}}, "the bound of --rate"),
])
def test_run_schedule_numbers_past_the_flags_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    change: dict[str, object], message: str) -> None:
    """A schedule may ask for no more than the `run` flags allow: a day-long main phase, a million
    clients or an interval of 1e308 s are one line before anything runs (they hung or crashed)."""
    d = json.loads(_schedule_file(tmp_path).read_text())
    d.update(change)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(d))
    code = _code(["run", "--schedule", str(path), "--backend", "sim", "--results-dir", str(tmp_path / "r"),
                  "--no-progress"])
    err = capsys.readouterr().err
    assert code == 254 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()


def test_run_schedule_deeply_nested_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"options": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code = _code(["run", "--schedule", str(path), "--backend", "sim", "--results-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 254 and "nested deeper than a schedule is" in err and err.count("\n") == 1, err


def test_run_schedule_stretched_past_the_time_limit_bound_on_a_real_backend(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real backend's replay runs the main phase longer than recorded; past --time-limit's bound it
    is refused before anything is provisioned."""
    s = Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=1, time_limit=86_400.0, concurrency=3,
                 events=[Event(86_399.0, "nemesis", "start-partition", value="leader")])
    path = sched.save(s, tmp_path / "long.json")
    code = _code(["run", "--schedule", str(path), "--backend", "none", "--results-dir", str(tmp_path / "r"),
                  "--no-progress"])
    err = capsys.readouterr().err
    assert code == 254 and "stretched for a real backend" in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()


def test_run_schedule_goes_to_the_hosts_the_backend_options_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--ssh-host (like every backend option) reaches the replay: it went to hosts called n1, n2, n3
    on port 22 instead. Port 1 on loopback refuses at once, so the line names where it went."""
    hosts = [x for n in ("n1", "n2", "n3") for x in ("--ssh-host", f"{n}=127.0.0.1:1")]
    code = _code(["run", "--schedule", str(_schedule_file(tmp_path)), "--backend", "ssh", *hosts,
                  "--results-dir", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 254 and "127.0.0.1:1): cannot connect" in err, err
