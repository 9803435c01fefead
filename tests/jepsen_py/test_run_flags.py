"""`run` flags a user can get wrong are refused with one line (254) before anything is provisioned:
no run directory appears, no node is started."""

from __future__ import annotations

from pathlib import Path

import pytest

from jepsen_py import cli
from jepsen_py import spec as specmod
from jepsen_py.errors import BadInput
from tests.jepsen_py.test_cli import FAKE_DB, use_fakes


def refused(capsys, tmp_path: Path, *argv: str, results: Path | None = None) -> str:
    results = results or tmp_path / "results"
    capsys.readouterr()
    try:
        code = cli.main(["run", "--backend", "none", "--time-limit", "0.2", "--no-progress",
                         "--results-dir", str(results), *argv])
    except SystemExit as e:  # refused by the parser
        code = e.code
    err = capsys.readouterr().err
    assert code == 254, err
    assert "Traceback" not in err
    assert not (results.is_dir() and any(results.iterdir())), "a run directory was made"
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(("argv", "words"), [
    (["--nodes", "n1,n1,n2"], "n1 named more than once"),
    (["--nodes", ""], "no node names"),
    (["--nodes", ","], "no node names"),
    (["--nodes", "n1,,n2"], "empty node name"),
    (["--nodes", "n1;rm -rf /"], "not a usable node name"),
    (["--nodes", "$(id)"], "not a usable node name"),
    (["--node-count", "100000"], "more than this machine holds"),
    (["--concurrency", "1000000"], "more than this machine drives"),
    (["--concurrency", "99999999999999n"], "--concurrency"),
    # the machine's limit overridden, jepsen-py's own still holds: 10^6 clients were a 255
    (["--concurrency", "1000000", "--ignore-machine-limits"], "at most 10000, even with --ignore"),
    (["--concurrency", "10001", "--ignore-machine-limits"], "at most 10000, even with --ignore"),
    (["--node-count", "1001", "--ignore-machine-limits"], "at most 1000, even with --ignore"),
    (["--ssh-port", "0"], "--ssh-port"),
    (["--ssh-port", "65536"], "--ssh-port"),
    (["--bug", "no-such-bug"], "--bug: unknown bug 'no-such-bug'"),
    (["--bug", "zombie-leader,bogus"], "unknown bug 'bogus'"),
    (["--no-such-flag"], "unrecognized arguments"),
    (["--time-limit", "-1"], "--time-limit"),
    (["--rate", "nan"], "--rate"),
    # VALUE is JSON: NaN was a float NaN, int() of it a 255; -3 silently meant 1; 10^11 keys were
    # made until the simulator's watchdog stopped the generator
    (["--workload-option", "active_keys=NaN"], "active_keys: expected a whole number"),
    (["--workload-option", "active_keys=inf"], "active_keys: expected a whole number"),
    (["--workload-option", "active_keys=1e999"], "active_keys: expected a whole number"),
    (["--workload-option", "active_keys=-3"], "active_keys: must be 1..100000"),
    (["--workload-option", "active_keys=100000000000"], "active_keys: must be 1..100000"),
    (["--workload-option", "active_keys=2.5"], "active_keys: expected a whole number"),
    (["--workload-option", "ops_per_key=0"], "ops_per_key: must be 1..1000000000"),
    (["--workload-option", "read_fraction=NaN"], "read_fraction: expected a number"),
    (["--workload-option", "read_fraction=1.5"], "read_fraction: must be 0..1"),
    (["--workload-option", "final_delay=-1"], "final_delay: must be 0..604800"),
    (["--workload-option", "linearizable=yes"], "linearizable: expected true or false"),
    (["--workload-option", "active_keys=2", "--workload-option", "active_keys=3"],
     "active_keys given more than once"),
    # MODULE of MODULE:CLASS went to importlib as given: a path was its TypeError, a 255
    (["--db", "../etc/passwd:x"], "--db: '../etc/passwd' is not a Python module name"),
    (["--db", ".raftdb:RaftMetadataDB"], "--db: '.raftdb' is not a Python module name"),
    (["--db", "os:a/b"], "--db: 'a/b' is not a Python name"),
    (["--workload", "../x:y"], "--workload: '../x' is not a Python module name"),
    (["--nemesis", "../x:y"], "--nemesis: '../x' is not a Python module name"),
    (["--checker", "/tmp/x:y"], "--checker: '/tmp/x' is not a Python module name"),
    (["--generator", ".x:y"], "--generator: '.x' is not a Python module name"),
    (["--seed", str(2**63)], "--seed: must be <= 9223372036854775807, got 9223372036854775808"),
    # run i has seed + i: the second run's seed would not fit Parquet's int64 at the export
    (["--seed", str(2**63 - 1), "--test-count", "2"], "seeds up to 9223372036854775808, past"),
])
def test_bad_run_flags_are_refused_before_provisioning(capsys, tmp_path, argv, words) -> None:
    assert words in refused(capsys, tmp_path, *argv)


def test_a_bug_for_a_db_that_declares_none_is_refused(capsys, tmp_path, monkeypatch) -> None:
    use_fakes(monkeypatch)
    err = refused(capsys, tmp_path, "--workload", "register", "--db", FAKE_DB, "--bug", "zombie-leader")
    assert "unknown bug 'zombie-leader'" in err and "known: none" in err


def test_outputs_are_checked_before_the_run(capsys, tmp_path, monkeypatch) -> None:
    use_fakes(monkeypatch)
    fake = ["--workload", "register", "--db", FAKE_DB]
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert "is not a directory" in refused(capsys, tmp_path, *fake, results=blocker)
    (tmp_path / "out").mkdir()
    assert "is a directory" in refused(capsys, tmp_path, *fake, "--junit-xml", str(tmp_path / "out"))
    assert "does not exist" in refused(capsys, tmp_path, *fake, "--junit-xml",
                                       str(tmp_path / "nowhere" / "j.xml"))


def test_the_machine_limits_can_be_overridden() -> None:
    nodes, clients = specmod.machine_limits()
    assert nodes >= 9 and clients >= 64
    with pytest.raises(BadInput, match="ignore-machine-limits"):
        specmod.check_size(nodes + 1, 1)
    specmod.check_size(nodes + 1, clients + 1, override=True)
    specmod.check_size(1000, 10_000, override=True)
    with pytest.raises(BadInput, match="at most 10000, even with"):
        specmod.check_size(3, 10**6, override=True)


def test_the_python_api_has_the_same_bounds() -> None:
    from jepsen_py.api import JepsenTest

    with pytest.raises(BadInput, match="at most 10000"):
        JepsenTest(db=FAKE_DB, concurrency=10**6, backend="none").spec()
    assert JepsenTest(db=FAKE_DB, nodes=5, concurrency="2n", backend="none").spec().concurrency == 10


def test_fsync_history_reaches_the_spec(tmp_path) -> None:
    import argparse

    p = argparse.ArgumentParser()
    specmod.add_arguments(p)
    assert specmod.from_args(p.parse_args(["--fsync-history"])).options["fsync_history"] is True
    assert specmod.from_args(p.parse_args([])).options["fsync_history"] is False
