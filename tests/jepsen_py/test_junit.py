from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from jepsen_py.errors import EnvironmentProblem
from jepsen_py.junit import write_junit

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
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"linearizable", "staleness", "availability"}
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
