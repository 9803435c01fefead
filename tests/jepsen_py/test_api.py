"""The Python API: a test map built in code (names, references or objects), run with the real
runner against an in-process store, pictures drawn by default."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from jepsen_py.api import JepsenTest, failure_message, run
from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from tests.workloads.memstore import Store, StoreDB

FAST = {"backend": "none", "time_limit": 1.0, "rate": 300.0, "recovery_timeout": 0.0, "seed": 11}


class Hiccup:
    """An in-process nemesis: start-hiccup / stop-hiccup, recorded and nothing else."""

    def __init__(self) -> None:
        self.healed = False

    def fs(self) -> frozenset[str]:
        return frozenset({"start-hiccup", "stop-hiccup"})

    def setup(self, test: Any) -> None: ...
    def teardown(self, test: Any) -> None: ...

    def heal(self, test: Any) -> None:
        self.healed = True

    def invoke(self, test: Any, op: Op) -> Op:
        return dataclasses.replace(op, type="info", value="hiccup")


class CountReads:
    name = "count-reads"

    def check(self, test: Any, history: list[Op]) -> dict[str, Any]:
        n = sum(1 for op in history if op.f == "read" and op.type == "ok")
        return {"valid": n > 0, "reads": n}


def test_defaults_are_the_command_lines(tmp_path: Path) -> None:
    spec = JepsenTest(db="tests.workloads.memstore:StoreDB").spec()
    assert spec.nodes == ["n1", "n2", "n3"] and spec.concurrency == 6
    assert spec.workload == "register" and spec.nemesis == [] and spec.time_limit == 30.0
    assert JepsenTest(db=StoreDB).pictures is True
    assert JepsenTest(db=StoreDB).spec().db == "tests.workloads.memstore:StoreDB"


def test_a_correct_store_passes_with_pictures(tmp_path: Path) -> None:
    out = run(JepsenTest(db=StoreDB, workload="register", results_dir=tmp_path, **FAST))
    assert out.valid is True, out.results
    assert (out.run_dir / "timeline.html").exists()
    assert json.loads((out.run_dir / "test.json").read_text())["workload"] == "register"


def test_objects_everywhere_and_a_stale_store_fails(tmp_path: Path) -> None:
    hiccup = Hiccup()
    out = run(JepsenTest(db=StoreDB(None, Store(lag=0.3)), workload="register", nemesis=[hiccup],
                         checkers=[CountReads()], nemesis_interval=0.2, results_dir=tmp_path,
                         pictures=False, **FAST))
    assert out.valid is False
    assert out.results["checkers"]["count-reads"]["valid"] is True
    assert out.results["checkers"]["linearizable"]["valid"] is False
    assert hiccup.healed
    history = (out.run_dir / "history.jsonl").read_text()
    assert '"f":"start-hiccup"' in history
    message = failure_message(out)
    assert message.splitlines()[0].startswith("jepsen-py: valid=false")
    assert "linearizable: valid=false" in message and "cannot be linearized" in message


def test_references_and_a_generator_object(tmp_path: Path) -> None:
    out = run(JepsenTest(db="tests.workloads.memstore:StoreDB", workload="set",
                         generator=lambda ctx: ({"f": "read", "key": "s0"} if ctx.rng.random() < 0.2
                                                else {"f": "add", "key": "s0", "value": ctx.rng.random()}),
                         results_dir=tmp_path, pictures=False, **FAST))
    assert out.valid is True
    r = out.results["checkers"]["set"]
    assert r["acknowledged"] > 50 and r["keys"] == 1 and r["reads"] > 0


@pytest.mark.parametrize(("fields", "message"), [
    ({"nodes": 0}, "nodes: needs at least one node"),
    ({"time_limit": 0}, "time_limit: must be > 0"),
    ({"workload": "nosuch"}, "unknown workload 'nosuch'"),
    ({"nemesis": ["nosuch"]}, "unknown nemesis 'nosuch'"),
])
def test_mistakes_are_one_line(tmp_path: Path, fields: dict[str, Any], message: str) -> None:
    with pytest.raises(BadInput, match=message):
        run(JepsenTest(db=StoreDB, results_dir=tmp_path, **{**FAST, **fields}))


def test_failure_message_leads_with_what_fails_the_checker(tmp_path: Path) -> None:
    from jepsen_py.runner import RunOutcome

    stale = [{"kind": "stale-read", "ops": [i], "explanation": f"late {i}"} for i in range(3)]
    results = {"valid": False, "checkers": {"set": {
        "valid": False, "failing_kinds": ["lost"], "anomaly_counts": {"stale-read": 3, "lost": 1},
        "anomalies": [*stale, {"kind": "lost", "ops": [9], "explanation": "gone"}]}}}
    out = RunOutcome(run_dir=tmp_path, valid=False, results=results, exit_code=1, anomalies=4)
    lines = failure_message(out, limit=2).splitlines()
    assert lines[2] == "  - lost: gone" and lines[3] == "  - stale-read: late 0"
    assert lines[4].startswith("  ... and 2 more")


def test_a_generator_object_handing_out_an_op_without_a_name(tmp_path: Path) -> None:
    """Only the run sees the op: it stops with the one line that names the generator, exit 254, and
    the op is not in the history."""
    def bad(ctx: Any) -> dict[str, Any]:
        return {"f": None, "key": "s0"}

    out = run(JepsenTest(db=StoreDB, workload="set", generator=bad, results_dir=tmp_path, pictures=False,
                         **FAST))
    assert out.exit_code == 254
    assert out.error == (f"generator: {__name__}:test_a_generator_object_handing_out_an_op_without_a_name"
                         f".<locals>.bad: its generator gave an op with f=None "
                         f"(an op's f is a non-empty name)")
    history = (Path(out.run_dir) / "history.jsonl").read_text().splitlines()
    assert all(json.loads(line)["f"] for line in history)


def test_a_test_in_code_runs_in_the_simulator_as_the_command_line_does(tmp_path: Path) -> None:
    """The API assembles through the same code as `jepsen-py run` (jepsen_py/assembly.py), so the
    simulator is one more backend for it: our cluster with a checker object of the caller's, and a
    DB object, which the simulator cannot use, refused in one line."""

    class Counted:
        name = "counted"

        def check(self, test: Any, history: list[Op]) -> dict[str, Any]:
            oks = sum(1 for o in history if o.type == "ok" and o.f == "create")
            return {"valid": oks == 0, "creates": oks}  # fails as soon as a create got through

    spec = dict(db="jepsen_py.raftdb:RaftMetadataDB", workload="topics", backend="sim", time_limit=5,
                results_dir=tmp_path, seed=4, nodes=3, pictures=False, nemesis=["partition-leader"])
    assert run(JepsenTest(**spec)).valid is True
    outcome = run(JepsenTest(**spec, checkers=[Counted()]))
    assert outcome.valid is False and outcome.results["checkers"]["counted"]["creates"] > 0
    with pytest.raises(BadInput, match="the simulator runs this project's cluster only"):
        run(JepsenTest(**{**spec, "db": StoreDB}))
