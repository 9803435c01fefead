"""`jepsen-py test-all --backend sim`: the detection matrix in the simulator, on the real node code.
Real verdicts from real simulated runs (a seed bug caught, the correct build valid, a bug under a
cell that cannot catch it failing the matrix), kept short enough for CI; the 500-run sweep is a
measurement (README), not a test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from jepsen_py.workloads import CLUSTER_WORKLOADS

from jepsen_py import matrix as mx
from jepsen_py.sim import matrix as smx
from jepsen_py.sim.nemesis import SUPPORTED

REPO = Path(__file__).resolve().parents[3]

TWO_CELLS = """
[defaults]
time_limit = 6
nemesis_interval = 2

[bugs.split-brain-metadata]
workload = "topics"
nemesis = "none"
anomalies = ["duplicate-create", "stale-read"]

[[correct]]
workload = "offsets"
nemesis = "partition-leader"
"""

# zombie-leader needs the leader cut off; with no faults at all it cannot show
UNCATCHABLE = """
[defaults]
time_limit = 4

[bugs.zombie-leader]
workload = "offsets"
nemesis = "none"
anomalies = ["stale-read", "nonlinearizable"]
min_detection = 1.0
"""


def run_test_all(tmp: Path, expectations: str, *argv: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    exp = tmp / "expectations.toml"
    exp.write_text(expectations)
    proc = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "test-all", "--backend", "sim",
                           "--expectations", str(exp), "--results-dir", str(tmp / "store"), "--no-progress",
                           *argv], capture_output=True, text=True, cwd=REPO, timeout=900)
    summary_path = tmp / "store" / "matrix-sim" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return proc, summary


def test_a_bug_is_caught_and_the_correct_build_is_valid_exit_0(tmp_path: Path) -> None:
    proc, summary = run_test_all(tmp_path, TWO_CELLS, "--test-count", "2", "--no-sweep", "--seed", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert summary["backend"] == "sim" and summary["passed"] is True and summary["complete"] is True
    rows = {r["bug"]: r for r in summary["rows"]}
    assert rows["split-brain-metadata"]["detection_rate"] == 1.0
    assert rows["split-brain-metadata"]["anomalies"].get("duplicate-create", 0) > 0
    assert rows["correct"]["valid"] == 2 and rows["correct"]["invalid"] == 0
    # every run names its seed (the matrix's --seed + the run) and its run directory, which holds
    # the simulated history and results
    by_cell: dict[str, list[int]] = {}
    for run in summary["runs"]:
        by_cell.setdefault(run["cell"], []).append(run["seed"])
        run_dir = Path(run["run_dir"])
        assert json.loads((run_dir / "test.json").read_text())["seed"] == run["seed"]
        assert (run_dir / "history.jsonl").stat().st_size > 0
        assert run["simulated_s"] >= 6
    assert by_cell == {"split-brain-metadata-topics-none": [3, 4], "correct-offsets-partition-leader": [3, 4]}
    assert "matrix-sim: PASSED" in proc.stdout
    assert "split-brain-metadata-topics-none run 1 (seed 3): invalid" in proc.stderr


def test_a_bug_its_cell_cannot_catch_fails_the_matrix_exit_1(tmp_path: Path) -> None:
    proc, summary = run_test_all(tmp_path, UNCATCHABLE, "--test-count", "1", "--no-sweep")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert summary["passed"] is False
    (row,) = summary["rows"]
    assert row["detection_rate"] == 0.0 and row["valid"] == 1
    assert "matrix-sim: FAILED" in proc.stdout


def test_bad_run_flags_in_a_cell_are_one_line_and_254_for_that_run(tmp_path: Path) -> None:
    cell = mx.Cell(bug=mx.CORRECT, workload="offsets", nemesis="none", read_mode="read-index",
                   time_limit=1, nemesis_interval=1, args=("--ssh-host", "n1=h"))
    rec = smx.run_cell_sim(cell, 0, tmp_path, "m", 5, 1)
    assert rec.exit_code == 254 and rec.verdict == "bad-input"
    assert rec.error is not None and "--ssh-host" in rec.error and "\n" not in rec.error


def test_the_sweep_covers_every_cluster_workload_nemesis_and_safe_read_mode() -> None:
    cells = smx.sweep_cells(20, 5)
    got = {(c.workload, c.nemesis, c.read_mode) for c in cells}
    assert got == {(w, n, m) for w in CLUSTER_WORKLOADS for n in ("none", *SUPPORTED)
                   for m in ("read-index", "lease")}
    assert all(c.bug == mx.CORRECT and c.time_limit == 20 and c.nemesis_interval == 5 for c in cells)
    assert len({c.label for c in cells}) == len(cells)  # each its own run directory


def test_correct_runs_are_spread_over_the_correct_cells_and_bugs_keep_test_count() -> None:
    bug = mx.Cell(bug="zombie-leader", workload="offsets", nemesis="partition-leader",
                  read_mode="read-index", time_limit=60, nemesis_interval=10, anomalies=("stale-read",))
    correct = smx.sweep_cells(20, 5)
    planned = smx.plan([bug, *correct], 10, 500)
    assert planned[0].runs == 10
    assert sum(p.runs for p in planned[1:]) >= 500
    assert {p.runs for p in planned[1:]} == {-(-500 // len(correct))}
    assert [p.runs for p in smx.plan([bug, *correct], 3, None)] == [3] * (1 + len(correct))


def test_two_cells_with_one_label_are_run_and_tallied_apart(tmp_path: Path) -> None:
    plain = mx.Cell(bug=mx.CORRECT, workload="offsets", nemesis="none", read_mode="read-index",
                    time_limit=2, nemesis_interval=1)
    slow = mx.Cell(bug=mx.CORRECT, workload="offsets", nemesis="none", read_mode="read-index",
                   time_limit=2, nemesis_interval=1, args=("--rate", "20"))
    assert plain.label == slow.label
    rows, records = smx.run_matrix(smx.plan([plain, slow], 1, None), results_dir=tmp_path, matrix="m",
                                   node_count=3, seed=5)
    assert [r.runs for r in rows] == [1, 1] and all(r.valid == 1 for r in rows)
    dirs = [Path(r.run_dir) for r in records if r.run_dir]
    assert len(set(dirs)) == 2
    rates = [json.loads((d / "test.json").read_text())["rate"] for d in dirs]
    assert rates == [100, 20]


def test_simulator_options_without_backend_sim_are_refused_with_254(tmp_path: Path) -> None:
    for flag in (["--correct-runs", "5"], ["--no-sweep"], ["--sweep-time-limit", "3"]):
        proc = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "test-all", *flag, "--results-dir",
                               str(tmp_path)], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert proc.returncode == 254, proc.stderr
        assert "--backend sim" in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "matrix").exists()


def test_a_run_past_its_wall_limit_is_stopped_and_recorded_and_the_next_runs(tmp_path: Path) -> None:
    import signal

    long = mx.Cell(bug=mx.CORRECT, workload="offsets", nemesis="none", read_mode="read-index",
                   time_limit=600, nemesis_interval=1)
    before = signal.getsignal(signal.SIGALRM)
    rec = smx.run_cell_sim(long, 0, tmp_path, "m", 3, 1, wall_limit_s=5.0)
    assert rec.exit_code == 255 and rec.error is not None and "stopped after 5 wall s" in rec.error
    assert rec.wall_s < 120
    (run_dir,) = (tmp_path / "m-correct-offsets-none").glob("2*")
    results = json.loads((run_dir / "results.json").read_text())  # stopped in the run: it says so
    assert "stopped after 5 wall s" in results["error"] and results["stats"]["simulated_s"] < 600
    assert signal.getsignal(signal.SIGALRM) == before  # the alarm is gone: later runs are not cut
    short = mx.Cell(bug=mx.CORRECT, workload="offsets", nemesis="none", read_mode="read-index",
                    time_limit=2, nemesis_interval=1)
    assert smx.run_cell_sim(short, 0, tmp_path, "m", 3, 1, wall_limit_s=300).verdict == "valid"


def test_the_sweep_leaves_out_what_the_cluster_size_cannot_carry() -> None:
    cells = smx.sweep_cells(20, 5)
    keep5, skipped5 = smx.runnable(cells, 5)
    assert keep5 == cells and skipped5 == []
    keep3, skipped3 = smx.runnable(cells, 3)
    assert {c.nemesis for c in cells} - {c.nemesis for c in keep3} == {"partition-ring"}
    assert len(skipped3) == 8 and all("partition-ring" in line and "4 nodes" in line for line in skipped3)


def test_worker_processes_carry_a_matrix_of_hundreds_of_runs(tmp_path: Path) -> None:
    # Runs refused at once (another backend's flag) cost nothing, so 120 of them go through two
    # worker processes in seconds; a pool that retired its workers hung after 100.
    import threading

    refused = mx.Cell(bug=mx.CORRECT, workload="offsets", nemesis="none", read_mode="read-index",
                      time_limit=1, nemesis_interval=1, args=("--ssh-host", "n1=h"))
    out: list[list[mx.RunRecord]] = []

    def go() -> None:
        out.append(smx.run_matrix([smx.Planned(refused, 120)], results_dir=tmp_path, matrix="m",
                                  node_count=3, seed=1, parallel=2)[1])

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(timeout=300)
    assert out, "the matrix did not finish"
    assert len(out[0]) == 120 and {r.verdict for r in out[0]} == {"bad-input"}
    assert [r.seed for r in out[0]] == list(range(1, 121))  # type: ignore[attr-defined]
