"""isolation.html: the Elle checker's dependency cycles drawn from a stored run, seen in headless
Chromium; and the timeline highlighting the cycle's transactions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.checkers.elle import check
from jepsen_py.checkers.pictures.isolation import render
from jepsen_py.checkers.pictures.runview import load_run
from jepsen_py.checkers.pictures.timeline import render as render_timeline
from jepsen_py.checkers.pictures.timeline import timeline_data

from jepsen_py.cli import main
from jepsen_py.history import HistoryWriter, Op, read_history
from tests.browser import chromium, chromium_available, screenshot, severe_console_errors, wait_rendered
from tests.checkers.elle.build import pattern, serial_history
from tests.conftest import require

MS = 1_000_000


def _run(root: Path, kinds: list[tuple[str, str]], workload: str = "list-append",
         models: tuple[str, ...] = ("serializable",)) -> tuple[Path, dict[str, Any]]:
    """A stored run whose history holds the given anomaly patterns ((kind, key tag) pairs, each on
    its own processes), checked by the real Elle checker."""
    ops: list[Op] = []
    for n, (kind, tag) in enumerate(kinds):
        ops += pattern(kind, workload, tag=tag, p0=1000 + 100 * n).ops
    d = root / "txn" / "20261126T090000.000"
    d.mkdir(parents=True)
    with HistoryWriter(d / "history.jsonl") as w:
        for i, o in enumerate(ops):
            w.append(Op(i, i * 10 * MS, o.type, o.process, o.f, o.key, o.value, "n1"))
    res = check(read_history(d / "history.jsonl"), workload, list(models))
    (d / "results.json").write_text(json.dumps({"valid": res["valid"], "checkers": {"elle": res}}))
    (d / "test.json").write_text(json.dumps({"name": "txn", "workload": workload}))
    return d, res


@pytest.fixture(scope="module")
def browser() -> Any:
    require("chromium + chromedriver + selenium", chromium_available())
    with chromium(1400, 1100) as driver:
        yield driver


def _open(driver: Any, page: Path) -> None:
    driver.get("about:blank")
    driver.get_log("browser")
    driver.get(page.as_uri())
    wait_rendered(driver)


def test_the_cycle_is_drawn_as_seen(browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d, res = _run(tmp_path, [("G-single-item", "a"), ("G2-item", "b"), ("G1a", "c"),
                                    ("G-nonadjacent-item", "d")])
    assert res["valid"] is False
    assert {"G-single-item", "G2-item", "G1a", "G-nonadjacent-item"} <= set(res["anomaly_types"])
    # `jepsen-py timeline RUN_DIR` redraws it with the other pages
    assert main(["timeline", str(d)]) == 0
    assert str(d / "isolation.html") in capsys.readouterr().out.split()
    _open(browser, d / "isolation.html")
    assert severe_console_errors(browser) == []
    seen = browser.execute_script("""
        const q = (root, s) => Array.from(root.querySelectorAll(s));
        return q(document, 'svg.cycle').map(svg => ({
          kind: svg.closest('.anomaly').querySelector('.kind').textContent,
          nodes: q(svg, 'g.txn').map(g => g.querySelector('.txn-name').textContent),
          nodeBoxes: q(svg, 'g.txn rect').map(r => r.getBoundingClientRect().width),
          labels: q(svg, 'g.edge .edge-label').map(t => t.textContent),
          labelBoxes: q(svg, 'g.edge .edge-label').map(t => t.getBoundingClientRect().width),
          edgeLengths: q(svg, 'g.edge path').map(p => p.getTotalLength()),
          whys: q(svg, 'g.edge title').map(t => t.textContent),
          ends: q(svg, 'g.edge').map(g => [g.dataset.from, g.dataset.to]),
          rows: q(svg.closest('.anomaly'), 'tr.step').length,
        }));""")
    cycles = {a["kind"]: a for a in res["anomalies"] if "cycle" in a}
    assert [s["kind"] for s in seen] == list(cycles)  # every cycle is drawn, in the result's order
    for s in seen:
        a = cycles[s["kind"]]
        # a node per transaction of the cycle, named as the checker names them
        assert sorted(s["nodes"]) == sorted(f"T{t['index']} p{t['process']}" for t in a["cycle"])
        assert all(w > 0 for w in s["nodeBoxes"] + s["labelBoxes"] + s["edgeLengths"])
        # an arrow per step, between the step's transactions, labelled type and key, with its sentence
        assert s["ends"] == [[str(st["from"]), str(st["to"])] for st in a["steps"]]
        assert s["labels"] == [f"{st['type']} {st['key']}" for st in a["steps"]]
        assert s["whys"] == [st["explanation"] for st in a["steps"]]
        assert s["rows"] == len(a["steps"])
    single = next(s for s in seen if s["kind"] == "G-single-item")
    assert sorted(single["labels"]) == ["rw a:x", "wr a:y"]
    g2 = next(s for s in seen if s["kind"] == "G2-item")
    assert [lab.split()[0] for lab in g2["labels"]].count("rw") >= 2
    # the non-cycle anomaly is listed with its sentence
    others = browser.execute_script(
        "return Array.from(document.querySelectorAll('tr.other')).map(r => r.textContent)")
    g1a = next(a for a in res["anomalies"] if a["kind"] == "G1a")
    assert any("G1a" in o and g1a["explanation"] in o for o in others)
    # hovering a table row lights its edge
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    row = browser.find_element(By.CSS_SELECTOR, "#anomaly-0 tr.step")
    ActionChains(browser).move_to_element(row).perform()
    assert browser.execute_script(
        "return document.getElementById(document.querySelector('#anomaly-0 tr.step').dataset.edge)"
        ".classList.contains('lit')")
    screenshot(browser, "isolation")
    assert severe_console_errors(browser) == []


def test_the_timeline_highlights_the_cycles_transactions(browser: Any, tmp_path: Path) -> None:
    d, res = _run(tmp_path, [("G-single-item", "a")])
    assert main(["timeline", str(d)]) == 0
    view = load_run(d)
    data = timeline_data(view)
    (a,) = [a for a in res["anomalies"] if a["kind"] == "G-single-item"]
    (drawn,) = [x for x in data["anomalies"] if x["kind"] == "G-single-item"]
    # every transaction of the cycle is an anomalous row: its invocation and completion
    want = {data["ops"]["i"].index(t["index"]) for t in a["cycle"]}
    assert set(drawn["rows"]) == want and drawn["checker"] == "elle"
    _open(browser, d / "timeline.html")
    assert severe_console_errors(browser) == []
    seen = browser.execute_script("""
        const gd = document.getElementById('plot');
        const t = gd.data.find(t => t.name === 'anomaly (op)');
        return {n: t.x.length, text: t.text, link: document.getElementById('isolation-view').href};""")
    assert seen["n"] == len(a["cycle"])
    assert all("G-single-item" in t for t in seen["text"])
    assert seen["link"].endswith("/isolation.html")


def test_rw_register_cycles_and_allowed_anomalies(tmp_path: Path) -> None:
    """rw-register steps name versions, and a kind the models allow is drawn, marked allowed."""
    d, res = _run(tmp_path, [("G-single-item", "a")], workload="rw-register", models=("read-committed",))
    assert res["valid"] is True and "G-single-item" in res["anomaly_types"]
    page = render(d)
    assert page is not None
    text = page.read_text()
    assert 'class="anomaly allowed"' in text and "allowed by the models checked" in text
    assert text.count('<g class="txn"') == len(res["other_anomalies"][0]["cycle"])


def test_no_anomaly_no_page(tmp_path: Path) -> None:
    import random

    d = tmp_path / "ok" / "20261126T090000.000"
    d.mkdir(parents=True)
    with HistoryWriter(d / "history.jsonl") as w:
        for o in serial_history(random.Random(3), 30, 3, "list-append"):
            w.append(o)
    res = check(read_history(d / "history.jsonl"), "list-append", ["strict-serializable"])
    assert res["valid"] is True
    (d / "results.json").write_text(json.dumps({"valid": True, "checkers": {"elle": res}}))
    assert render(d) is None
    assert not (d / "isolation.html").exists()
    assert 'href="isolation.html"' not in render_timeline(d).read_text()


def test_a_damaged_result_still_draws_what_it_can(tmp_path: Path) -> None:
    """A step naming a transaction the cycle list lacks (a hand-edited results.json) gets a node."""
    d, _ = _run(tmp_path, [("G-single-item", "a")])
    r = json.loads((d / "results.json").read_text())
    a = r["checkers"]["elle"]["anomalies"][0]
    dropped = a["cycle"].pop()
    (d / "results.json").write_text(json.dumps(r))
    page = render(d)
    assert page is not None
    assert f'data-index="{dropped["index"]}"' in page.read_text()
