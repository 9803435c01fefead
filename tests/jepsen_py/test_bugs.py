"""--bug names are checked by one function, whichever command or backend asks."""

from __future__ import annotations

import pytest
from jepsen_py.cluster.bugs import NAMES, Bugs

from jepsen_py import runflags
from jepsen_py.bugs import check_bugs, node_bugs
from jepsen_py.errors import BadInput
from jepsen_py.runflags import check_db_bugs
from tests.jepsen_py.fakes import make_spec

DB = "jepsen_py.raftdb:RaftMetadataDB"


def _refusal(fn, *args) -> str:
    with pytest.raises(BadInput) as e:
        fn(*args)
    return str(e.value)


def test_run_refuses_an_unknown_bug_with_the_same_line_on_every_backend(tmp_path):
    spec = make_spec(tmp_path, db=DB, bugs=["zombie-leader", "zombie-leadr"], backend="sim")
    line = f"--bug: unknown bug 'zombie-leadr' for {DB} (known: {', '.join(NAMES)})"
    assert _refusal(check_db_bugs, spec) == line
    for backend in ("sim", "local"):  # checked where the spec is made, once, not again by the world
        args = runflags.parser().parse_args(["--backend", backend, "--bug", "zombie-leader,zombie-leadr",
                                             "--results-dir", str(tmp_path)])
        assert _refusal(lambda a=args: runflags.spec_from_args(a, versioned=False)) == line


def test_every_known_name_passes_and_a_db_without_bugs_takes_none():
    check_bugs(list(NAMES))
    assert _refusal(check_bugs, ["x"], (), ) == "--bug: unknown bug 'x' (known: none)"


def test_the_node_setting_is_the_registry_record():
    assert node_bugs(["zombie-leader"]) == Bugs.parse(["zombie-leader"])
    assert _refusal(node_bugs, ["nope"]).startswith("--bug: unknown bug 'nope'")
