"""A run described by flags means the same wherever it is parsed: `jepsen-py run`'s parser and
runflags' own parser build the same TestSpec and refuse the same flags with the same line."""

from __future__ import annotations

import contextlib
import io

import pytest

from jepsen_py import cli, runflags
from jepsen_py.errors import BadInput
from jepsen_py.spec import to_json

FLAGS = [
    ["--backend", "sim", "--workload", "offsets", "--nemesis", "partition-leader", "--time-limit", "5",
     "--seed", "7"],
    ["--backend", "sim", "--workload", "offsets", "--bug", "zombie-leader", "--node-count", "3",
     "--seed", "3"],
    ["--backend", "none", "--workload", "list-append", "--workload-option", "key_count=4", "--seed", "1"],
]


@pytest.mark.parametrize("flags", FLAGS)
def test_the_same_flags_make_the_same_spec(flags: list[str]) -> None:
    via_cli = runflags.spec_from_args(cli.build_parser().parse_args(["run", *flags]), versioned=False)
    alone = runflags.spec_from_args(runflags.parser().parse_args(flags), versioned=False)
    assert to_json(alone) == to_json(via_cli)
    assert alone.backend == flags[1]


@pytest.mark.parametrize(("flags", "words"), [
    (["--workload", "no-such-workload", "--backend", "sim"], "no-such-workload"),
    (["--bug", "no-such-bug", "--backend", "sim"], "no-such-bug"),
    (["--nemesis", "no-such-fault", "--backend", "sim"], "no-such-fault"),
])
def test_names_are_refused_the_same_way(flags: list[str], words: str) -> None:
    lines = []
    for parse in (lambda f: cli.build_parser().parse_args(["run", *f]), runflags.parser().parse_args):
        with pytest.raises(BadInput) as e:
            runflags.spec_from_args(parse(flags), versioned=False)
        lines.append(str(e.value))
    assert lines[0] == lines[1]
    assert words in lines[0] and "\n" not in lines[0]


def test_a_flag_run_does_not_take_is_one_line_and_254() -> None:
    said = io.StringIO()
    with contextlib.redirect_stderr(said), pytest.raises(SystemExit) as e:
        runflags.parser().parse_args(["--no-such-flag"])
    assert e.value.code == 254
    assert said.getvalue().count("\n") == 1 and "--no-such-flag" in said.getvalue()


def test_versions_are_asked_once_per_db() -> None:
    versions: dict[str, str] = {}
    args = runflags.parser().parse_args(["--backend", "sim", "--db-version", "v9"])
    first = runflags.spec_from_args(args, versions=versions)
    versions[first.db] = "cached"
    again = runflags.spec_from_args(runflags.parser().parse_args(["--backend", "sim"]), versions=versions)
    assert first.options["db_version"] == "v9" and again.options["db_version"] == "cached"
