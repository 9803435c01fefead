from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from jepsen_py.errors import EnvironmentProblem
from jepsen_py.junit import RunReport, write_junit, write_junit_runs

RESULTS = {
    "valid": False,
    "checkers": {
        "linearizable": {"valid": True, "keys_checked": 3},
        "staleness": {"valid": False, "stale_count": 2, "anomalies": [
            {"kind": "stale-read", "ops": [4, 5], "explanation": "n1 (leader, term 1) returned 1 <&>"},
            {"kind": "stale-read", "ops": [8, 9], "explanation": "again"}]},
        "availability": {"valid": "unknown", "reason": "no client ops"},
    },
}


def test_one_case_per_checker_with_failures_and_errors(tmp_path: Path):
    out = tmp_path / "ci" / "jepsen.xml"
    write_junit(RESULTS, out)
    root = ET.parse(out).getroot()
    assert root.tag == "testsuite"
    # the verdict case (invalid: a failure) plus one case per checker
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "1")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"verdict", "linearizable", "staleness", "availability"}
    (verdict,) = cases["verdict"].findall("failure")
    assert verdict.get("message") == "invalid: staleness found anomalies"
    assert list(cases["linearizable"]) == []
    (fail,) = cases["staleness"].findall("failure")
    assert fail.get("message") == "staleness: stale-read: n1 (leader, term 1) returned 1 <&> (+1 more)"
    assert '"stale_count": 2' in fail.text
    (err,) = cases["availability"].findall("error")
    assert "no client ops" in err.get("message")


def test_unwritable_path_is_one_clear_error(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(EnvironmentProblem, match="--junit-xml"):
        write_junit(RESULTS, blocker / "out.xml")


def _run_dir(tmp_path: Path, test: str, stamp: str, results: dict) -> Path:
    d = tmp_path / "results" / test / stamp
    d.mkdir(parents=True)
    (d / "results.json").write_text(json.dumps(results))
    return d


def test_a_run_with_no_checker_results_is_an_error_never_a_pass(tmp_path: Path):
    """An interrupted run (or one that failed before check) has nothing to pass: one error case."""
    d = _run_dir(tmp_path, "offsets-partition", "20261123T091500.123", {"valid": "unknown", "checkers": {}})
    out = tmp_path / "ci.xml"
    write_junit(json.loads((d / "results.json").read_text()), out, run_dir=d)
    root = ET.parse(out).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("1", "0", "1")
    (case,) = root.iter("testcase")
    assert case.get("name") == "verdict"
    (err,) = case.findall("error")
    assert err.get("type") == "unknown"
    assert "no checker results" in err.get("message")


def test_suite_and_classname_name_the_test_and_the_run_and_time_is_the_duration(tmp_path: Path):
    runs = []
    for stamp, valid in (("20261123T091500.123", True), ("20261123T091600.456", "unknown")):
        results = {"valid": valid, "checkers": {"linearizable": {"valid": valid}},
                   "stats": {"duration_s": 12.5}}
        if valid != True:  # noqa: E712 - "unknown" is not True
            results["error"] = "interrupted"
        runs.append(RunReport(results, _run_dir(tmp_path, "offsets-none", stamp, results)))
    out = tmp_path / "many.xml"
    write_junit_runs(runs, out)
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "0", "2")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["offsets-none/20261123T091500.123",
                                               "offsets-none/20261123T091600.456"]
    assert {s.get("time") for s in suites} == {"12.500"}
    classnames = [{c.get("classname") for c in s.iter("testcase")} for s in suites]
    assert classnames == [{"offsets-none.20261123T091500.123"}, {"offsets-none.20261123T091600.456"}]
    props = {p.get("name"): p.get("value") for p in suites[1].iter("property")}
    assert props["test_name"] == "offsets-none" and props["run_id"] == "offsets-none/20261123T091600.456"
    (err,) = next(c for c in suites[1].iter("testcase") if c.get("name") == "verdict").findall("error")
    assert err.get("message") == "unknown: interrupted"


def test_the_message_leads_with_a_failing_anomaly_and_counts_past_the_listed_ones(tmp_path: Path):
    results = {"valid": False, "checkers": {"set": {
        "valid": False, "anomaly_counts": {"stale-read": 150, "lost": 1}, "failing_kinds": ["lost"],
        "reported_kinds": ["stale-read"],
        "anomalies": [{"kind": "stale-read", "ops": [1], "explanation": "late"},
                      {"kind": "lost", "ops": [9], "explanation": "gone"}]}}}
    out = tmp_path / "j.xml"
    write_junit(results, out)
    cases = {c.get("name"): c for c in ET.parse(out).getroot().iter("testcase")}
    (fail,) = cases["set"].findall("failure")
    assert fail.get("message") == "set: lost: gone (+150 more)"
