"""The store: run directory names, atomic JSON, latest links, and one-line errors."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from pathlib import Path

import pytest

from jepsen_py import store
from jepsen_py.errors import BadInput, EnvironmentProblem
from tests.jepsen_py.fakes import make_spec


def test_timestamp_format_sorts_as_text() -> None:
    assert store.timestamp(0.0) == "19700101T000000.000"
    assert store.timestamp(1_700_000_000.9999) == "20231114T221320.999"
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{3}", store.timestamp())


def test_run_dirs_are_unique_within_a_millisecond(tmp_path: Path) -> None:
    dirs = [store.create_run_dir(tmp_path, "t", now=1.5) for _ in range(3)]
    assert [d.name for d in dirs] == ["19700101T000001.500", "19700101T000001.500-1", "19700101T000001.500-2"]
    assert all(d.parent == tmp_path / "t" for d in dirs)


def test_an_unwritable_results_dir_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(EnvironmentProblem, match=r"results directory .*file is not a directory"):
        store.create_run_dir(blocker, "t")
    with pytest.raises(EnvironmentProblem, match="cannot create a run directory under /proc"):
        store.create_run_dir(Path("/proc/jepsen-py-results"), "t")


def test_write_json_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    store.write_json(path, {"valid": True, "p": Path("/x"), "s": {1}})
    assert json.loads(path.read_text()) == {"valid": True, "p": "/x", "s": [1]}
    store.write_json(path, {"valid": False})
    assert json.loads(path.read_text()) == {"valid": False}
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_latest_links_follow_the_newest_run(tmp_path: Path) -> None:
    a = store.create_run_dir(tmp_path, "t", now=1.0)
    store.update_latest(a)
    b = store.create_run_dir(tmp_path, "u", now=2.0)
    store.update_latest(b)
    assert (tmp_path / "latest").resolve() == b.resolve()
    assert (tmp_path / "t" / "latest").resolve() == a.resolve()
    assert (tmp_path / "u" / "latest").resolve() == b.resolve()
    assert not (tmp_path / "latest").readlink().is_absolute()  # the results dir can be moved


def test_spec_round_trips_through_test_json(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, bugs=["zombie-leader"], options={"image_base": "debian"})
    run_dir = store.create_run_dir(tmp_path, spec.name)
    store.write_test_json(run_dir, spec, extra={"workload_meta": {"keys": 3}})
    assert store.load_spec(run_dir) == spec


def test_resolve_run_dir(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    run_dir = store.create_run_dir(tmp_path, spec.name)
    store.write_test_json(run_dir, spec)
    store.update_latest(run_dir)
    assert store.resolve_run_dir(run_dir) == run_dir.resolve()
    assert store.resolve_run_dir(tmp_path / "latest") == run_dir.resolve()
    assert store.resolve_run_dir(tmp_path / spec.name) == run_dir.resolve()
    with pytest.raises(BadInput, match="no such run directory"):
        store.resolve_run_dir(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="not a run directory"):
        store.resolve_run_dir(tmp_path / "empty")


def test_bad_test_json_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "test.json").write_text('{"name": "x",\n oops}')
    with pytest.raises(BadInput, match=r"test.json:2: not valid JSON"):
        store.load_spec(tmp_path)
    (tmp_path / "test.json").write_text('{"name": "x"}')
    with pytest.raises(BadInput, match=r"test.json: missing workload"):
        store.load_spec(tmp_path)


def test_capture_log_keeps_the_console_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    console = logging.StreamHandler()
    old_level = root.level
    root.addHandler(console)
    root.setLevel(logging.WARNING)
    try:
        with store.capture_log(tmp_path / "jepsen.log"):
            logging.getLogger("jepsen_py.nemeses.partition").info("cut n1 off")
            logging.getLogger("urllib3.connectionpool").debug("noise")
        text = (tmp_path / "jepsen.log").read_text()
        assert "jepsen_py.nemeses.partition: cut n1 off" in text and "noise" not in text
        assert "cut n1 off" not in capsys.readouterr().err
        assert root.level == logging.WARNING
    finally:
        root.removeHandler(console)
        root.setLevel(old_level)


def test_results_and_test_json_are_readable_like_the_rest_of_a_run(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        other = tmp_path / "history.jsonl"
        other.write_text("")
        for name in ("results.json", "test.json"):
            store.write_json(tmp_path / name, {"valid": True})
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name
        assert stat.S_IMODE(other.stat().st_mode) == 0o644
    finally:
        os.umask(old)


def test_a_log_path_that_is_no_file_of_the_node_is_refused(tmp_path: Path) -> None:
    """Nothing secret or foreign leaves through the store: a DB's log_files() naming a process's
    environment, a device, a symlink into them, a FIFO, or (where the node is a directory here)
    something outside that directory is not copied into the run."""
    from jepsen_py.store import foreign_log_path

    node = tmp_path / "n1"
    node.mkdir()
    (node / "db.log").write_text("ok")
    (node / "env").symlink_to("/proc/self/environ")
    os.mkfifo(node / "pipe")
    outside = tmp_path / "elsewhere.log"
    outside.write_text("not the node's")
    for path, where in (("/proc/self/environ", None), ("/proc/1/../self/environ", None), ("/dev/zero", None),
                        ("/sys/kernel/notes", None), ("relative.log", None), (str(node / "env"), None),
                        (str(node / "pipe"), None), (str(outside), str(node))):
        assert foreign_log_path(path, workdir=where, on_controller=True) is not None, path
    assert foreign_log_path(str(node / "db.log"), workdir=str(node), on_controller=True) is None
    assert foreign_log_path(str(outside), workdir=None, on_controller=True) is None  # none backend
    # on a node's own machine (a container, an SSH host) only the pseudo-filesystems are refused
    assert foreign_log_path("/var/log/db.log", workdir=None, on_controller=False) is None
    assert foreign_log_path("/proc/self/environ", workdir=None, on_controller=False) is not None


LEAKY_DB = '''
from tests.jepsen_py.fakes import FakeDB


class LeakyDB(FakeDB):
    def log_files(self, test, node):
        return ["/proc/self/environ", 7, "%s"]
'''


def test_a_run_copies_no_secret_from_the_controller(tmp_path: Path) -> None:
    import subprocess
    import sys

    legit = tmp_path / "legit.log"
    legit.write_text("a real log line")
    (tmp_path / "leakydb.py").write_text(LEAKY_DB % legit)
    env = {**os.environ, "JEPSEN_PY_SSH_PASSWORD": "hunter2-secret",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parents[2])])}
    res = subprocess.run([sys.executable, "-m", "jepsen_py", "run", "--db", "leakydb:LeakyDB", "--backend",
                          "none", "--workload", "register", "--time-limit", "1", "--node-count", "1",
                          "--results-dir", str(tmp_path / "results")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert "Traceback" not in res.stderr, res.stderr
    run = (tmp_path / "results" / "latest").resolve()
    copied = {p.name: p.read_bytes() for p in (run / "nodes").rglob("*") if p.is_file()}
    assert "legit.log" in copied and "environ" not in copied
    assert not any(b"hunter2-secret" in data for data in copied.values())
    log = (run / "jepsen.log").read_text()
    assert "/proc/self/environ, which is under a pseudo-filesystem" in log
