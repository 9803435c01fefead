"""Secrets never reach the store: test.json (which `serve` shows and CI uploads) keeps only that
an SSH password was given."""

from __future__ import annotations

import json

import pytest

from jepsen_py import cli
from jepsen_py import spec as specmod
from tests.jepsen_py.test_cli import fake_run, use_fakes

SECRET = "hunter2-do-not-store"


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_the_ssh_password_is_redacted_from_every_stored_file(tmp_path, monkeypatch, how) -> None:
    use_fakes(monkeypatch)
    extra: list[str] = []
    if how == "flag":
        extra = ["--ssh-password", SECRET]
    else:
        monkeypatch.setenv("JEPSEN_PY_SSH_PASSWORD", SECRET)
    assert cli.main(fake_run(tmp_path, *extra)) == 0
    run_dir = (tmp_path / "results" / "latest").resolve()
    for f in run_dir.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    spec = json.loads((run_dir / "test.json").read_text())
    assert spec["options"]["ssh_password"] == specmod.REDACTED
    # A re-check of the stored run still works from the redacted spec.
    assert cli.main(["analyze", str(run_dir)]) == 0


def test_no_password_stays_none(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("JEPSEN_PY_SSH_PASSWORD", raising=False)
    use_fakes(monkeypatch)
    assert cli.main(fake_run(tmp_path)) == 0
    spec = json.loads(((tmp_path / "results" / "latest") / "test.json").read_text())
    assert spec["options"]["ssh_password"] is None
