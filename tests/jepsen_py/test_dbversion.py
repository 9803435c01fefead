"""The version recorded for a run: --db-version, else our cluster's git describe, else unversioned."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jepsen_py import cli
from jepsen_py.dbversion import UNVERSIONED, db_version, git_describe
from tests.conftest import require
from tests.jepsen_py.test_cli import fake_run, use_fakes

REPO = Path(__file__).resolve().parents[2]


def test_our_cluster_is_the_git_describe_of_the_uploaded_code() -> None:
    from jepsen_py import cluster
    require("a git checkout", (REPO / ".git").exists())
    code = Path(cluster.__file__).parent
    want = subprocess.run(["git", "-C", str(code), "describe", "--always", "--dirty"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert want
    assert db_version("cluster.db:RaftMetadataDB") == want


def test_explicit_wins_and_other_systems_are_unversioned(tmp_path: Path) -> None:
    assert db_version("cluster.db:RaftMetadataDB", "etcd-3.5.9") == "etcd-3.5.9"
    assert db_version("tests.jepsen_py.fakes:FakeDB") == UNVERSIONED
    assert git_describe(tmp_path) is None  # not a checkout


def test_run_records_the_version_in_test_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path, "--db-version", "1.2.3", "--time-limit", "0.2")) == 0
    spec = json.loads(((tmp_path / "results" / "latest").resolve() / "test.json").read_text())
    assert spec["options"]["db_version"] == "1.2.3"
    assert cli.main(fake_run(tmp_path, "--time-limit", "0.2")) == 0
    spec = json.loads(((tmp_path / "results" / "latest").resolve() / "test.json").read_text())
    assert spec["options"]["db_version"] == UNVERSIONED
