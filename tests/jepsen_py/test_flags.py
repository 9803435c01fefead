"""Every flag of every subcommand refuses what it cannot mean, in the shared parser (jepsen_py.flags):
an empty value, `--FLAG=--`, a single-valued flag given twice. Each case is tried on every flag of
every subcommand, found by walking the real parser, so a flag added later is covered too."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jepsen_py import cli
from jepsen_py.flags import allow_empty

REPO = Path(__file__).resolve().parents[2]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    for action in cli.build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


SUBPARSERS = _subparsers()


def _value(action: argparse.Action) -> str:
    """A value the flag takes, so the only thing wrong in a test is what the test is about."""
    if action.choices:
        return str(next(iter(action.choices)))
    kind = getattr(action.type, "__name__", "")
    guess = "1" if kind in ("number", "integer") else "1/2" if kind == "fraction" else "x"
    if action.type is None:
        return guess
    for value in (guess, "1", "1/2", "x"):  # the first the flag's own type accepts
        try:
            action.type(value)
        except (argparse.ArgumentTypeError, ValueError, TypeError, SystemExit):
            continue
        return value
    return guess


def _needed(command: str, but: argparse.Action | None = None) -> list[str]:
    """The arguments `command` cannot parse without (check's FILE and --model), except `but`."""
    out: list[str] = []
    for a in SUBPARSERS[command]._actions:
        if a is but:
            continue
        if not a.option_strings and a.nargs in (None, "+"):
            out.append("x")
        elif a.option_strings and a.required:
            out += [a.option_strings[-1], _value(a)]
    return out


def _cases(kind: str) -> list[tuple[str, argparse.Action]]:
    kinds = {
        "single": lambda a: bool(a.option_strings) and isinstance(
            a, argparse._StoreAction | argparse.BooleanOptionalAction),
        "valued": lambda a: bool(a.option_strings) and a.nargs is None,
        "positional": lambda a: not a.option_strings,
    }
    return [(command, a) for command, parser in SUBPARSERS.items() for a in parser._actions
            if not isinstance(a, argparse._HelpAction) and kinds[kind](a)]


def _ids(cases: list[tuple[str, argparse.Action]]) -> list[str]:
    return [f"{c}:{a.option_strings[-1] if a.option_strings else a.dest}" for c, a in cases]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert e.value.code == 254, err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


SINGLE = _cases("single")
VALUED = _cases("valued")
POSITIONAL = _cases("positional")
# every flag but the node names (--nodes, -n), whose own check says what is wrong with an empty one
NOT_EMPTY = [(c, a) for c, a in VALUED if a.dest not in ("nodes", "node")]


def test_every_subcommand_is_covered() -> None:
    commands = {c for c, _ in SINGLE + VALUED + POSITIONAL}
    assert commands == set(SUBPARSERS), set(SUBPARSERS) - commands


@pytest.mark.parametrize(("command", "action"), SINGLE, ids=_ids(SINGLE))
def test_a_single_valued_flag_given_twice_is_refused(capsys, command: str, action: argparse.Action) -> None:
    flag = action.option_strings[-1]
    once = [flag] if action.nargs == 0 else [flag, _value(action)]
    last = _refused(capsys, [command, *_needed(command, but=action), *once, *once])
    assert "given more than once" in last and flag in last, last


@pytest.mark.parametrize(("command", "action"), NOT_EMPTY, ids=_ids(NOT_EMPTY))
def test_an_empty_value_is_refused(capsys, command: str, action: argparse.Action) -> None:
    flag = action.option_strings[-1]
    for empty in ("", " "):
        last = _refused(capsys, [command, *_needed(command, but=action), flag, empty])
        assert "empty value" in last and flag in last, last
        last = _refused(capsys, [command, *_needed(command, but=action), f"{flag}={empty}"])
        assert "empty value" in last, last


@pytest.mark.parametrize(("command", "action"), VALUED, ids=_ids(VALUED))
def test_dash_dash_is_not_a_value(capsys, command: str, action: argparse.Action) -> None:
    """argparse drops the `--` of `--seed=--` and stores [] (the seed of a run, a model's name...)."""
    flag = action.option_strings[-1]
    last = _refused(capsys, [command, *_needed(command, but=action), f"{flag}=--"])
    assert "expected a value, got '--'" in last and flag in last, last


@pytest.mark.parametrize(("command", "action"), POSITIONAL, ids=_ids(POSITIONAL))
def test_an_empty_positional_is_refused(capsys, command: str, action: argparse.Action) -> None:
    """`export ""` exported the current directory's runs, `analyze ""` re-checked it."""
    last = _refused(capsys, [command, *_needed(command, but=action), ""])
    assert "empty value" in last, last


def test_collecting_flags_stay_repeatable() -> None:
    args = cli.build_parser().parse_args([
        "run", "--bug", "zombie-leader", "--bug", "stale-read", "-n", "a", "--node", "b",
        "--workload-option", "active_keys=2", "--workload-option", "ops_per_key=5", "--nemesis", "kill",
        "--nemesis", "pause"])
    assert args.bug == ["zombie-leader", "stale-read"] and args.node == ["a", "b"]
    assert args.workload_option == ["active_keys=2", "ops_per_key=5"]
    assert args.nemesis == ["kill", "pause"]
    explore = cli.build_parser().parse_args(["explore", "--node-count", "3", "--node-count", "5"])
    assert explore.node_count == [3, 5]


def test_a_flag_may_opt_in_to_empty_values(capsys) -> None:
    """--nodes "" gets its own, more telling line from the node checks."""
    from jepsen_py.flags import Parser

    p = Parser(prog="t")
    allow_empty(p.add_argument("--nodes"))
    p.add_argument("--name")
    assert p.parse_args(["--nodes", ""]).nodes == ""
    with pytest.raises(SystemExit):
        p.parse_args(["--name", ""])


def test_an_empty_backend_provisions_nothing(tmp_path: Path) -> None:
    """`--backend sim --backend ""` ran the default backend: five real Docker containers."""
    results = tmp_path / "results"
    p = subprocess.run([sys.executable, "-m", "jepsen_py", "run", "--backend", "sim", "--backend", "",
                        "--results-dir", str(results), "--time-limit", "1", "--no-progress"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 254, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr  # one line, no usage block
    assert "argument --backend: empty value; leave the flag out for its default" in lines[0]
    assert not results.exists()


SEEDED = [c for c, p in SUBPARSERS.items() if any("--seed" in a.option_strings for a in p._actions)]


@pytest.mark.parametrize("command", SEEDED)
def test_seeds_are_bounded_where_parsed(capsys, command: str) -> None:
    """A seed past 2^63-1 failed the Parquet export at the end of a run, with a traceback."""
    assert {"run", "test-all", "explore"} <= set(SEEDED)
    last = _refused(capsys, [command, *_needed(command), "--seed", str(2**63)])
    assert "--seed: must be <= 9223372036854775807, got 9223372036854775808" in last, last
    largest = cli.build_parser().parse_args([command, *_needed(command), "--seed", str(2**63 - 1)])
    assert largest.seed == 2**63 - 1


@pytest.mark.parametrize("backend", ["docker", "sim"])
def test_test_all_seeds_of_later_runs_are_bounded_too(capsys, tmp_path: Path, backend: str) -> None:
    """Run i of a cell has seed + i: refused before any run starts, nothing written."""
    code = cli.main(["test-all", "--quick", "--backend", backend, "--seed", str(2**63 - 1), "--test-count",
                     "2", "--results-dir", str(tmp_path / "results"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 254, err
    assert "seeds up to 9223372036854775808, past 9223372036854775807" in err.strip().splitlines()[-1]
    assert not (tmp_path / "results").exists()


def test_seeds_from_files_and_the_api_are_bounded(tmp_path: Path) -> None:
    from jepsen_py import spec as specmod
    from jepsen_py.api import JepsenTest
    from jepsen_py.errors import BadInput

    d = specmod.to_json(specmod.from_args(cli.build_parser().parse_args(["run", "--backend", "none"])))
    d["seed"] = 2**63
    with pytest.raises(BadInput, match="seed: must be <= 9223372036854775807"):
        specmod.from_json(d)
    with pytest.raises(BadInput, match="seed: must be <= 9223372036854775807"):
        JepsenTest(db="tests.jepsen_py.fakes:FakeDB", seed=2**63, backend="none").spec()


PATHS = [(c, a) for c, p in SUBPARSERS.items() for a in p._actions
         if getattr(a.type, "__name__", "") == "path"]


def test_every_path_a_user_names_is_a_path_flag() -> None:
    named = {(c, a.option_strings[-1] if a.option_strings else a.dest) for c, a in PATHS}
    assert {("run", "--results-dir"), ("run", "--junit-xml"), ("run", "--schedule"), ("run", "--nodes-file"),
            ("run", "--ssh-key"), ("analyze", "run_dir"), ("analyze", "--junit-xml"), ("check", "file"),
            ("export", "run_dirs"), ("aggregate", "results_dir"), ("aggregate", "--out"),
            ("serve", "--results-dir"), ("timeline", "run_dir"), ("test-all", "--results-dir"),
            ("test-all", "--expectations"), ("explore", "--results-dir"), ("cleanup", "--ssh-key")} <= named


@pytest.mark.parametrize(("command", "action"), PATHS, ids=_ids(PATHS))
def test_a_path_no_file_can_have_is_refused_when_parsed(capsys, command: str,
                                                        action: argparse.Action) -> None:
    """A 5,000-character path was an ENAMETOOLONG traceback (255) wherever it was first used."""
    for too_long in ("a" * 5000, "/tmp/" + "/".join(["b" * 200] * 21)):
        given = [action.option_strings[-1], too_long] if action.option_strings else [too_long]
        last = _refused(capsys, [command, *_needed(command, but=action), *given])
        assert "path too long" in last, last


def test_a_results_dir_too_deep_for_its_runs_is_refused_before_the_run(tmp_path: Path) -> None:
    """Its components are legal, but a run's files under it would pass PATH_MAX mid-run."""
    deep = tmp_path / "/".join(["d" * 250] * ((4095 - len(str(tmp_path))) // 251))
    for argv in (["run", "--backend", "sim", "--time-limit", "1", "--no-progress"],
                 ["explore", "--budget", "1", "--no-progress"]):
        p = subprocess.run([sys.executable, "-m", "jepsen_py", *argv, "--results-dir", str(deep)],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
        assert p.returncode == 254, p.stderr
        assert p.stderr.count("\n") == 1 and "leaves too little of the 4095 a path may have" in p.stderr
        assert not any(tmp_path.iterdir())


def test_a_name_too_long_met_anywhere_is_one_line(tmp_path: Path) -> None:
    """The last resort in cli: ENAMETOOLONG from a path built from the user's (RUN_DIR/history.jsonl
    of a directory 4,088 bytes deep) is one line and 254, not an internal error (255)."""
    deep = tmp_path
    while len(str(deep)) + 251 < 4088:
        deep /= "d" * 250
    deep /= "e" * (4088 - len(str(deep)) - 1)
    deep.mkdir(parents=True)
    for command in ("timeline", "analyze", "export", "aggregate"):
        p = subprocess.run([sys.executable, "-m", "jepsen_py", command, str(deep)], capture_output=True,
                           text=True, cwd=tmp_path, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert p.returncode == 254, (command, p.stderr[-300:])
        assert p.stderr.startswith("jepsen-py: file name too long: ") and p.stderr.count("\n") == 1
