"""`jepsen-py db-check`: our cluster passes every step in the simulator and on Docker; a DB that
leaves its daemon running after teardown, or reports a status without the keys the checkers read,
fails those steps (exit 1), and so does one whose hook never returns (within --timeout, and the
check ends); bad arguments are one line and 254."""

from __future__ import annotations

from typing import Any

import pytest

from jepsen_py import cli
from jepsen_py.protocols import Test
from jepsen_py.raftdb import RaftMetadataDB
from tests.jepsen_py import hostile


class SloppyDB(RaftMetadataDB):
    """Our cluster with two mistakes a plugin author makes: teardown stops nothing, and status
    leaves out the term."""

    def teardown(self, test: Test, node: str) -> None:
        pass

    def status(self, test: Test, node: str) -> dict[str, Any] | None:
        st = super().status(test, node)
        return None if st is None else {k: v for k, v in st.items() if k != "term"}


def db_check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = cli.main(["db-check", *argv])
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def works(out: str, step: str) -> bool:
    """The table's row for `step` says it works."""
    return any(line.startswith(f"│ {step} ") and "works" in line for line in out.splitlines())


def test_our_cluster_in_the_simulator(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = db_check(capsys, "--backend", "sim", "--workload", "offsets", "--workload", "topics")
    assert code == 0, out + err
    for step in ("setup", "workload offsets", "workload topics", "primaries", "status", "kill/start",
                 "pause/resume"):
        assert works(out, step), (step, out)
    assert "0 fail" in out


@pytest.mark.parametrize(("argv", "words"), [
    (["--db-option", "colour=red"], "takes no 'colour' (it takes: none)"),
    (["--db", "no_such_module:DB"], "--db: no module named 'no_such_module'"),
    (["--backend", "none"], "db-check needs nodes to run the DB on"),
    (["--backend", "sim", "--docker-image", "x"], "--docker-image: not an option of the simulator"),
    (["--db", "tests.jepsen_py.fakes:FakeDB", "--read-mode", "lease"], "has no read modes"),
])
def test_bad_arguments_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    code, out, err = db_check(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 254 and len(lines) == 1 and words in lines[0], (out, err)


@pytest.mark.docker
def test_our_cluster_on_docker(capsys: pytest.CaptureFixture[str], node_image: str) -> None:
    code, out, err = db_check(capsys, "--backend", "docker", "--docker-image", node_image,
                              "--workload", "offsets")
    assert code == 0, out + err
    for step in ("provision", "setup", "primaries", "status", "log files", "workload offsets",
                 "kill/start", "pause/resume", "teardown"):
        assert works(out, step), (step, out)
    assert "no listening port or process left behind" in out


@pytest.mark.docker
def test_a_leftover_daemon_and_a_status_without_term_fail(capsys: pytest.CaptureFixture[str],
                                                         node_image: str) -> None:
    code, out, err = db_check(capsys, "--db", "tests.jepsen_py.test_db_check:SloppyDB", "--backend", "docker",
                              "--docker-image", node_image, "--workload", "offsets")
    assert code == 1, out + err
    flat = " ".join(out.split())
    assert "still listens on 9092" in flat and "lacks term" in flat, out
    assert "failing: status, teardown" in flat


def test_our_cluster_on_the_local_backend(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import require
    from tests.jepsen_py.test_backend_local import local_available

    require("root with network namespaces and iptables", local_available())
    code, out, err = db_check(capsys, "--backend", "local", "--workload", "offsets")
    assert code == 0, out + err
    for step in ("setup", "primaries", "status", "workload offsets", "kill/start", "pause/resume",
                 "teardown"):
        assert works(out, step), (step, out)


released = pytest.fixture(hostile.releasing)


@pytest.mark.parametrize(("db", "step", "said", "not_tried"), [
    ("CheckStuckSetupDB", "setup", "setup did not return within 1 s on n1, n2, n3 (left behind)", []),
    ("CheckStuckStatusDB", "status", "status(test, 'n1') did not return within 1 s (left behind)",
     ["log files", "workload register"]),
    ("CheckStuckInvokeDB", "workload register", "invoke(write) did not return within 1 s (left behind)", []),
])
def test_a_hook_that_never_returns_fails_its_step_and_ends_the_check(
        capsys: pytest.CaptureFixture[str], released: None, db: str, step: str, said: str,
        not_tried: list[str]) -> None:
    """Every hook db-check tries gets --timeout: one that does not return fails its step, named in
    its one row; the steps after it are not tried, the nodes are still torn down, and db-check
    ends (exit 1)."""
    from tests.conftest import require
    from tests.jepsen_py.test_backend_local import local_available

    require("root with network namespaces and iptables", local_available())
    capsys.readouterr()
    code = hostile.run_cli(["db-check", "--backend", "local", "--db", f"{hostile.HERE}:{db}",
                            "--timeout", "1"])
    out = capsys.readouterr().out
    assert code == 1, out
    flat = " ".join(out.replace("│", " ").split())  # the table's cells, wrapped lines joined
    rows = [line for line in out.splitlines() if line.startswith(f"│ {step} ")]
    assert len(rows) == 1 and "FAILS" in rows[0] and said in flat, out
    assert f"(failing: {step})" in flat
    assert works(out, "teardown"), out
    for later in not_tried:
        assert f"not tried: {said.split(' did not')[0]} did not return" in flat and any(
            line.startswith(f"│ {later} ") and "skipped" in line for line in out.splitlines()), (later, out)
