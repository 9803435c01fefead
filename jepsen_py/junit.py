"""A JUnit XML report of a run, so any CI system can gate on it.

Every run is one <testsuite> named by its run id (`<test-name>/<timestamp>`), with a `verdict` case
that is always there, whatever happened, plus one case per checker. valid -> a passing case; invalid
-> <failure> with the anomalies as message and body; unknown -> <error>: a gate must not pass on "we
could not tell", and a run that ended before any checker ran (interrupted, failed in setup) is
exactly that. Several runs (`run --test-count N`) give one <testsuites> holding a suite per run.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jepsen_py.analysis import checker_tally
from jepsen_py.errors import EnvironmentProblem
from jepsen_py.files import create_file, make_dirs

MAX_BODY = 20_000
VERDICT_CASE = "verdict"


@dataclass(frozen=True)
class RunReport:
    """One run as the report shows it: its results.json and where it is stored."""

    results: dict[str, Any]
    run_dir: Path | None = None

    @property
    def test_name(self) -> str:
        return self.run_dir.parent.name if self.run_dir is not None else "jepsen-py"

    @property
    def run_id(self) -> str:
        """`<test-name>/<timestamp>`, as the store and the Parquet export name the run."""
        if self.run_dir is None:
            return self.test_name
        return f"{self.run_dir.parent.name}/{self.run_dir.name}"

    @property
    def duration_s(self) -> float:
        stats = self.results.get("stats") or {}
        d = stats.get("duration_s") if isinstance(stats, dict) else None
        return float(d) if isinstance(d, int | float) and not isinstance(d, bool) else 0.0


def _summary(name: str, result: dict[str, Any]) -> str:
    anomalies = [a for a in result.get("anomalies") or [] if isinstance(a, dict)]
    if anomalies:
        # Lead with an anomaly that fails the checker, not one it only reports.
        tally = checker_tally(result)
        first = next((a for a in anomalies if a.get("kind") in tally.failing), anomalies[0])
        total = max(tally.total, len(anomalies))
        more = f" (+{total - 1} more)" if total > 1 else ""
        return f"{name}: {first.get('kind', 'anomaly')}: {first.get('explanation', '')}{more}"
    for k in ("error", "reason", "problems", "unknown_reasons"):
        if result.get(k):
            return f"{name}: {k}: {result[k]}"
    return f"{name}: valid={result.get('valid')!r}"


def _body(result: dict[str, Any]) -> str:
    body = json.dumps(result, indent=1, default=str, sort_keys=True)
    if len(body) > MAX_BODY:
        body = body[:MAX_BODY] + "\n... (truncated; see results.json)"
    return body


def _verdict_message(results: dict[str, Any], checkers: dict[str, Any]) -> str:
    """Why the run as a whole is invalid or unknown, in one line."""
    valid = results.get("valid")
    if valid is False:
        bad = [n for n, r in checkers.items() if isinstance(r, dict) and r.get("valid") is False]
        return f"invalid: {', '.join(bad) or 'the merged verdict'} found anomalies"
    if results.get("error"):
        return f"unknown: {results['error']}"
    if not checkers:
        return "unknown: no checker results (the run ended before its history was checked)"
    unsure = [n for n, r in checkers.items() if not isinstance(r, dict) or r.get("valid") is not True]
    return f"unknown: {', '.join(unsure) or 'the merged verdict'} could not tell"


def _case(ts: ET.Element, classname: str, name: str, time_s: float, result: dict[str, Any],
          message: str) -> str:
    """Adds one test case; returns its outcome: pass, failure or error."""
    case = ET.SubElement(ts, "testcase", {"classname": classname, "name": name, "time": f"{time_s:.3f}"})
    if result.get("valid") is True:
        return "pass"
    tag = "failure" if result.get("valid") is False else "error"
    el = ET.SubElement(case, tag, {"message": message[:1000],
                                   "type": "invalid" if tag == "failure" else "unknown"})
    el.text = _body(result)
    return tag


def build_suite(run: RunReport) -> ET.Element:
    """The <testsuite> of one run: the verdict case first, then one case per checker."""
    results = run.results
    checkers: dict[str, Any] = results.get("checkers") or {}
    ts = ET.Element("testsuite", {"name": run.run_id, "time": f"{run.duration_s:.3f}"})
    props = ET.SubElement(ts, "properties")
    for k, v in (("test_name", run.test_name), ("run_id", run.run_id),
                 ("valid", json.dumps(results.get("valid")))):
        ET.SubElement(props, "property", {"name": k, "value": v})
    if run.run_dir is not None:
        ET.SubElement(props, "property", {"name": "run_dir", "value": str(run.run_dir)})
    # the classname carries test and run, so reports of several runs of one test stay apart
    classname = f"{run.test_name}.{run.run_id.rsplit('/', 1)[-1]}"
    verdict = {k: v for k, v in results.items() if k != "checkers"}
    if verdict.get("valid") not in (True, False):
        verdict["valid"] = "unknown"  # anything but a definite answer is an error, never a pass
    outcomes = [_case(ts, classname, VERDICT_CASE, run.duration_s, verdict,
                      _verdict_message(results, checkers))]
    for name, r in checkers.items():
        if not isinstance(r, dict):
            r = {"valid": "unknown", "error": f"checker returned {type(r).__name__}"}
        outcomes.append(_case(ts, classname, name, 0.0, r, _summary(name, r)))
    ts.set("tests", str(len(outcomes)))
    ts.set("failures", str(outcomes.count("failure")))
    ts.set("errors", str(outcomes.count("error")))
    ts.set("skipped", "0")
    # attribute order as JUnit readers print it: name, tests, failures, errors, skipped, time
    ts.attrib = {k: ts.attrib[k] for k in ("name", "tests", "failures", "errors", "skipped", "time")}
    return ts


def build_junit(runs: list[RunReport]) -> ET.ElementTree:
    """One run: its <testsuite>; several: a <testsuites> of them."""
    if len(runs) == 1:
        root = build_suite(runs[0])
    else:
        root = ET.Element("testsuites", {"name": "jepsen-py"})
        suites = [build_suite(r) for r in runs]
        for attr in ("tests", "failures", "errors"):
            root.set(attr, str(sum(int(s.get(attr, "0")) for s in suites)))
        root.set("time", f"{sum(r.duration_s for r in runs):.3f}")
        root.extend(suites)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(results: dict[str, Any], path: Path, *, run_dir: Path | None = None) -> None:
    """Writes the report of one run to `path`."""
    write_junit_runs([RunReport(results, None if run_dir is None else Path(run_dir))], path)


def write_junit_outcomes(outcomes: list[Any], path: Path) -> None:
    """The report of runs as run_test returned them (an interrupted one too): one suite per run."""
    write_junit_runs([RunReport(o.results, Path(o.run_dir)) for o in outcomes], path)


def write_junit_runs(runs: list[RunReport], path: Path) -> None:
    """Writes the report of several runs; an unwritable path is the user's to fix (EnvironmentProblem)."""
    path = Path(path)
    tree = build_junit(runs)
    try:
        make_dirs(path.parent)
        with os.fdopen(create_file(path), "wb") as f:
            tree.write(f, encoding="utf-8", xml_declaration=True)
    except OSError as e:
        raise EnvironmentProblem(f"--junit-xml {path}: cannot write ({e.strerror})") from None
