"""The local backend's state root: per user, created 0700, never one someone else controls; and
`cleanup` deletes only the run directories that carry our marker."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from jepsen_py.backends import local
from jepsen_py.errors import EnvironmentProblem
from tests.conftest import require


def test_the_default_root_is_per_user(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("JEPSEN_PY_LOCAL_ROOT", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    assert local.state_root().name == f"jepsen-py-local-{os.geteuid()}"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert local.state_root() == tmp_path / "jepsen-py-local"
    monkeypatch.setenv("JEPSEN_PY_LOCAL_ROOT", str(tmp_path / "mine"))
    assert local.state_root() == tmp_path / "mine"


def test_the_root_is_created_0700(tmp_path) -> None:
    root = local.ensure_state_root(tmp_path / "a" / "root")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert local.ensure_state_root(root) == root  # our own, again: fine


def test_a_root_owned_by_someone_else_is_refused(tmp_path) -> None:
    require("root (to give a directory to another user)", os.geteuid() == 0)
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    os.chown(root, 65534, 65534)
    with pytest.raises(EnvironmentProblem, match="belongs to uid 65534"):
        local.ensure_state_root(root)


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775])
def test_a_root_others_can_write_to_is_refused(tmp_path, mode) -> None:
    root = tmp_path / "open"
    root.mkdir()
    os.chmod(root, mode)
    with pytest.raises(EnvironmentProblem, match="writable by others"):
        local.ensure_state_root(root)


def test_a_symlinked_root_is_refused(tmp_path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(EnvironmentProblem, match="not a plain directory"):
        local.ensure_state_root(tmp_path / "link")


def test_cleanup_deletes_only_marked_run_directories(tmp_path, monkeypatch) -> None:
    root = tmp_path / "root"
    monkeypatch.setenv("JEPSEN_PY_LOCAL_ROOT", str(root))
    local.ensure_state_root()
    ours = root / "t-abc123"
    ours.mkdir()
    (ours / local.RUN_MARKER).write_text("t-abc123\n")
    (ours / "n1").mkdir()
    theirs = root / "precious"
    theirs.mkdir()
    (theirs / "data").write_text("keep me")
    (root / "notes.txt").write_text("keep me too")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / local.RUN_MARKER).write_text("x")
    (root / "link-out").symlink_to(outside)
    removed = local.cleanup_state()
    assert removed == [str(ours)]
    assert not ours.exists() and root.is_dir()
    assert (theirs / "data").read_text() == "keep me" and (root / "notes.txt").exists()
    assert (outside / local.RUN_MARKER).exists()
    assert local.cleanup_local()["run directories"] == []
    assert root.is_dir()


def test_setup_marks_its_run_directory(tmp_path: Path, monkeypatch) -> None:
    """The marker is written by setup, next to the run's files (root and netns needed)."""
    from tests.jepsen_py.test_backend_local import local_available
    from tests.nemeses.support import make_spec

    require("root with network namespaces", local_available())
    monkeypatch.setenv("JEPSEN_PY_LOCAL_ROOT", str(tmp_path / "root"))
    backend = local.LocalBackend(make_spec(["n1"], tmp_path, backend="local"))
    try:
        backend.setup(None)
        assert (backend.root / local.RUN_MARKER).is_file()
        assert backend.root.parent == tmp_path / "root"
        assert stat.S_IMODE((tmp_path / "root").stat().st_mode) == 0o700
    finally:
        backend.teardown(None)
    assert not backend.root.exists()
