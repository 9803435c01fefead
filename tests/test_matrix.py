"""The detection matrix: the expectations file and its arithmetic (fast), and `jepsen-py test-all
--quick` for real on Docker (what CI runs: it fails when a seed bug goes undetected or the correct
build is accused)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jepsen_py.cluster.bugs import NAMES as KNOWN_BUGS

from jepsen_py import matrix as mx
from jepsen_py.errors import BadInput


def test_the_expectations_name_every_bug_once_and_the_correct_build():
    full = mx.load_expectations(mx.DEFAULT_EXPECTATIONS, quick=False)
    quick = mx.load_expectations(mx.DEFAULT_EXPECTATIONS, quick=True)
    for cells in (full, quick):
        tuned = [c for c in cells if c.config == mx.TUNED]
        bugs = [c.bug for c in tuned if c.bug != mx.CORRECT]
        assert sorted(bugs) == sorted(KNOWN_BUGS)
        assert any(c.bug == mx.CORRECT for c in tuned)
        assert all(c.anomalies for c in cells if c.bug != mx.CORRECT)
    full_tuned = [c for c in full if c.config == mx.TUNED]
    assert all(c.time_limit == 60 for c in full_tuned if c.bug != mx.CORRECT)
    assert len([c for c in quick if c.bug == mx.CORRECT]) < len([c for c in full if c.bug == mx.CORRECT])
    # --quick must stay under 15 minutes on 2 cores, even run one at a time: the main phases leave
    # room for ~35 s of provisioning, recovery and checking per run (CI runs two at a time)
    assert sum(c.time_limit + 35 for c in quick) < 14 * 60
    # every bug's tuned cell gates the matrix
    assert all(c.gate for c in full_tuned)


def test_broad_configs_run_every_bug_and_the_correct_build_under_one_shared_config():
    full = mx.load_expectations(mx.DEFAULT_EXPECTATIONS, quick=False)
    broad = [c for c in full if c.config != mx.TUNED]
    configs = {c.config for c in broad}
    assert configs, "the expectations name no broad config"
    for name in configs:
        cells = [c for c in broad if c.config == name]
        assert sorted(c.bug for c in cells) == sorted([*KNOWN_BUGS, mx.CORRECT])
        # one configuration for all: what a user runs without knowing where the bug is
        assert len({(c.workload, c.nemesis, c.read_mode, c.time_limit, c.nemesis_interval, c.args)
                    for c in cells}) == 1
        # the mixed workload, or for transactional bugs the transactional one
        assert cells[0].workload in ("metadata", "list-append")
        assert len(cells[0].nemesis.split(",")) > 1 or cells[0].nemesis == "all"  # mixed faults
        assert all(c.label == f"{c.bug}-{name}" for c in cells)
        # a bug counts the anomaly kinds of its own tuned cell unless its broad entry says otherwise
        own = {c.bug: c.anomalies for c in full if c.config == mx.TUNED}
        assert all(set(c.anomalies) & set(own[c.bug]) for c in cells if c.bug != mx.CORRECT)
    # most bugs gate their broad cells; a known gap is said out loud (gate = false), never silent
    assert sum(c.gate for c in broad if c.bug != mx.CORRECT) >= len(KNOWN_BUGS) // 2
    # and no bug is a gap everywhere: each one gates the matrix in at least one broad config
    ungated = sorted(set(KNOWN_BUGS) - {c.bug for c in broad if c.gate})
    assert not ungated, f"caught by no broad config: {ungated}"
    # the correct build is never excused: it gates every broad config it runs in
    assert all(c.gate for c in broad if c.bug == mx.CORRECT)
    text = mx.DEFAULT_EXPECTATIONS.read_text().splitlines()
    for i, line in enumerate(text):
        if line.strip() == "gate = false":
            reason = any(t.lstrip().startswith("#") for t in text[max(0, i - 4):i])
            assert reason, f"expectations.toml line {i + 1}: gate = false with no comment saying why"
    # broad cells are not part of --quick: they need long runs to cover their fault families
    assert all(c.config == mx.TUNED for c in mx.load_expectations(mx.DEFAULT_EXPECTATIONS, quick=True))
    # --bugs picks a bug's broad cell, or every broad cell
    assert [c.label for c in mx.select(full, ["zombie-leader", "broad"])] == ["zombie-leader-broad"]
    assert {c.config for c in mx.select(full, ["broad"])} == {"broad"}
    assert {c.config for c in mx.select(full, ["correct", "tuned"])} == {mx.TUNED}


def test_a_broad_config_overrides_per_bug_and_its_errors_are_one_line(tmp_path):
    f = tmp_path / "e.toml"
    head = ("[bugs.zombie-leader]\nworkload = 'offsets'\nnemesis = 'partition-leader'\nnemesis_interval = 3\n"
            "anomalies = ['stale-read']\n[bugs.volatile-offsets]\nworkload = 'offsets'\nnemesis = 'kill'\n"
            "anomalies = ['lost-commit']\n")
    f.write_text(head + "[[broad]]\nname = 'wide'\nworkload = 'metadata'\nnemesis = 'all'\ntime_limit = 90\n"
                 "args = ['--fault-targets', 'all']\n"
                 "[broad.bugs.volatile-offsets]\ngate = false\nanomalies = ['lost-commit', 'crash']\n")
    cells = {c.label: c for c in mx.load_expectations(f, quick=False)}
    assert set(cells) == {"zombie-leader-offsets-partition-leader", "volatile-offsets-offsets-kill",
                          "zombie-leader-wide", "volatile-offsets-wide", "correct-wide"}
    z, v, ok = cells["zombie-leader-wide"], cells["volatile-offsets-wide"], cells["correct-wide"]
    # the shared config, not the bug's tuned interval; the bug's own anomaly kinds
    assert (z.workload, z.nemesis, z.time_limit, z.nemesis_interval, z.args, z.gate) == \
        ("metadata", "all", 90, 10, ("--fault-targets", "all"), True)
    assert z.anomalies == ("stale-read",) and z.config == "wide"
    assert v.anomalies == ("lost-commit", "crash") and not v.gate
    assert ok.bug == mx.CORRECT and ok.anomalies == () and ok.nemesis == "all"
    argv = mx.run_argv(v, "m-x", tmp_path, 5, None)
    assert argv[-4:] == ["--bug", "volatile-offsets", "--fault-targets", "all"]
    assert argv[argv.index("--workload") + 1] == "metadata" and argv[argv.index("--time-limit") + 1] == "90"
    assert all(c.config == mx.TUNED for c in mx.load_expectations(f, quick=True))
    f.write_text(f.read_text().replace("name = 'wide'", "name = 'wide'\nquick = true"))
    assert {c.config for c in mx.load_expectations(f, quick=True)} == {mx.TUNED, "wide"}
    # a broad row carries its config into the summary
    row = mx.summarize(z, [rec(z, "invalid", {"stale-read": 2})])
    assert row.config == "wide" and row.passed
    shared = "workload = 'metadata'\nnemesis = 'all'\n"
    for block, msg in [("name = 'zombie-leader'\n" + shared, "is taken"),
                       ("name = 'tuned'\n" + shared, "is taken"),
                       ("name = 'a b'\n" + shared, "non-empty word"),
                       ("name = 'x'\n" + shared + "[broad.bugs.no-such]\ngate = false\n", "no-such, not in"),
                       ("name = 'x'\n" + shared + "gate = 'no'\n", "gate must be"),
                       ("name = 'x'\nworkload = 'metadata'\n", "nemesis must be")]:
        f.write_text(head + "[[broad]]\n" + block)
        with pytest.raises(BadInput, match=msg):
            mx.load_expectations(f, quick=False)


def test_a_malformed_expectations_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "e.toml"
    bad.write_text("[bugs.zombie-leader]\nworkload = 'offsets'\nnemesis = 'partition-leader'\n")
    with pytest.raises(BadInput, match=r"bugs.zombie-leader.*anomalies"):
        mx.load_expectations(bad, quick=False)
    # run refuses a single-valued flag given twice: args repeating the cell's own are refused here,
    # not as a 254 from every run of the cell
    bad.write_text("[bugs.zombie-leader]\nworkload = 'offsets'\nnemesis = 'partition-leader'\n"
                   "anomalies = ['stale-read']\nargs = ['--time-limit=30']\n")
    with pytest.raises(BadInput, match=r"args: --time-limit is set by the cell itself \(time_limit\)"):
        mx.load_expectations(bad, quick=False)
    bad.write_text("not toml [")
    with pytest.raises(BadInput, match="not valid TOML"):
        mx.load_expectations(bad, quick=False)
    with pytest.raises(BadInput, match="cannot read"):
        mx.load_expectations(tmp_path / "missing.toml", quick=False)
    cells = mx.load_expectations(mx.DEFAULT_EXPECTATIONS, quick=True)
    with pytest.raises(BadInput, match="no-such-bug"):
        mx.select(cells, ["no-such-bug"])
    assert {c.bug for c in mx.select(cells, ["zombie-leader", "correct"])} == {"zombie-leader", "correct"}


def rec(cell: mx.Cell, verdict: str, kinds: dict[str, int], first: float | None = 1.0) -> mx.RunRecord:
    code = {"valid": 0, "invalid": 1, "unknown": 2}[verdict]
    r = mx.RunRecord(cell=cell.label, iteration=0, exit_code=code, verdict=verdict, wall_s=1.0,
                     anomaly_kinds=kinds, first_anomaly_s=first)
    r.detected = code == 1 and any(k in kinds for k in cell.anomalies)
    return r


def test_detection_counts_only_invalid_runs_with_the_expected_anomaly():
    cell = mx.Cell("zombie-leader", "offsets", "partition-leader", "read-index", 60, 10, ("stale-read",))
    runs = [rec(cell, "invalid", {"stale-read": 3}, 12.0)] * 19 + [rec(cell, "invalid", {"crash": 1}, 2.0)]
    row = mx.summarize(cell, runs)
    assert row.detection_rate == 0.95 and row.passed  # 19 of 20 named the anomaly
    assert row.median_first_anomaly_s == 12.0  # undetected runs do not count toward time to detect
    assert row.anomalies == {"stale-read": 57, "crash": 1}
    row = mx.summarize(cell, runs[:18] + [rec(cell, "valid", {})] * 2)
    assert row.detection_rate == 0.9 and not row.passed


def test_the_correct_build_fails_its_expectation_on_one_invalid_run():
    cell = mx.Cell("correct", "offsets", "kill", "read-index", 60, 10)
    assert mx.summarize(cell, [rec(cell, "valid", {}, None)] * 3).passed
    row = mx.summarize(cell, [rec(cell, "valid", {}, None)] * 2 + [rec(cell, "invalid", {"stale-read": 1})])
    assert not row.passed and row.invalid == 1 and row.detection_rate is None


def test_parallel_runs_never_overlap_two_runs_of_one_cell(monkeypatch, tmp_path):
    # The scheduler alone (each "run" is a short sleep): a run is found afterwards through its
    # test's `latest` link, so two runs of one cell must never be in flight together.
    import threading
    import time as _time

    cells = [mx.Cell(f"bug{k}", "offsets", "none", "read-index", 1, 1, ("stale-read",)) for k in range(3)]
    running: dict[str, int] = {}
    peak = {"all": 0}
    lock = threading.Lock()

    def fake_run_cell(cell, i, results_dir, matrix, node_count, seed=None):
        with lock:
            running[cell.label] = running.get(cell.label, 0) + 1
            assert running[cell.label] == 1, f"two runs of {cell.label} at once"
            peak["all"] = max(peak["all"], sum(running.values()))
        _time.sleep(0.02)
        with lock:
            running[cell.label] -= 1
        return mx.RunRecord(cell=cell.label, iteration=i, exit_code=1, verdict="invalid", wall_s=0.02,
                            anomaly_kinds={"stale-read": 1}, detected=True)

    monkeypatch.setattr(mx, "run_cell", fake_run_cell)
    tallies: list[int] = []
    rows, records = mx.run_matrix(cells, test_count=4, results_dir=tmp_path, matrix="m", node_count=3,
                                  parallel=3, on_tally=lambda rows, recs: tallies.append(len(recs)))
    assert tallies == list(range(1, 13))  # the table so far, after every run
    assert peak["all"] == 3
    assert [r.runs for r in rows] == [4, 4, 4] and all(r.detection_rate == 1.0 for r in rows)
    assert [(r.cell, r.iteration) for r in records] == [(c.label, i) for c in cells for i in range(4)]
    with pytest.raises(BadInput, match="--parallel"):
        mx.run_matrix(cells, test_count=1, results_dir=tmp_path, matrix="m", node_count=3, parallel=0)


def test_two_cells_with_one_label_keep_their_own_runs(monkeypatch, tmp_path):
    # The expectations have two correct-build cells labelled correct-offsets-kill (one at an
    # unlimited rate): each must be tallied from its own runs, not from the other's.
    plain = mx.Cell(mx.CORRECT, "offsets", "kill", "read-index", 1, 1)
    fast = mx.Cell(mx.CORRECT, "offsets", "kill", "read-index", 1, 1, args=("--rate", "0"))
    assert plain.label == fast.label

    def fake_run_cell(cell, i, results_dir, matrix, node_count, seed=None):
        verdict = "invalid" if cell.args else "valid"
        return mx.RunRecord(cell=cell.label, iteration=i, exit_code=1 if cell.args else 0, verdict=verdict,
                            wall_s=0.0)

    monkeypatch.setattr(mx, "run_cell", fake_run_cell)
    rows, records = mx.run_matrix([plain, fast], test_count=2, results_dir=tmp_path, matrix="m", node_count=3)
    assert [(r.valid, r.invalid) for r in rows] == [(2, 0), (0, 2)]
    assert len(records) == 4


@pytest.mark.docker
@pytest.mark.slow
def test_test_all_quick_catches_every_bug_and_never_accuses_the_correct_build(docker_engine, node_image,
                                                                              tmp_path):
    argv = [sys.executable, "-m", "jepsen_py.cli", "test-all", "--quick", "--parallel", "2",
            "--results-dir", str(tmp_path), "--no-progress"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=15 * 60)
    summary_path = tmp_path / "matrix-quick" / "summary.json"
    assert summary_path.exists(), proc.stderr[-3000:]
    summary = json.loads(summary_path.read_text())
    rows = {r["cell"]: r for r in summary["rows"]}
    failed = {c: {k: r[k] for k in ("valid", "invalid", "unknown", "errors", "anomalies")}
              for c, r in rows.items() if not r["passed"] and r["gate"]}
    assert proc.returncode == 0 and not failed, (failed, proc.stdout[-4000:])
    assert {r["bug"] for r in rows.values()} == {*KNOWN_BUGS, "correct"}
    assert summary["correct_build"]["false_positives"] == 0
    for r in summary["runs"]:  # every run is in the store, inspectable afterwards
        assert r["run_dir"] and (Path(r["run_dir"]) / "history.jsonl").exists()
    assert "PASSED" in proc.stdout


@pytest.mark.docker
@pytest.mark.slow
def test_test_all_runs_a_broad_cell_for_real_and_reports_it_apart(docker_engine, node_image, tmp_path):
    # One broad cell, short: the bug caught with or without faults, under the broad config's mixed
    # workload and faults; the row is the broad one, in the table and in summary.json.
    argv = [sys.executable, "-m", "jepsen_py.cli", "test-all", "--bugs", "split-brain-metadata,broad",
            "--time-limit", "15", "--test-count", "1", "--results-dir", str(tmp_path), "--name", "m",
            "--no-progress"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=10 * 60)
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    [row] = summary["rows"]
    assert row["cell"] == "split-brain-metadata-broad" and row["config"] == "broad", row
    assert row["workload"] == "metadata" and row["passed"], (row, proc.stderr[-3000:])
    [run] = summary["runs"]
    assert run["detected"] and Path(run["run_dir"], "history.jsonl").exists()
    assert proc.returncode == 0 and "broad" in proc.stdout
