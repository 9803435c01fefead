"""A JUnit XML report of a run: one test case per checker, so any CI system can gate on it.

valid -> a passing case; invalid -> <failure> with the checker's anomalies as the message and body;
unknown -> <error>: a release gate must not pass on "we could not tell".
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from jepsen_py.errors import EnvironmentProblem

MAX_BODY = 20_000


def _summary(name: str, result: dict[str, Any]) -> str:
    anomalies = result.get("anomalies") or []
    if anomalies:
        first = anomalies[0]
        more = f" (+{len(anomalies) - 1} more)" if len(anomalies) > 1 else ""
        return f"{name}: {first.get('kind', 'anomaly')}: {first.get('explanation', '')}{more}"
    for k in ("error", "reason", "problems", "unknown_reasons"):
        if result.get(k):
            return f"{name}: {k}: {result[k]}"
    return f"{name}: valid={result.get('valid')!r}"


def build_junit(results: dict[str, Any], *, suite: str = "jepsen-py", run_dir: str | None = None
                ) -> ET.ElementTree:
    """The XML tree for `results` ({"valid": ..., "checkers": {name: result}})."""
    checkers: dict[str, Any] = results.get("checkers") or {}
    failures = sum(1 for r in checkers.values() if isinstance(r, dict) and r.get("valid") is False)
    errors = sum(1 for r in checkers.values()
                 if not isinstance(r, dict) or r.get("valid") not in (True, False))
    ts = ET.Element("testsuite", {
        "name": suite, "tests": str(len(checkers)), "failures": str(failures), "errors": str(errors),
        "skipped": "0", "time": str(results.get("time_s", 0)),
    })
    props = ET.SubElement(ts, "properties")
    ET.SubElement(props, "property", {"name": "valid", "value": json.dumps(results.get("valid"))})
    if run_dir:
        ET.SubElement(props, "property", {"name": "run_dir", "value": run_dir})
    for name, r in checkers.items():
        case = ET.SubElement(ts, "testcase", {"classname": suite, "name": name, "time": "0"})
        if not isinstance(r, dict):
            r = {"valid": "unknown", "error": f"checker returned {type(r).__name__}"}
        body = json.dumps(r, indent=1, default=str, sort_keys=True)
        if len(body) > MAX_BODY:
            body = body[:MAX_BODY] + "\n... (truncated; see results.json)"
        if r.get("valid") is True:
            continue
        tag = "failure" if r.get("valid") is False else "error"
        el = ET.SubElement(case, tag, {
            "message": _summary(name, r)[:1000],
            "type": "invalid" if tag == "failure" else "unknown",
        })
        el.text = body
    ET.indent(ts)
    return ET.ElementTree(ts)


def write_junit(results: dict[str, Any], path: Path) -> None:
    """Writes the report to `path`; an unwritable path is the user's to fix (EnvironmentProblem)."""
    path = Path(path)
    tree = build_junit(results, run_dir=results.get("run_dir"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tree.write(path, encoding="utf-8", xml_declaration=True)
    except OSError as e:
        raise EnvironmentProblem(f"--junit-xml {path}: cannot write ({e.strerror})") from None
