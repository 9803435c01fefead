"""The Porcupine-style failure view, fed by the real linearizable checker, seen in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.checkers.linearizable import check, get_model
from jepsen_py.checkers.pictures.linearizability import failure_view, failures_in, render
from jepsen_py.checkers.pictures.runview import load_run
from jepsen_py.checkers.pictures.timeline import render as render_timeline

from jepsen_py.history import HistoryWriter, Op, read_history
from tests.browser import chromium, chromium_available, screenshot, severe_console_errors, wait_rendered
from tests.conftest import require

MS = 1_000_000

# A register x on one node. p0 writes 1, p1 writes 2, p3 reads 2; then p2 reads 1, although
# write 2 completed before that read began; p4's write 3 times out (info) and may land anywhere.
EVENTS = [
    (0, "invoke", 0, "write", 1), (10, "ok", 0, "write", 1),
    (20, "invoke", 1, "write", 2), (30, "ok", 1, "write", 2),
    (25, "invoke", 3, "read", None), (35, "ok", 3, "read", 2),
    (40, "invoke", 2, "read", None), (50, "ok", 2, "read", 1),
    (42, "invoke", 4, "write", 3), (70, "info", 4, "write", 3),
]


def _run(root: Path, *, tamper: bool = False) -> Path:
    d = root / "register" / "20261122T040000.000"
    d.mkdir(parents=True)
    with HistoryWriter(d / "history.jsonl") as w:
        for t, typ, p, f, v in sorted(EVENTS):
            w.append(Op(0, t * MS, typ, p, f, "x", v, "n1"))
    res = check(read_history(d / "history.jsonl"), get_model("register"))
    if tamper:  # a state the replay cannot reach: the page must say so, not guess
        res["failures"][0]["state_before"] = 99
    (d / "results.json").write_text(json.dumps({"valid": res["valid"], "checkers": {"linearizable": res}}))
    (d / "test.json").write_text(json.dumps({"name": "register", "workload": "register"}))
    return d


@pytest.fixture(scope="module")
def browser() -> Any:
    require("chromium + chromedriver + selenium", chromium_available())
    with chromium(1400, 1100) as driver:
        yield driver


def test_failure_view_as_seen(browser: Any, tmp_path: Path) -> None:
    page = render(_run(tmp_path))
    assert page is not None and page.name == "linearizability.html"
    browser.get(page.as_uri())
    wait_rendered(browser)
    assert severe_console_errors(browser) == []
    seen = browser.execute_script("""
        const gd = document.getElementById('fplot-0');
        const q = s => Array.from(document.querySelectorAll(s)).map(e => e.textContent);
        const tr = n => gd.data.find(t => t.name === n);
        return {blockedBox: document.querySelector('.blocked').textContent,
                stateBefore: document.getElementById('state-before-0').textContent,
                legend: q('#fplot-0 .legendtext'),
                blockedBars: tr('cannot be linearized (op)').x.length,
                blockedColor: tr('cannot be linearized').line.color,
                path: tr('linearization order').text,
                labels: q('#fplot-0 .textpoint text'),
                arrow: q('#fplot-0 .annotation-text'),
                cells: q('table td'), lanes: q('#fplot-0 .ytick text')};""")
    assert "op #6" in seen["blockedBox"] and "read 1 by process 2" in seen["blockedBox"]
    assert seen["stateBefore"] == "3"
    assert seen["blockedBars"] == 1 and seen["blockedColor"] == "#c8312e"
    assert {"linearized", "cannot be linearized", "linearization order"} <= set(seen["legend"])
    assert seen["path"] == ["1", "2", "3", "4"] and seen["labels"] == ["1", "2", "3", "4"]
    assert any("cannot be placed; state is 3" in a for a in seen["arrow"])
    assert "read 1 but the register holds 3" in seen["cells"]
    assert set(seen["lanes"]) == {"p0", "p1", "p2", "p3", "p4"}
    # the state after each step of the longest linearization: write 1, write 2, read 2, write 3
    browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    rows = browser.execute_script("""
        const t = document.querySelectorAll('.failure table')[1];
        return Array.from(t.querySelectorAll('tr')).slice(1).map(r =>
            Array.from(r.querySelectorAll('td')).map(c => c.textContent));""")
    assert [(r[1], r[3], r[5]) for r in rows] == [
        ("#0", "write", "1"), ("#2", "write", "2"), ("#3", "read", "2"), ("#7", "write", "3")]
    screenshot(browser, "linearizability")
    assert severe_console_errors(browser) == []


def test_states_not_guessed_when_replay_disagrees(tmp_path: Path) -> None:
    d = _run(tmp_path, tamper=True)
    view = load_run(d)
    (checker, res, failure), = failures_in(view.results)
    by_index = {p.invoke.index: p for p in view.client_pairs}
    fv = failure_view(view, checker, res, failure, by_index)
    assert fv["states_known"] is False
    assert all(s["state"] is None for s in fv["steps"])
    page = render(d)
    assert page is not None and "could not be reconstructed" in page.read_text()


def test_timeline_links_to_the_failure_view(tmp_path: Path) -> None:
    d = _run(tmp_path)
    assert 'href="linearizability.html"' in render_timeline(d).read_text()


def test_no_failures_no_page(tmp_path: Path) -> None:
    d = tmp_path / "ok" / "20261122T040000.000"
    d.mkdir(parents=True)
    with HistoryWriter(d / "history.jsonl") as w:
        w.append(Op(0, 0, "invoke", 0, "write", "x", 1))
        w.append(Op(0, MS, "ok", 0, "write", "x", 1))
    res = check(read_history(d / "history.jsonl"), get_model("register"))
    (d / "results.json").write_text(json.dumps({"valid": True, "checkers": {"linearizable": res}}))
    assert render(d) is None
    assert not (d / "linearizability.html").exists()


def test_fast_path_only_failure_still_shows_its_window(tmp_path: Path) -> None:
    """When the detailed search ran out of budget the checker reports no linearization and no state,
    only the fast path's window: the page draws those ops and the blamed one, and guesses nothing."""
    d = _run(tmp_path)
    res = json.loads((d / "results.json").read_text())
    f = res["checkers"]["linearizable"]["failures"][0]
    f.update(longest_linearization=[], state_before=None, candidates=[], window=[0, 2, 6])
    (d / "results.json").write_text(json.dumps(res))
    view = load_run(d)
    by_index = {p.invoke.index: p for p in view.client_pairs}
    fv = failure_view(view, "linearizable", res["checkers"]["linearizable"], f, by_index)
    roles = [(b["index"], b["role"]) for b in fv["bars"]]
    assert roles == [(0, "concurrent"), (2, "concurrent"), (6, "blocked")]
    assert fv["steps"] == [] and all(b["state"] is None for b in fv["bars"])
    assert render(d) is not None
