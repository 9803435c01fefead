"""The detection matrix: every seed bug run against the workload and nemesis that must catch it, and
the correct build against the same faults, with a verdict on each expectation.

Why a matrix and not one test per bug: a framework is worth the bugs it catches, *and* its silence on
a correct system; both are rates over repeated runs, never one lucky run. Each cell is a real
`jepsen-py run` in its own process (its own run directory in the store, its own Docker cluster), so
one cell's crash cannot take the others with it and every run stays inspectable afterwards.

Expectations come from a TOML file (jepsen_py/expectations.toml by default); see its header.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from jepsen_py import inputfile, store
from jepsen_py.errors import BadInput, quote
from jepsen_py.history import depth_ok
from jepsen_py.seeds import run_seed
from jepsen_py.spec import NEMESIS_INTERVAL, TIME_LIMIT

DEFAULT_EXPECTATIONS = Path(__file__).with_name("expectations.toml")
EXIT_NAMES = {0: "valid", 1: "invalid", 2: "unknown", 254: "bad-input", 255: "framework-failure"}
CORRECT = "correct"
TUNED = "tuned"  # the config of a bug's own cell; broad configs are named in the expectations


@dataclass(frozen=True)
class Cell:
    """One configuration of the matrix: a bug (or the correct build) under a workload and nemesis."""

    bug: str  # a bug name, or "correct"
    workload: str
    nemesis: str
    read_mode: str
    time_limit: float
    nemesis_interval: float
    anomalies: tuple[str, ...] = ()  # kinds that count as detecting the bug
    min_detection: float = 0.95
    args: tuple[str, ...] = ()  # extra `jepsen-py run` flags (e.g. a higher --rate)
    gate: bool = True  # False: measured and reported, but a miss does not fail the matrix
    config: str = TUNED  # "tuned" (the bug's own cell, or a correct-build run), else a broad config's name
    # where the expectations file says it ("FILE [bugs.NAME]"), for a refusal that names the entry
    where: str = field(default="", compare=False, repr=False)

    @property
    def label(self) -> str:
        if self.config != TUNED:
            return f"{self.bug}-{self.config}"
        mode = "" if self.read_mode == "read-index" else f"-{self.read_mode}"
        return f"{self.bug}-{self.workload}-{self.nemesis.replace(',', '+')}{mode}"


@dataclass
class RunRecord:
    """What one run of a cell produced, read back from its run directory."""

    cell: str
    iteration: int
    exit_code: int
    verdict: str
    wall_s: float
    run_dir: str | None = None
    anomaly_kinds: dict[str, int] = field(default_factory=dict)
    first_anomaly_s: float | None = None
    detected: bool = False
    error: str | None = None


@dataclass
class Row:
    """The summary of one cell over its runs."""

    cell: str
    bug: str
    workload: str
    nemesis: str
    read_mode: str
    time_limit: float
    runs: int
    valid: int
    invalid: int
    unknown: int
    errors: int
    anomalies: dict[str, int]
    detection_rate: float | None
    median_first_anomaly_s: float | None
    expectation: str
    passed: bool
    gate: bool = True
    config: str = TUNED


# An expectations file is kilobytes of tables nested five deep ([[broad]], its [broad.bugs.NAME],
# that table's anomalies list); far past these it is not one, and reading it whole or parsing it
# would spend memory or the parser's stack for nothing.
MAX_FILE_BYTES = 4 << 20
MAX_DEPTH = 8
# What a cell's table may say ([defaults], [bugs.NAME], [[correct]], [[broad]] and [broad.bugs.NAME]
# alike); any other key is a typo that would change nothing, silently.
CELL_KEYS = frozenset({"workload", "nemesis", "read_mode", "time_limit", "quick_time_limit",
                       "nemesis_interval", "quick_nemesis_interval", "anomalies", "min_detection", "args",
                       "gate"})
_TOP_KEYS = frozenset({"defaults", "bugs", "correct", "broad"})


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed expectations file, or one BadInput line naming it: only a regular file (a FIFO
    would make test-all wait forever), at most MAX_FILE_BYTES, UTF-8, TOML, at most MAX_DEPTH deep."""
    try:
        with inputfile.open_input(path, what="TOML file") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except BadInput as e:
        raise BadInput(f"--expectations: cannot read {e}") from None
    except OSError as e:
        raise BadInput(f"--expectations: cannot read {path}: {e.strerror or e}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise BadInput(f"--expectations: {path}: larger than {inputfile.size(MAX_FILE_BYTES)}, which no "
                       "expectations file is")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise BadInput(f"--expectations: {path}: not UTF-8 text (byte {e.start + 1})") from None
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"--expectations: {path} is not valid TOML: {' '.join(str(e).split())}") from None
    except RecursionError:
        raise BadInput(f"--expectations: {path}: nested deeper than an expectations file is "
                       f"(at most {MAX_DEPTH} levels)") from None
    except ValueError as e:  # an integer past Python's digit limit
        raise BadInput(f"--expectations: {path}: not usable TOML ({str(e).split(';')[0][:80]})") from None
    if not depth_ok(data, MAX_DEPTH):
        raise BadInput(f"--expectations: {path}: nested deeper than an expectations file is "
                       f"(at most {MAX_DEPTH} levels)")
    return data


def _keys(entry: dict[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        named = ", ".join(quote(k) for k in unknown[:3])
        if len(unknown) > 3:
            named += f" and {len(unknown) - 3} more"
        raise BadInput(f"{where}: unknown key {named} (known: {', '.join(sorted(allowed))})")


def _tables(v: Any, where: str, what: str, allowed: frozenset[str]) -> None:
    """`v` a list of tables ([[what]]) holding only `allowed` keys."""
    if not isinstance(v, list):
        raise BadInput(f"{where}: {what} must be an array of tables ([[{what}]])")
    for i, entry in enumerate(v):
        if not isinstance(entry, dict):
            raise BadInput(f"{where} [[{what}]] #{i + 1}: must be a table")
        _keys(entry, allowed, f"{where} [[{what}]] #{i + 1}")


def load_expectations(path: Path, quick: bool) -> list[Cell]:
    """The cells of the matrix: every bug's cell, then the correct build's (only `quick` ones when
    quick), then each broad config's cells: every bug and the correct build under that one config
    (skipped when quick unless the config says `quick = true`). The whole file is checked whichever
    cells `quick` keeps (a damaged entry is one BadInput line naming the file and entry when the file
    is loaded, never a failure of the runs after the matrix has started)."""
    data = read_toml(path)
    src = f"--expectations: {path}"
    _keys(data, _TOP_KEYS, src)
    given = data.get("defaults", {})
    if not isinstance(given, dict):
        raise BadInput(f"{src}: defaults must be a table ([defaults])")
    _keys(given, CELL_KEYS, f"{src} [defaults]")
    _seconds(given, f"{src} [defaults]")  # named where it is wrong, not at the first cell using it
    defaults = {"time_limit": 60, "quick_time_limit": 20, "nemesis_interval": 10,
                "quick_nemesis_interval": 5, "read_mode": "read-index", "min_detection": 0.95, **given}
    bugs = data.get("bugs", {})
    if not isinstance(bugs, dict) or not all(isinstance(v, dict) for v in bugs.values()):
        raise BadInput(f"{src}: bugs must hold one table per bug ([bugs.NAME])")
    cells: list[Cell] = []
    for bug, entry in bugs.items():
        _keys(entry, CELL_KEYS, f"{src} [bugs.{_name(bug)}]")
        cells.append(_cell(bug, {**defaults, **entry}, quick, f"{src} [bugs.{_name(bug)}]"))
    correct = data.get("correct", [])
    _tables(correct, src, "correct", CELL_KEYS | {"quick"})
    for i, entry in enumerate(correct):
        where = f"{src} [[correct]] #{i + 1}"
        cell = _cell(CORRECT, {**defaults, **entry}, quick, where)  # checked even when left out
        if _flag(entry, "quick", where) or not quick:
            cells.append(cell)
    cells += _broad_cells(data, defaults, quick, path)
    if not cells:
        raise BadInput(f"{src} names no bugs and no correct-build runs")
    return cells


def _name(key: str) -> str:
    """A table's name as the file gives it, for a message: quoted when it would not read as one
    (empty, long, or holding a newline: a refusal stays one line)."""
    return key if key and len(key) <= 60 and key.isprintable() and " " not in key else quote(key)


def _flag(entry: dict[str, Any], key: str, where: str) -> bool:
    v = entry.get(key, False)
    if not isinstance(v, bool):
        raise BadInput(f"{where}: {key} must be true or false, got {quote(v)}")
    return v


def _broad_cells(data: dict[str, Any], defaults: dict[str, Any], quick: bool, path: Path) -> list[Cell]:
    """A broad config is what a user runs without knowing where the bug is: one workload, nemesis and
    schedule shared by every bug. Each bug counts its own `anomalies` unless `[broad.bugs.NAME]`
    overrides them, its gate or its rate; the correct build must be valid in every run."""
    bugs = data.get("bugs") or {}
    broad = data.get("broad", [])
    src = f"--expectations: {path}"
    if not isinstance(broad, list):
        raise BadInput(f"{src}: broad must be an array of tables ([[broad]])")
    cells: list[Cell] = []
    seen: set[str] = set()
    for i, entry in enumerate(broad):
        where = f"{src} [[broad]] #{i + 1}"
        if not isinstance(entry, dict):
            raise BadInput(f"{where}: must be a table")
        _keys(entry, CELL_KEYS | {"name", "bugs", "quick"}, where)
        _seconds(entry, where)
        name = entry.get("name")
        if not isinstance(name, str) or not name or not all(ch.isalnum() or ch == "-" for ch in name):
            raise BadInput(f"{where}: name must be a non-empty word (letters, digits, '-')")
        if name in (TUNED, CORRECT) or name in seen or name in bugs:
            raise BadInput(f"{where}: name {name!r} is taken (a bug, 'correct', 'tuned' or another config)")
        seen.add(name)
        keep = _flag(entry, "quick", where) or not quick  # the cells are checked either way
        overrides = entry.get("bugs") or {}
        if not isinstance(overrides, dict) or not all(isinstance(v, dict) for v in overrides.values()):
            raise BadInput(f"{where}: bugs must hold one table per bug ([broad.bugs.NAME])")
        unknown = sorted(set(overrides) - set(bugs))
        if unknown:
            raise BadInput(f"{where}: [broad.bugs] names {', '.join(map(_name, unknown[:5]))}, not in [bugs]")
        for bug, override in overrides.items():
            _keys(override, CELL_KEYS, f"{where} ({name}) [broad.bugs.{_name(bug)}]")
        shared = {k: v for k, v in entry.items() if k not in ("name", "bugs", "quick")}
        mine: list[Cell] = []
        for bug, bug_entry in bugs.items():
            own = {"anomalies": bug_entry.get("anomalies", [])} if isinstance(bug_entry, dict) else {}
            e = {**defaults, **shared, **own, **overrides.get(bug, {})}
            mine.append(replace(_cell(bug, e, quick, f"{where} ({name}) bug {_name(bug)}"), config=name))
        mine.append(replace(_cell(CORRECT, {**defaults, **shared}, quick, f"{where} ({name}) correct"),
                            config=name))
        if keep:
            cells += mine
    return cells


# The single-valued `run` flags run_argv sets for every cell, and where a cell says them instead.
_CELL_FLAGS = {"--workload": "workload", "-w": "workload", "--time-limit": "time_limit",
               "--nemesis-interval": "nemesis_interval", "--read-mode": "read_mode",
               "--node-count": "test-all --node-count", "--results-dir": "test-all --results-dir",
               "--name": "test-all --name", "--seed": "test-all --seed"}


def _text(e: dict[str, Any], key: str, where: str) -> str:
    v = e.get(key)
    if not isinstance(v, str) or not v:
        raise BadInput(f"{where}: {key} must be a string")
    return v


# Each duration a table may give, and the `run` flag whose bound it has.
_SECONDS = {"time_limit": TIME_LIMIT, "quick_time_limit": TIME_LIMIT, "nemesis_interval": NEMESIS_INTERVAL,
            "quick_nemesis_interval": NEMESIS_INTERVAL}


def _seconds(e: dict[str, Any], where: str) -> dict[str, float]:
    """The durations `e` gives, each a finite number within its flag's bound (BadInput naming it)."""
    return {k: float(bound.check(f"{where}: {k}", e[k])) for k, bound in _SECONDS.items() if k in e}


def _cell(bug: str, e: dict[str, Any], quick: bool, where: str) -> Cell:
    """One cell from its merged table; every value is checked, the ones `quick` does not use too
    (time_limit and quick_time_limit, nemesis_interval and quick_nemesis_interval)."""
    workload, nemesis, read_mode = (_text(e, k, where) for k in ("workload", "nemesis", "read_mode"))
    anomalies = e.get("anomalies", [])
    if not isinstance(anomalies, list) or not all(isinstance(a, str) and a for a in anomalies) or (
            bug != CORRECT and not anomalies):
        raise BadInput(f"{where}: anomalies must be a non-empty list of anomaly kinds")
    args = e.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise BadInput(f"{where}: args must be a list of strings (extra jepsen-py run flags)")
    for a in args:  # `run` refuses a single-valued flag given twice: the cell's own would be repeated
        flag = a.split("=", 1)[0]
        if flag in _CELL_FLAGS:
            raise BadInput(f"{where}: args: {flag} is set by the cell itself ({_CELL_FLAGS[flag]})")
    gate = e.get("gate", True)
    if not isinstance(gate, bool):
        raise BadInput(f"{where}: gate must be true or false")
    rate = e.get("min_detection", 0.95)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
        raise BadInput(f"{where}: min_detection must be in [0, 1], got {quote(rate)}")
    seconds = _seconds(e, where)
    return Cell(
        bug=bug,
        workload=workload,
        nemesis=nemesis,
        read_mode=read_mode,
        time_limit=seconds["quick_time_limit" if quick else "time_limit"],
        nemesis_interval=seconds["quick_nemesis_interval" if quick else "nemesis_interval"],
        anomalies=tuple(anomalies),
        min_detection=float(rate),
        args=tuple(args),
        gate=gate,
        where=where,
    )


def select(cells: list[Cell], bugs: Iterable[str] | None) -> list[Cell]:
    """Only the cells of the named bugs ("correct" names the correct build) and configs ("tuned", or a
    broad config's name): `zombie-leader,broad` is that bug's broad cell, `broad` every broad cell."""
    if not bugs:
        return cells
    wanted = set(bugs)
    known_bugs = {c.bug for c in cells}
    known_configs = {c.config for c in cells} | {TUNED}
    unknown = sorted(wanted - known_bugs - known_configs)
    if unknown:
        raise BadInput(f"--bugs: {', '.join(unknown)} not in the expectations "
                       f"(known: {', '.join(sorted(known_bugs | known_configs))})")
    names, configs = wanted & known_bugs, wanted & known_configs
    return [c for c in cells if (not names or c.bug in names) and (not configs or c.config in configs)]


def run_argv(cell: Cell, name: str, results_dir: Path, node_count: int, seed: int | None) -> list[str]:
    argv = [sys.executable, "-m", "jepsen_py.cli", "run", "--workload", cell.workload,
            "--nemesis", cell.nemesis, "--time-limit", f"{cell.time_limit:g}",
            "--nemesis-interval", f"{cell.nemesis_interval:g}", "--read-mode", cell.read_mode,
            "--node-count", str(node_count), "--results-dir", str(results_dir), "--name", name,
            "--no-progress"]
    if cell.bug != CORRECT:
        argv += ["--bug", cell.bug]
    if seed is not None:
        argv += ["--seed", str(seed)]
    return [*argv, *cell.args]


def anomaly_kinds(results: dict[str, Any]) -> dict[str, int]:
    """Counts of anomaly kinds over every checker of a results.json."""
    out: dict[str, int] = {}
    for res in (results.get("checkers") or {}).values():
        if not isinstance(res, dict):
            continue
        for a in res.get("anomalies") or []:
            if isinstance(a, dict):
                k = str(a.get("kind", "anomaly"))
                out[k] = out.get(k, 0) + 1
    return out


def first_anomaly_s(run_dir: Path, results: dict[str, Any]) -> float | None:
    """Seconds from the start of the test to the earliest client op named by any anomaly."""
    indices: set[int] = set()
    for res in (results.get("checkers") or {}).values():
        if isinstance(res, dict):
            for a in res.get("anomalies") or []:
                if isinstance(a, dict):
                    indices.update(i for i in a.get("ops") or [] if isinstance(i, int))
    if not indices:
        return None
    best: int | None = None
    try:
        with open(run_dir / "history.jsonl", encoding="utf-8") as f:
            for line in f:
                try:
                    op = json.loads(line)
                except ValueError:
                    continue
                if op.get("index") in indices and isinstance(op.get("time"), int):
                    best = op["time"] if best is None else min(best, op["time"])
    except OSError:
        return None
    return None if best is None else round(best / 1e9, 3)


def run_cell(cell: Cell, iteration: int, results_dir: Path, matrix: str, node_count: int,
             seed: int | None = None) -> RunRecord:
    """Runs one cell once, for real, and reads back its verdict and anomalies."""
    name = f"{matrix}-{cell.label}"
    argv = run_argv(cell, name, results_dir, node_count, seed)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=cell.time_limit * 4 + 600, check=False)
        code, stderr = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired:
        code, stderr = 255, "the run did not finish in time"
    rec = RunRecord(cell=cell.label, iteration=iteration, exit_code=code,
                    verdict=EXIT_NAMES.get(code, str(code)), wall_s=round(time.monotonic() - t0, 1))
    run_dir = (results_dir / name / "latest").resolve()
    results_path = run_dir / "results.json"
    if code in (254, 255) or not results_path.exists():
        lines = stderr.strip().splitlines()
        rec.error = (lines[-1] if lines else "no results.json")[:300]
        return rec
    results = json.loads(results_path.read_text())
    rec.run_dir = str(run_dir)
    rec.anomaly_kinds = anomaly_kinds(results)
    rec.first_anomaly_s = first_anomaly_s(run_dir, results)
    rec.detected = code == 1 and any(k in rec.anomaly_kinds for k in cell.anomalies)
    return rec


def summarize(cell: Cell, records: list[RunRecord]) -> Row:
    """One row of the table, and whether the cell met its expectation."""
    runs = len(records)
    count = {v: sum(1 for r in records if r.verdict == v) for v in ("valid", "invalid", "unknown")}
    errors = runs - sum(count.values())
    kinds: dict[str, int] = {}
    for r in records:
        for k, n in r.anomaly_kinds.items():
            kinds[k] = kinds.get(k, 0) + n
    firsts = [r.first_anomaly_s for r in records if r.first_anomaly_s is not None
              and (cell.bug == CORRECT or r.detected)]
    median = round(statistics.median(firsts), 3) if firsts else None
    if cell.bug == CORRECT:
        rate = None
        passed = count["invalid"] == 0 and errors == 0
        expectation = "valid in every run"
    else:
        detected = sum(1 for r in records if r.detected)
        rate = round(detected / runs, 3) if runs else 0.0
        passed = runs > 0 and rate >= cell.min_detection
        expectation = f">= {cell.min_detection:.0%} detected ({'/'.join(cell.anomalies)})"
        if not cell.gate:
            expectation += " [reported, not gating]"
    return Row(cell=cell.label, bug=cell.bug, workload=cell.workload, nemesis=cell.nemesis,
               read_mode=cell.read_mode, time_limit=cell.time_limit, runs=runs, valid=count["valid"],
               invalid=count["invalid"], unknown=count["unknown"], errors=errors, anomalies=kinds,
               detection_rate=rate, median_first_anomaly_s=median, expectation=expectation, passed=passed,
               gate=cell.gate, config=cell.config)


def run_matrix(cells: list[Cell], *, test_count: int, results_dir: Path, matrix: str, node_count: int,
               seed: int | None = None, parallel: int = 1,
               on_run: Callable[[Cell, int, RunRecord | None], None] = lambda c, i, r: None,
               on_tally: Callable[[list[Row], list[RunRecord]], None] | None = None,
               ) -> tuple[list[Row], list[RunRecord]]:
    """Runs every cell test_count times; on_run is told before (record None) and after each run,
    which is how the progress bar moves.

    With parallel > 1, that many runs go at once, each its own cluster. Two runs of one cell never
    overlap: a run is found afterwards through its test's `latest` link, which a concurrent run of
    the same test would move. Runs are handed out iteration by iteration, so an interrupted matrix
    has covered every cell evenly; on_tally gets the table so far after every run (test-all keeps
    summary.json current with it, so a matrix stopped early still has its numbers).
    """
    if parallel < 1:
        raise BadInput(f"--parallel must be at least 1, got {parallel}")
    jobs = [(cell, i) for i in range(test_count) for cell in cells]
    done: dict[tuple[Cell, int], RunRecord] = {}
    busy: set[str] = set()
    cond = threading.Condition()

    def take() -> tuple[Cell, int] | None:
        with cond:
            while True:
                if not jobs:
                    return None
                for k, (cell, i) in enumerate(jobs):
                    if cell.label not in busy:
                        busy.add(cell.label)
                        del jobs[k]
                        return cell, i
                cond.wait()

    def worker() -> None:
        while (job := take()) is not None:
            cell, i = job
            on_run(cell, i, None)
            try:
                rec = run_cell(cell, i, results_dir, matrix, node_count,
                               None if seed is None else run_seed(seed, i))
            except Exception as e:  # the controller itself broke: record it, keep the matrix going
                rec = RunRecord(cell=cell.label, iteration=i, exit_code=255, verdict="framework-failure",
                                wall_s=0.0, error=f"{type(e).__name__}: {e}"[:300])
            with cond:
                done[(cell, i)] = rec  # by cell: two cells may share a label (other args)
                busy.discard(cell.label)
                cond.notify_all()
                if on_tally is not None:
                    on_tally(*tally())
            on_run(cell, i, rec)

    def tally() -> tuple[list[Row], list[RunRecord]]:
        rows: list[Row] = []
        records: list[RunRecord] = []
        for cell in cells:
            mine = [done[(cell, i)] for i in range(test_count) if (cell, i) in done]
            records.extend(mine)
            rows.append(summarize(cell, mine))
        return rows, records

    threads = [threading.Thread(target=worker, name=f"test-all-{n}", daemon=True)
               for n in range(min(parallel, len(jobs)) or 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tally()


def write_summary(path: Path, *, matrix: str, quick: bool, test_count: int, rows: list[Row],
                  records: list[RunRecord], wall_s: float, complete: bool = True) -> dict[str, Any]:
    correct = [r for r in rows if r.bug == CORRECT]
    summary = {
        "matrix": matrix,
        "quick": quick,
        "test_count": test_count,
        "wall_s": round(wall_s, 1),
        "complete": complete,  # false while the matrix is still running (or was stopped)
        "passed": all(r.passed for r in rows if r.gate),
        "correct_build": {"runs": sum(r.runs for r in correct),
                          "false_positives": sum(r.invalid for r in correct),
                          "unknown": sum(r.unknown for r in correct)},
        "rows": [asdict(r) for r in rows],
        "runs": [asdict(r) for r in records],
    }
    store.make_dirs(path.parent)
    store.write_json(path, summary)  # temp file, rename, directory fsync'd
    return summary


__all__ = ["CORRECT", "DEFAULT_EXPECTATIONS", "TUNED", "Cell", "Row", "RunRecord", "load_expectations",
           "run_cell", "run_matrix", "select", "summarize", "write_summary"]
