"""explore --master and test-all --backend sim --master on a real standalone cluster (a Master and a
Worker from PySpark's spark-class, as test_standalone.py starts them): the simulated trials run in
the Worker's executor JVMs' Pythons, which import our code (new modules included) from the shipped
zip, not from any install."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.spark.test_standalone import Standalone, _apps, _jepsen, standalone

pytestmark = pytest.mark.slow
__all__ = ["standalone"]  # the module's cluster fixture (one Master and Worker for this module)


def _summary(results: Path) -> dict:
    runs = sorted((results / "explore").iterdir())
    return json.loads((runs[-1] / "explore.json").read_text())


def test_explore_master_finds_a_seed_bug_whose_schedule_replays(standalone: Standalone,
                                                                tmp_path: Path) -> None:
    p = _jepsen("explore", "--master", standalone.url, "--bug", "split-brain-metadata", "--budget", "120",
                "--shrink-budget", "30", "--harden-budget", "0", "--seed", "3", "--no-progress",
                "--results-dir", str(tmp_path / "r"))
    assert p.returncode == 1, p.stderr[-3000:] + standalone.log_tail()
    out = _summary(tmp_path / "r")
    assert out["fanout"]["master"] == standalone.url and out["fanout"]["task_errors"] == 0
    finding = out["findings"][0]
    assert Path(finding["schedule_file"]).is_file()
    replay = _jepsen("run", "--schedule", finding["schedule_file"], "--backend", "sim", "--no-progress",
                     "--results-dir", str(tmp_path / "replay"))
    assert replay.returncode == 1, replay.stderr[-3000:]
    assert "jepsen-py explore" in _apps(standalone)


def test_explore_master_correct_build_with_a_corpus(standalone: Standalone, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    argv = ("explore", "--master", standalone.url, "--budget", "10", "--nemesis", "none", "--workload",
            "offsets", "--node-count", "3", "--time-limit", "2", "--corpus", str(corpus), "--no-progress",
            "--results-dir", str(tmp_path / "r"))
    first = _jepsen(*argv, "--seed", "1")
    assert first.returncode == 0, first.stderr[-3000:] + standalone.log_tail()
    out = _summary(tmp_path / "r")
    assert out["schedules_tried"] > 0 and out["findings"] == [] and out["fanout"]["workers"] >= 1
    kept = sorted(corpus.glob("*.json"))
    assert kept and out["fanout"]["corpus_written"] == len(kept)
    (corpus / "torn.json").write_text('{"format": "jepsen-py-explore-corpus", "vers')
    second = _jepsen(*argv, "--seed", "2")
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"corpus {corpus}: {len(kept)} entries loaded" in second.stderr
    assert f"skipped {corpus / 'torn.json'}" in second.stderr
    assert _summary(tmp_path / "r")["fanout"]["corpus_loaded"] == len(kept)


def test_explore_in_rounds_finds_the_same_on_spark_as_in_worker_processes(standalone: Standalone,
                                                                           tmp_path: Path) -> None:
    """--round-size: the same seed finds the same bug after the same schedules, in the same
    configuration, on the standalone cluster's executors as in two worker processes."""
    # this seed finds it in the second round (two tasks of 4 trials a round), from the first's corpus
    argv = ("explore", "--bug", "zombie-leader", "--budget", "300", "--shrink-budget", "10",
            "--harden-budget", "0", "--seed", "8", "--round-size", "2", "--no-progress")
    found = []
    for where in (("--master", standalone.url), ("--parallel", "2")):
        results = tmp_path / where[0].strip("-")
        p = _jepsen(*argv, *where, "--results-dir", str(results))
        assert p.returncode == 1, p.stderr[-3000:] + standalone.log_tail()
        out = _summary(results)
        assert out["fanout"]["task_errors"] == 0 and out["fanout"]["tasks"] % 2 == 0
        f = out["findings"][0]
        found.append((f["config"], f["schedules_tried"]))
    assert found[0] == found[1] and found[0][1] > 8, found


def test_test_all_master_gives_the_parallel_table(standalone: Standalone, tmp_path: Path) -> None:
    argv = ("test-all", "--backend", "sim", "--quick", "--bugs", "split-brain-metadata,correct",
            "--time-limit", "6", "--seed", "4", "--no-progress", "--results-dir", str(tmp_path / "r"))
    par = _jepsen(*argv, "--parallel", "2", "--name", "par")
    spk = _jepsen(*argv, "--master", standalone.url, "--name", "spk")
    assert spk.returncode == par.returncode, spk.stderr[-3000:] + standalone.log_tail()
    a = json.loads((tmp_path / "r" / "par" / "summary.json").read_text())
    b = json.loads((tmp_path / "r" / "spk" / "summary.json").read_text())
    cells = ("bug", "workload", "nemesis", "read_mode", "runs", "valid", "invalid", "unknown", "anomalies",
             "passed")
    assert a["rows"] and [{k: r[k] for k in cells} for r in a["rows"]] == [
        {k: r[k] for k in cells} for r in b["rows"]]
    assert a["passed"] == b["passed"]
    # the executors run a zip of the code without its git history: the version is the driver's
    versions = {r: {json.loads(t.read_text())["options"].get("db_version")
                    for t in (tmp_path / "r").glob(f"{r}-*/*/test.json")} for r in ("par", "spk")}
    assert len(versions["par"]) == 1 and "unversioned" not in versions["par"]
    assert versions["spk"] == versions["par"]
    assert "jepsen-py test-all" in _apps(standalone)
