"""A gate never passes on a run that tested nothing: a run whose clients did nothing or never
succeeded, a checker that raised, and a stored run re-checked by a workload that judges none of its
ops. Driven through the command line, as a CI job drives it, with an outside plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PLUGIN = '''
"""A DB whose clients answer ok, None or garbage; a workload without checkers; a checker that raises."""

import dataclasses

from jepsen_py.generator import fn
from jepsen_py.history import OK
from jepsen_py.workload import Workload


class DB:
    answer = "ok"

    def __init__(self, spec): pass
    def setup(self, test, node): pass
    def teardown(self, test, node): pass
    def log_files(self, test, node): return []
    def client(self, workload): return Client(self.answer)


class NoneDB(DB):
    answer = "none"


class GarbageDB(DB):
    answer = "garbage"


class Client:
    def __init__(self, answer): self.answer = answer
    def open(self, test, node): return Client(self.answer)
    def close(self, test): pass

    def invoke(self, test, op):
        if self.answer == "none":
            return None
        if self.answer == "garbage":
            return "garbage"
        return dataclasses.replace(op, type=OK, value=1)


def work(spec):
    return Workload(name="work", generator=fn(lambda ctx: {"f": ctx.rng.choice(["get", "put"])}),
                    final_generator=None, checkers=[])


def nothing(spec):
    return []


class Boom:
    name = "boom"

    def check(self, test, history):
        raise RuntimeError("kaboom\\nsecond line")


def boom(spec):
    return Boom()
'''


def plugin_dir(tmp: Path) -> Path:
    root = tmp / "proj"
    (root / "vplug").mkdir(parents=True)
    (root / "vplug" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    return root


def jepsen(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """This checkout's CLI (not the installed one), with the plugin importable from `cwd`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(cwd)])}
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def run_plugin(tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    proj = plugin_dir(tmp)
    results = tmp / "results"
    res = jepsen(proj, "run", "--backend", "none", "--node-count", "3", "--time-limit", "0.5",
                 "--rate", "100", "--recovery-timeout", "0", "--seed", "3", "--no-progress",
                 "--results-dir", str(results), "--workload", "vplug:work", *args)
    runs = [p for d in results.iterdir() if d.name != "latest" for p in d.iterdir() if p.name != "latest"]
    assert len(runs) == 1, res.stdout + res.stderr
    return res, json.loads((runs[0] / "results.json").read_text())


def test_a_checker_that_raises_is_unknown_in_one_line_without_a_traceback(tmp_path: Path) -> None:
    res, results = run_plugin(tmp_path, "--db", "vplug:DB", "--checker", "vplug:boom")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    assert results["checkers"]["boom"] == {"valid": "unknown", "error": "RuntimeError: kaboom second line"}
    assert "unknown (RuntimeError: kaboom second line)" in res.stdout
    warned = [line for line in res.stderr.splitlines() if "boom" in line]
    assert len(warned) == 1 and "RuntimeError: kaboom" in warned[0], res.stderr


def test_a_generator_that_yields_nothing_is_unknown(tmp_path: Path) -> None:
    res, results = run_plugin(tmp_path, "--db", "vplug:DB", "--generator", "vplug:nothing")
    assert res.returncode == 2, res.stdout + res.stderr
    assert results["valid"] == "unknown"
    assert results["checkers"]["stats"]["reason"] == "no client op was attempted: nothing was tested"


def test_a_client_that_never_answers_ok_fails_the_run(tmp_path: Path) -> None:
    for db in ("vplug:NoneDB", "vplug:GarbageDB"):
        res, results = run_plugin(tmp_path / db.partition(":")[2], "--db", db)
        assert res.returncode == 1, res.stdout + res.stderr
        stats = results["checkers"]["stats"]
        assert stats["valid"] is False and stats["count"] > 0 and stats["ok"] == 0
        # no fault: each op type was refused while calm, so each is never-ok (Jepsen's rule); under
        # faults the stats tests show no-ok failing the run instead
        assert stats["never_ok"] == ["get", "put"]
        assert [a["kind"] for a in stats["anomalies"]] == ["never-ok", "never-ok"]


def test_a_workload_without_checkers_still_gets_the_stats_rule(tmp_path: Path) -> None:
    res, results = run_plugin(tmp_path, "--db", "vplug:DB")
    assert res.returncode == 0, res.stdout + res.stderr
    assert results["checkers"]["stats"]["valid"] is True and results["checkers"]["stats"]["ok"] > 0


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _op(i: int, typ: str, process: int | str, f: str, value: object = None, key: object = None) -> dict:
    return {"index": i, "time": i, "type": typ, "process": process, "f": f, "key": key, "value": value}


OFFSETS_HISTORY = [
    _op(0, "ok", "observer", "status", {"role": "leader"}),
    _op(1, "invoke", "nemesis", "start-partition"), _op(2, "info", "nemesis", "start-partition"),
    _op(3, "invoke", 0, "commit", 1, "g/t/0"), _op(4, "ok", 0, "commit", 1, "g/t/0"),
    _op(5, "invoke", 1, "fetch", None, "g/t/0"), _op(6, "ok", 1, "fetch", 1, "g/t/0"),
]


def test_check_with_a_model_that_matches_no_op_is_bad_input(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "h.jsonl", OFFSETS_HISTORY)
    res = jepsen(tmp_path, "check", str(path), "--model", "kv")
    assert res.returncode == 254, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [
        f"jepsen-py: {path}: no kv operation to check: its client ops are 1 commit, 1 fetch; "
        "choose the --model that fits them"]
    assert jepsen(tmp_path, "check", str(path), "--model", "offsets").returncode == 0


def test_check_of_a_history_without_client_ops_is_bad_input(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "h.jsonl", OFFSETS_HISTORY[:3])
    res = jepsen(tmp_path, "check", str(path), "--model", "offsets")
    assert res.returncode == 254, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [
        f"jepsen-py: {path}: no client operation to check: its 3 ops are all nemesis or observer ops"]


def test_check_of_a_history_whose_every_op_failed_is_unknown_with_the_reason(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "h.jsonl", [_op(0, "invoke", 0, "write", 1), _op(1, "fail", 0, "write", 1)])
    res = jepsen(tmp_path, "check", str(path), "--model", "register")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "unknown: no register operation left to check" in res.stdout


def test_analyze_as_a_workload_that_checks_none_of_the_ops_is_unknown(tmp_path: Path) -> None:
    res = jepsen(tmp_path, "run", "--backend", "sim", "--workload", "offsets", "--time-limit", "2",
                 "--seed", "1", "--no-progress", "--results-dir", str(tmp_path / "r"))
    assert res.returncode == 0, res.stdout + res.stderr
    run = (tmp_path / "r" / "latest").resolve()
    spec = json.loads((run / "test.json").read_text())
    for workload, checks in (("set", "add, read"), ("register", "cas, read, write")):
        (run / "test.json").write_text(json.dumps({**spec, "workload": workload}))
        again = jepsen(tmp_path, "analyze", "--no-render", str(run))
        assert again.returncode == 2, again.stdout + again.stderr
        results = json.loads((run / "results.json").read_text())
        assert results["valid"] == "unknown"
        why = results["checkers"]["workload"]["reason"]
        assert why.startswith(f"none of the client ops is one this workload checks ({checks}); "
                              "the history has ") and why.endswith(": nothing was checked")
    (run / "test.json").write_text(json.dumps(spec))
    assert jepsen(tmp_path, "analyze", "--no-render", str(run)).returncode == 0
