"""One rule for node names, whatever names them: flags, --nodes-file, schedule files, a test built in
code, a spec that reaches the runner. A name that would leave the run directory or is longer than a
file name may be is one line (254) from each of them, and nothing is written for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jepsen_py import cli
from jepsen_py import spec as specmod
from jepsen_py.api import JepsenTest
from jepsen_py.errors import BadInput
from jepsen_py.explore import schedule as sched
from jepsen_py.nodenames import MAX_LENGTH, check_node_name
from jepsen_py.runner import run_test
from tests.jepsen_py.fakes import FakeDB, make_spec, register_workload

REPO = Path(__file__).resolve().parents[2]
BAD = ["../../outside", "/tmp/absolute", "a" * 300, "a" * (MAX_LENGTH + 1), "a/b", ".hidden", "-dash",
       "sp ace", "tab\tname", "ünï"]
RULE = "is not a usable node name"


def one_line(e: pytest.ExceptionInfo[BadInput]) -> str:
    text = str(e.value)
    assert "\n" not in text and "a" * 64 not in text, text  # a long name is quoted cut short
    assert e.value.exit_code == 254
    return text


def test_the_rule() -> None:
    assert check_node_name("n1", "x") == "n1"
    assert check_node_name("db-1.rack_2", "x") == "db-1.rack_2"
    assert check_node_name("a" * MAX_LENGTH, "x") == "a" * MAX_LENGTH
    for bad in [*BAD, "", None, 7]:
        with pytest.raises(BadInput, match=RULE) as e:
            check_node_name(bad, "where")
        assert one_line(e).startswith("where: ")


@pytest.mark.parametrize("bad", BAD, ids=range(len(BAD)))
def test_every_flag_source(tmp_path: Path, bad: str) -> None:
    nodes_file = tmp_path / "nodes"
    nodes_file.write_text(f"n1\n{bad}\n")
    argvs = [["-n", "n1", f"--node={bad}"], [f"--nodes=n1,{bad}"], ["--nodes-file", str(nodes_file)]]
    for argv in argvs:
        if "\t" in bad and argv[0] == "--nodes-file":
            continue  # a file line is stripped of surrounding whitespace only; an inner tab stays
        args = cli.build_parser().parse_args(["run", *argv])
        with pytest.raises(BadInput, match=RULE) as e:
            specmod.from_args(args)
        one_line(e)


def _schedule(tmp_path: Path, nodes: list[str], node: str | None = None) -> Path:
    s = sched.Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=7, time_limit=2.0, concurrency=1,
                       events=[sched.Event(1.0, 0, "fetch", key=["g", "t", 0])])
    d = s.to_json()
    d["nodes"] = nodes
    if node is not None:
        d["events"][0]["node"] = node
    p = tmp_path / "schedule.json"
    p.write_text(json.dumps(d))
    return p


@pytest.mark.parametrize("bad", BAD, ids=range(len(BAD)))
def test_schedule_files(tmp_path: Path, bad: str) -> None:
    with pytest.raises(BadInput, match=RULE) as e:
        sched.load(_schedule(tmp_path, ["n1", bad, "n3"]))
    one_line(e)
    with pytest.raises(BadInput, match=RULE) as e:
        sched.load(_schedule(tmp_path, ["n1", "n2", "n3"], node=bad))
    assert "'node'" in one_line(e)


def test_a_test_built_in_code(tmp_path: Path) -> None:
    for bad in BAD:
        with pytest.raises(BadInput, match=RULE) as e:
            JepsenTest(db=FakeDB, nodes=["n1", bad], results_dir=tmp_path).spec()
        one_line(e)


def test_the_runner_refuses_a_spec_with_a_bad_name_before_writing_anything(tmp_path: Path) -> None:
    """A plugin DB gets the spec in its constructor and could change it; the runner checks again."""
    spec = make_spec(tmp_path, nodes=["n1", "../../escaped"])
    with pytest.raises(BadInput, match=RULE) as e:
        run_test(spec, db=FakeDB(spec, log_dir=tmp_path), workload=register_workload())
    one_line(e)
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "escaped").exists()


def test_run_schedule_with_escaping_names_writes_nothing_outside(tmp_path: Path) -> None:
    """`run --schedule` with node names that are an absolute path or climb out of the results
    directory: one line, 254, and no directory made for them anywhere."""
    outside = tmp_path / "outside-abs"
    for nodes in (["n1", "../../../escaped", "n3"], ["n1", str(outside), "n3"], ["n1", "a" * 300, "n3"]):
        path = _schedule(tmp_path, nodes)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        res = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "run", "--schedule", str(path),
                              "--backend", "sim", "--no-progress", "--results-dir",
                              str(tmp_path / "a" / "b" / "results")],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 254, res.stdout + res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and RULE in lines[0], lines
        assert not outside.exists() and not (tmp_path / "escaped").exists()
        assert not (tmp_path / "a").exists()
