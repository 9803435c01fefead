"""--db-option KEY=VALUE: parsed and checked against the keys the DB declares before anything is
provisioned, handed to the DB in its spec, recorded in test.json, named in the run's directory and
summary, shown by serve and grouped apart by the aggregate. --read-mode is our cluster's: a DB
without read modes records none and refuses the flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jepsen_py import cli
from jepsen_py import spec as specmod
from jepsen_py.errors import BadInput
from jepsen_py.plugins import check_db_flags, db_option_keys, read_modes
from jepsen_py.protocols import TestSpec
from jepsen_py.raftdb import RaftMetadataDB
from jepsen_py.web import db_config, list_runs
from tests.jepsen_py.fakes import FakeDB
from tests.jepsen_py.test_cli import use_fakes

SEEN: list[dict[str, str]] = []


class OptionDB(FakeDB):
    """A fake DB with settings: `reads` (primary | replica) and `pre-vote`."""

    @staticmethod
    def db_options() -> dict[str, str]:
        return {"reads": "primary (default) or replica", "pre-vote": "true or false"}

    def __init__(self, spec: TestSpec | None = None, **kw: Any) -> None:
        super().__init__(spec, **kw)
        if spec is not None:
            reads = spec.db_options.get("reads", "primary")
            if reads not in ("primary", "replica"):
                raise BadInput(f"--db-option reads: primary or replica, not {reads!r}")
            SEEN.append(dict(spec.db_options))


OPTION_DB = "tests.jepsen_py.test_db_options:OptionDB"


def run_argv(tmp_path: Path, *extra: str, db: str = OPTION_DB) -> list[str]:
    return ["run", "--workload", "register", "--db", db, "--backend", "none", "--node-count", "3",
            "--time-limit", "0.3", "--rate", "100", "--recovery-timeout", "0", "--seed", "5",
            "--results-dir", str(tmp_path / "results"), "--no-progress", *extra]


def test_parse_db_options() -> None:
    assert specmod.parse_db_options(["reads=replica", "pre-vote=false", "x=a=b", "e="]) == {
        "reads": "replica", "pre-vote": "false", "x": "a=b", "e": ""}
    for bad, words in ((["reads"], "expected KEY=VALUE"), (["=x"], "not a usable key"),
                       (["a b=1"], "not a usable key"), (["reads=a", "reads=b"], "reads given twice")):
        with pytest.raises(BadInput, match=words):
            specmod.parse_db_options(bad)


def test_declared_read_modes_and_options() -> None:
    assert read_modes(RaftMetadataDB)[0] == "read-index"
    assert set(read_modes(RaftMetadataDB)) == {"read-index", "lease", "local"}
    assert read_modes(FakeDB) == () and db_option_keys(FakeDB) == {}
    assert set(db_option_keys(OptionDB)) == {"reads", "pre-vote"}


def _spec(tmp_path: Path, db: str, read_mode: str | None, **opts: str) -> TestSpec:
    from tests.jepsen_py.fakes import make_spec

    spec = make_spec(tmp_path)
    spec.db, spec.read_mode, spec.db_options = db, read_mode, dict(opts)
    return spec


def test_check_db_flags(tmp_path: Path) -> None:
    s = _spec(tmp_path, OPTION_DB, None, reads="replica")
    check_db_flags(s)
    assert s.read_mode is None
    s = _spec(tmp_path, "jepsen_py.raftdb:RaftMetadataDB", None)
    check_db_flags(s)
    assert s.read_mode == "read-index"
    with pytest.raises(BadInput, match=r"--read-mode: .*OptionDB has no read modes \(its settings are "
                                       r"--db-option reads, pre-vote\)"):
        check_db_flags(_spec(tmp_path, OPTION_DB, "local"))
    with pytest.raises(BadInput, match=r"--db-option: .*OptionDB takes no 'colour' \(it takes: reads, "
                                       r"pre-vote\)"):
        check_db_flags(_spec(tmp_path, OPTION_DB, None, colour="red"))
    with pytest.raises(BadInput, match=r"RaftMetadataDB takes no 'reads' \(it takes: none\)"):
        check_db_flags(_spec(tmp_path, "jepsen_py.raftdb:RaftMetadataDB", None, reads="replica"))


def test_run_passes_records_names_and_shows_the_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch)
    SEEN.clear()
    code = cli.main(run_argv(tmp_path, "--db-option", "reads=replica", "--db-option", "pre-vote=false"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert SEEN == [{"reads": "replica", "pre-vote": "false"}]
    run_dir = tmp_path / "results" / "register-none-pre-vote_false-reads_replica" / "latest"
    spec = json.loads((run_dir / "test.json").read_text())
    assert spec["db_options"] == {"reads": "replica", "pre-vote": "false"}
    assert spec["read_mode"] is None  # the fake DB has no read modes: none is recorded
    assert "pre-vote=false,reads=replica" in out  # the summary's title
    assert specmod.from_json(spec).db_options == {"reads": "replica", "pre-vote": "false"}
    [entry] = list_runs(tmp_path / "results")
    assert entry.db_config == "pre-vote=false,reads=replica"

    # the same DB with its defaults: another test directory, nothing to show
    code = cli.main(run_argv(tmp_path))
    assert code == 0
    plain = json.loads((tmp_path / "results" / "register-none" / "latest" / "test.json").read_text())
    assert plain["db_options"] == {} and plain["read_mode"] is None
    shown = sorted(e.db_config for e in list_runs(tmp_path / "results"))
    assert shown == ["", "pre-vote=false,reads=replica"]


def test_our_cluster_still_records_its_read_mode(tmp_path: Path) -> None:
    args = cli.build_parser().parse_args(run_argv(tmp_path, db="jepsen_py.raftdb:RaftMetadataDB"))
    assert specmod.from_args(args).read_mode == "read-index"
    args = cli.build_parser().parse_args(run_argv(tmp_path, "--read-mode", "lease",
                                                  db="jepsen_py.raftdb:RaftMetadataDB"))
    assert specmod.from_args(args).read_mode == "lease"
    assert db_config({"read_mode": "lease", "db_options": {}}) == "read-mode=lease"
    assert db_config({"read_mode": "read-index"}) == ""


@pytest.mark.parametrize(("argv", "words"), [
    (["--db-option", "colour=red"], f"--db-option: {OPTION_DB} takes no 'colour'"),
    (["--db-option", "reads"], "--db-option: expected KEY=VALUE, got 'reads'"),
    (["--db-option", "reads=sideways"], "--db-option reads: primary or replica, not 'sideways'"),
    (["--read-mode", "local"], "has no read modes (its settings are --db-option reads, pre-vote)"),
])
def test_bad_db_options_are_one_line(argv: list[str], words: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch)
    code = cli.main(run_argv(tmp_path, *argv))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 254 and len(err) == 1 and words in err[0], err


def test_test_json_db_options_must_be_text(tmp_path: Path) -> None:
    d = specmod.to_json(_spec(tmp_path, OPTION_DB, None, reads="replica"))
    assert specmod.from_json(d).db_options == {"reads": "replica"}
    d["db_options"] = {"reads": 3}
    with pytest.raises(BadInput, match="db_options must map names to text"):
        specmod.from_json(d)
