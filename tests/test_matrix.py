"""The detection matrix: the expectations file and its arithmetic (fast), and `jepsen-py test-all
--quick` for real on Docker (what CI runs: it fails when a seed bug goes undetected or the correct
build is accused)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
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
    if failed and all(rows[c]["bug"] != "correct" and not r["errors"] for c, r in failed.items()):
        # A bug a timing fault exposes is caught by most runs, not by every one (a quick cell is one
        # run with a fresh seed): a missed bug gets one more run, and must be caught there. The
        # correct build gets no second chance: one false accusation fails here.
        missed = ",".join(sorted({rows[c]["bug"] for c in failed}))
        again = subprocess.run([*argv[:-3], "--bugs", missed, "--results-dir", str(tmp_path / "again"),
                                "--no-progress"], capture_output=True, text=True, timeout=15 * 60)
        assert again.returncode == 0, (failed, again.stdout[-4000:])
        proc, failed = again, {}
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


# A small expectations file every damage below starts from: two bugs, a correct-build run, a broad
# config with an override.
SMALL = """\
[defaults]
time_limit = 6
quick_time_limit = 4
nemesis_interval = 2

[bugs.split-brain-metadata]
workload = "topics"
nemesis = "none"
anomalies = ["duplicate-create", "stale-read"]

[bugs.zombie-leader]
workload = "offsets"
nemesis = "partition-leader"
args = ["--fault-targets", "all"]
anomalies = ["stale-read"]

[[correct]]
workload = "offsets"
nemesis = "kill"
quick = true

[[broad]]
name = "wide"
workload = "metadata"
nemesis = "all"
read_mode = "lease"

[broad.bugs.zombie-leader]
gate = false
"""


def _test_all(tmp_path: Path, expectations: Path, *backend: str) -> tuple[int, str]:
    """`jepsen-py test-all --quick` on `expectations`, in this process: (exit code, stderr)."""
    from jepsen_py.cli import main

    sim = ("--no-sweep",) if backend else ()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["test-all", *backend, *sim, "--quick", "--no-progress", "--expectations",
                     str(expectations), "--results-dir", str(tmp_path / "store")])
    return code, err.getvalue()


@pytest.mark.parametrize("backend", [("--backend", "sim"), ()], ids=["sim", "docker"])
@pytest.mark.parametrize("damage, message", [
    (lambda t: t.replace("[defaults]\n", "[defaults]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n"),
     "nested deeper than an expectations file is"),
    (lambda t: t.replace("gate = false", "gate = false\nanomalies = " + "[" * 10 + "]" * 10),
     "nested deeper than an expectations file is"),
    (lambda t: t + "\n[bugs.no-such-bug]\nworkload = 'offsets'\nnemesis = 'none'\nanomalies = ['crash']\n",
     "[bugs.no-such-bug]: --bug: unknown bug 'no-such-bug'"),
    (lambda t: t.replace('nemesis = "kill"', 'nemesis = "kill,no-such"'),
     "[[correct]] #1: --nemesis: unknown nemesis 'no-such'"),
    (lambda t: t.replace('read_mode = "lease"', 'read_mode = "eventual"'),
     "[[broad]] #1 (wide) bug split-brain-metadata: argument --read-mode: invalid choice: 'eventual'"),
    (lambda t: t.replace("time_limit = 6", "time_limit = nan"),
     "[defaults]: time_limit: must be a finite number, got nan"),
    (lambda t: t.replace("[defaults]\ntime_limit = 6\nquick_time_limit = 4\nnemesis_interval = 2\n",
                         "defaults = 3\n"), "defaults must be a table"),
    (lambda t: t.replace("quick = true", "quick = 'yes'"), "quick must be true or false"),
    (lambda t: t.replace("gate = false", "gate = false\nreason = 'typo'"), "unknown key 'reason'"),
])
def test_test_all_refuses_a_damaged_expectations_file_when_it_loads_it(
        tmp_path: Path, backend: tuple[str, ...], damage, message: str) -> None:
    # Nested deep it crashed test-all (255); naming a bug the DB does not know, every run of that cell
    # failed after the matrix had started (255: no run carried out). Now: one line, 254, nothing run.
    f = tmp_path / "e.toml"
    f.write_text(damage(SMALL))
    code, err = _test_all(tmp_path, f, *backend)
    assert code == 254, err
    [line] = err.strip().splitlines()
    assert line.startswith(f"jepsen-py: --expectations: {f}") and message in line, line
    assert "Traceback" not in err and not (tmp_path / "store").exists()


def test_the_small_expectations_file_is_whole() -> None:
    import argparse

    from jepsen_py.commands import test_all

    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "e.toml"
        f.write_text(SMALL)
        cells = mx.load_expectations(f, quick=False)
        assert len(cells) == 6 and len(mx.load_expectations(f, quick=True)) == 3
        for backend in ("sim", "docker"):
            test_all.check_cells(cells, argparse.Namespace(expectations=f, backend=backend,
                                                           results_dir=Path(tmp), node_count=5))


# Damage drawn into SMALL: a value replaced by raw TOML text (deep arrays and tables, NaN and
# infinities, numbers past every bound, dates, wrong types, names nobody knows, flags run refuses,
# a newline in a name), a table renamed, a key added, the text torn, a byte that is not UTF-8.
_TOML_VALUES = st.one_of(
    st.one_of(st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),
              st.integers(1, 2000).map(lambda n: "{a = " * n + "1" + "}" * n)),
    st.sampled_from(["nan", "inf", "-inf", "+nan", "1e999", "9" * 5000, "-1", "0", "0.5", "86401", "1e9",
                     "true", "[]", "{}", '""', '"nosuch"', '["nosuch"]', "1979-05-27", "07:32:00",
                     '"partition-ring"', '"none,kill"', '"lease"', '["--time-limit", "3"]', '["--nosuch"]',
                     '["--rate", "nan"]', '["--db-option", "x=y"]', '["--help"]', '["--ssh-host", "n1=h"]',
                     "[1, 2]", '"a\\nb"', '["a\\nb"]', '"\\u0000"', "[[1]]", "{ x = 1 }"]),
    st.text(max_size=12).map(json.dumps),
)
_TABLES = st.sampled_from(["[bugs.no-such-bug]", '[bugs."a\\nb"]', '[bugs.""]', "[bugs]", "[nosuch]",
                           "[[bugs]]", "[[defaults]]", "[correct]", "[broad]", "[broad.bugs.nosuch]",
                           "[[broad.bugs]]"])


@st.composite
def damaged_expectations(draw: st.DrawFn) -> bytes:
    lines = SMALL.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["value", "value", "value", "table", "key"]))
        if how == "value" and " = " in lines[i]:
            lines[i] = lines[i].split(" = ", 1)[0] + " = " + draw(_TOML_VALUES)
        elif how == "table" and lines[i].startswith("["):
            lines[i] = draw(_TABLES)
        elif how == "key":
            key = draw(st.sampled_from(["x", "quick", "name", "bugs", "time_limit", "anomalies", "args"]))
            lines.insert(i, f"{key} = {draw(_TOML_VALUES)}")
    raw = ("\n".join(lines) + "\n").encode()
    if draw(st.integers(0, 4)) == 0:  # torn
        raw = raw[: draw(st.integers(0, len(raw)))]
    if draw(st.integers(0, 4)) == 0:  # a byte that is not UTF-8 text
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + raw[at:]
    return raw


class _Started(Exception):
    """The matrix was about to start: everything before it took the file."""


def _run_takes(cell: mx.Cell, backend: str) -> str | None:
    """None when `jepsen-py run` takes the cell's flags on `backend` (its parser, run's name checks and
    the backend's own), else what it says."""
    from jepsen_py import runflags
    from jepsen_py.cli import build_parser

    argv = mx.run_argv(cell, "check", Path("results"), 5, None)
    flags = [*argv[argv.index("run") + 1:], "--backend", backend]
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            ns = build_parser().parse_args(["run", *flags])
        runflags.spec_from_args(ns, versioned=False)
    except SystemExit:
        return f"run refuses {flags}"
    except BadInput as e:
        return str(e)
    return None


def _matrix_about_to_start(backend: str):
    def start(cells_or_planned: list, *_: object, **__: object) -> None:
        for c in cells_or_planned:
            cell = getattr(c, "cell", c)
            refused = _run_takes(cell, backend)
            assert refused is None, f"the matrix started with a cell every run of which fails: {refused}"
        raise _Started
    return start


_DEEP = SMALL.replace("[defaults]\n", "[defaults]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
_UNKNOWN_BUG = SMALL + "\n[bugs.no-such-bug]\nworkload = 'offsets'\nnemesis = 'none'\nanomalies = ['crash']\n"


@example(raw=_DEEP.encode(), quick=True, backend="sim")
@example(raw=_UNKNOWN_BUG.encode(), quick=True, backend="sim")
@example(raw=_UNKNOWN_BUG.encode(), quick=False, backend="docker")
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(raw=damaged_expectations(), quick=st.booleans(), backend=st.sampled_from(["sim", "docker"]))
def test_any_damage_to_expectations_is_refused_with_one_line_when_loaded(raw: bytes, quick: bool,
                                                                          backend: str) -> None:
    """`jepsen-py test-all` up to the start of its matrix (a stub stands in for the runs): a damaged
    file is refused with one BadInput line (254) naming it, or the matrix starts with cells whose
    every run `jepsen-py run` takes; never another exception, never a matrix of runs that all fail."""
    from unittest import mock

    from jepsen_py.cli import build_parser
    from jepsen_py.commands import test_all
    from jepsen_py.sim import matrix as smx

    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "e.toml"
        f.write_bytes(raw)
        args = build_parser().parse_args(
            ["test-all", "--backend", backend, *(["--no-sweep"] if backend == "sim" else []),
             *(["--quick"] if quick else []), "--no-progress", "--expectations", str(f),
             "--results-dir", str(Path(tmp) / "store")])
        start = _matrix_about_to_start(backend)
        with mock.patch.object(smx, "run_matrix", start), mock.patch.object(mx, "run_matrix", start):
            try:
                test_all.run(args)
            except BadInput as e:
                assert e.exit_code == 254, str(e)
                assert str(e).startswith((f"--expectations: {f}", f"--expectations: cannot read {f}")), str(e)
                assert "\n" not in str(e) and len(str(e)) < 1500, str(e)
            except _Started:
                pass
            else:
                raise AssertionError("the matrix neither started nor was refused")
