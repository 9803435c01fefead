"""Loading a user's DB by `--db module:Name`: found, instantiated with the spec, and one line when not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jepsen_py.errors import BadInput
from jepsen_py.plugins import load_db, load_object
from tests.jepsen_py.fakes import FakeDB, make_spec


def test_loads_and_instantiates_with_the_spec(tmp_path: Path) -> None:
    db = load_db("tests.jepsen_py.fakes:FakeDB", make_spec(tmp_path))
    assert isinstance(db, FakeDB)


def test_dotted_attributes() -> None:
    assert load_object("os:path.join", option="--db") is __import__("os").path.join


@pytest.mark.parametrize(("ref", "message"), [
    ("no_such_module_xyz:DB", "no module named 'no_such_module_xyz'"),
    ("tests.jepsen_py.fakes:Nope", "has no 'Nope'"),
    (":DB", "expected MODULE:CLASS"),
    ("tests.jepsen_py.fakes:", "expected MODULE:CLASS"),
    ("not-an-entry-point", "neither MODULE:CLASS nor an installed"),
    ("tests.jepsen_py.fakes:Calls", r"cannot construct .*Calls\(spec\)"),
    ("tests.jepsen_py.fakes:Register", "lacks the DB methods"),
])
def test_bad_references_are_one_line(tmp_path: Path, ref: str, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        load_db(ref, make_spec(tmp_path))


class _Raises:
    """A plugin whose every hook raises: what jepsen-py calls on it must name it in one line."""

    def __init__(self, spec: object = None) -> None:
        pass

    def fs(self) -> set[str]:
        raise RuntimeError("fs boom")

    def setup(self, test: object) -> None: ...
    def invoke(self, test: object, op: object) -> object: ...
    def heal(self, test: object) -> None: ...
    def teardown(self, test: object) -> None: ...

    def needs(self) -> dict[str, str]:
        raise RuntimeError("needs boom")

    @staticmethod
    def known_bugs() -> tuple[str, ...]:
        raise RuntimeError("bugs boom")


class _RaisingGenerator(_Raises):
    def generator(self, spec: object) -> object:
        raise ValueError("generator boom")


def test_plugin_hooks_that_raise_are_one_line_naming_the_plugin(tmp_path: Path) -> None:
    from jepsen_py.commands.run import check_db_bugs
    from jepsen_py.plugins import build_nemesis, check_capabilities

    spec = make_spec(tmp_path)
    for nemesis, message in ((_Raises(), "--nemesis: _Raises: fs() raised RuntimeError: fs boom"),
                             (_RaisingGenerator(), "--nemesis: _RaisingGenerator: generator(spec) raised "
                                                   "ValueError: generator boom")):
        with pytest.raises(BadInput) as e:
            build_nemesis([nemesis], spec)
        assert str(e.value) == message
    with pytest.raises(BadInput) as e:
        check_capabilities(FakeDB(spec), _Raises(), db_name="fake")
    assert str(e.value) == "--nemesis: _Raises: needs() raised RuntimeError: needs boom"
    with pytest.raises(BadInput) as e:
        check_db_bugs(make_spec(tmp_path, db=f"{__name__}:_Raises", bugs=["x"]))
    assert str(e.value) == f"--db: {__name__}:_Raises: known_bugs() raised RuntimeError: bugs boom"


def test_an_entry_point_whose_module_is_broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    info = site / "brokenplug-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "brokenplug.py").write_text("raise ImportError('half installed')\n")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[jepsen_py.db]\nbroken = brokenplug:DB\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(BadInput) as e:
        load_db("broken", make_spec(tmp_path))
    assert str(e.value) == ("--db: broken (entry point brokenplug:DB): loading it raised ImportError: "
                            "half installed")


class _ClientRaises(FakeDB):
    def client(self, workload: str) -> Any:
        raise ConnectionError("no such service")


def test_a_db_whose_client_raises_is_one_line_before_the_run(tmp_path: Path) -> None:
    from jepsen_py.runner import run_test
    from tests.jepsen_py.fakes import register_workload

    spec = make_spec(tmp_path, db=f"{__name__}:_ClientRaises")
    with pytest.raises(BadInput) as e:
        run_test(spec, db=_ClientRaises(spec), workload=register_workload())
    assert str(e.value) == (f"--db: {__name__}:_ClientRaises: client('register') raised ConnectionError: "
                            f"no such service")
    assert not (tmp_path / "results").exists()
