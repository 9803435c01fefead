"""Loading a user's DB by `--db module:Name`: found, instantiated with the spec, and one line when not."""

from __future__ import annotations

from pathlib import Path

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
