"""report.html of an explore, in real headless Chromium: the configurations tried as table rows, the
coverage curve drawn, the finding with its shrunk schedule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jepsen_py.cli import main
from jepsen_py.explore.report import REPORT_FILE, TrialRow, render
from tests.browser import chromium, chromium_available, screenshot, severe_console_errors, wait_rendered
from tests.conftest import require


@pytest.fixture(scope="module")
def browser() -> Any:
    require("chromium + chromedriver + selenium", chromium_available())
    with chromium() as driver:
        yield driver


_SEEN = """
    const gd = document.getElementById('coverage');
    return {rows: document.querySelectorAll('#trials tbody tr.trial').length,
            cells: Array.from(document.querySelectorAll('#trials tbody tr.trial td:nth-child(3)'))
                   .map(td => td.textContent),
            traces: (gd.data || []).map(t => ({name: t.name, n: t.x.length})),
            lines: document.querySelectorAll('#coverage .scatterlayer .trace').length,
            findings: Array.from(document.querySelectorAll('.finding h3')).map(h => h.textContent),
            schedule: Array.from(document.querySelectorAll('.finding pre')).map(p => p.textContent)};
"""


def test_a_simulated_explore_writes_a_report_a_browser_shows(browser: Any, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explore", "--bug", "split-brain-metadata", "--workload", "topics", "--nemesis", "none",
                 "--node-count", "3", "--time-limit", "4", "--budget", "30", "--shrink-budget", "5",
                 "--harden-budget", "0", "--seed", "3", "--results-dir", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    [out_dir] = list(tmp_path.glob("explore/*"))
    summary = json.loads((out_dir / "explore.json").read_text())
    page = out_dir / REPORT_FILE
    assert str(page) in out
    browser.get(page.as_uri())
    wait_rendered(browser)
    assert severe_console_errors(browser) == []
    seen = browser.execute_script(_SEEN)
    screenshot(browser, "explore-report")
    assert seen["rows"] == summary["schedules_tried"] >= 1
    assert all("topics" in c and "3 nodes" in c for c in seen["cells"])
    curve = next(t for t in seen["traces"] if t["name"] == "distinct features")
    assert curve["n"] == summary["schedules_tried"] and seen["lines"] >= 1
    assert len(seen["findings"]) == len(summary["findings"]) >= 1
    assert seen["findings"][0].startswith("finding 1: " + summary["findings"][0]["kind"])
    assert seen["schedule"] == ["(no fault ops)"] * len(summary["findings"])


def test_rows_errors_and_fault_ops_on_the_page(browser: Any, tmp_path: Path) -> None:
    rows = [TrialRow(n=1, at_s=20.5, config="register partition every 3s", wall_s=20.0, features=40, new=40),
            TrialRow(n=2, at_s=41.0, config="register kill every 2s", wall_s=20.0, features=40, new=0,
                     error="exit 255"),
            TrialRow(n=3, at_s=63.2, config="register partition <b>x</b>", wall_s=21.0, features=52, new=12,
                     anomalies={"stale-read": 2})]
    finding = {"kind": "stale-read", "kinds": {"stale-read": 2}, "found_after_s": 63.2, "schedules_tried": 3,
               "config": "register partition", "original": {"faults": 3}, "shrunk": {"faults": 1},
               "reproduction": "2/2", "schedule_file": "/x/schedule.json", "notes": [],
               "schedule_text": "   1.000s  start-partition one\n   4.000s  stop-partition"}
    page = tmp_path / "report.html"
    page.write_text(render({"backend": "docker", "seed": 1, "findings": [finding], "schedules_tried": 3},
                           rows))
    browser.get(page.as_uri())
    wait_rendered(browser)
    assert severe_console_errors(browser) == []
    seen = browser.execute_script(_SEEN)
    assert seen["rows"] == 3 and seen["cells"][2] == "register partition <b>x</b>"  # escaped, not markup
    assert {t["name"]: t["n"] for t in seen["traces"]} == {"distinct features": 3, "finding": 1}
    assert seen["schedule"] == ["   1.000s  start-partition one\n   4.000s  stop-partition"]
    text = browser.find_element("id", "finding-1").text
    assert "2/2" in text and "jepsen-py run --schedule /x/schedule.json" in text
    assert "error: exit 255" in browser.find_element("id", "trials").text
