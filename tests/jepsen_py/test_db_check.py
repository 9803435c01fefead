"""`jepsen-py db-check`: our cluster passes every step in the simulator and on Docker; a DB that
leaves its daemon running after teardown, or reports a status without the keys the checkers read,
fails those steps (exit 1); bad arguments are one line and 254."""

from __future__ import annotations

from typing import Any

import pytest

from jepsen_py import cli
from jepsen_py.protocols import Test
from jepsen_py.raftdb import RaftMetadataDB


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
