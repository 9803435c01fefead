"""timeline.html rendered in real headless Chromium: what a person sees, not what the HTML contains."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.checkers.pictures.plotpage import plotly_js
from jepsen_py.checkers.pictures.render import render_run
from jepsen_py.checkers.pictures.runview import fault_windows, load_run
from jepsen_py.checkers.pictures.timeline import render, timeline_data

from jepsen_py.errors import BadInput
from jepsen_py.history import HistoryWriter, Op, Pair, read_history
from tests.browser import chromium, chromium_available, screenshot, severe_console_errors, wait_rendered
from tests.checkers.runfixture import make_run
from tests.conftest import require


@pytest.fixture(scope="module")
def browser() -> Any:
    require("chromium + chromedriver + selenium", chromium_available())
    with chromium() as driver:
        yield driver


def _open(driver: Any, page: Path) -> None:
    driver.get("about:blank")
    driver.get_log("browser")  # drop anything from the previous page
    driver.get(page.as_uri())
    wait_rendered(driver)


def _ytick_labels(driver: Any, axis: str = "y") -> list[str]:
    return driver.execute_script(
        f"return Array.from(document.querySelectorAll('.{axis}tick text')).map(e => e.textContent)")


def _hover_text(driver: Any, trace: str, point: int, plot_id: str = "plot") -> str:
    """Moves the real mouse over one point of a trace and reads the tooltip a person would read."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    xy = driver.execute_script(f"""
        const gd = document.getElementById('{plot_id}');
        const t = gd.data.find(t => t.name === arguments[0]);
        const xa = gd._fullLayout[(t.xaxis || 'x').replace('x', 'xaxis')];
        const ya = gd._fullLayout[(t.yaxis || 'y').replace('y', 'yaxis')];
        return [xa._offset + xa.l2p(t.x[arguments[1]]) - gd.clientWidth / 2,
                ya._offset + ya.l2p(t.y[arguments[1]]) - gd.clientHeight / 2];""", trace, point)
    plot = driver.find_element(By.ID, plot_id)
    ActionChains(driver).move_to_element_with_offset(plot, int(xy[0]), int(xy[1])).perform()
    driver.execute_script("return new Promise(r => setTimeout(r, 300))")
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('.hoverlayer .hovertext'))"
        ".map(e => e.textContent).join(' ')")


def test_page_is_self_contained(tmp_path: Path) -> None:
    run = make_run(tmp_path, 200)
    html = render(run.run_dir).read_text()
    assert plotly_js() in html  # plotly.js itself is in the page
    ours = html.replace(plotly_js(), "")
    assert "<script src" not in ours and "<link" not in ours
    assert not re.search(r"https?://", ours)


def test_lanes_faults_anomaly_and_zombie_as_seen(browser: Any, tmp_path: Path) -> None:
    run = make_run(tmp_path, 400)
    page = render(run.run_dir)
    _open(browser, page)
    assert severe_console_errors(browser) == []

    # one lane per process, nemesis lane at the bottom, the nodes' role lanes below
    lanes = _ytick_labels(browser, "y")
    for p in ("nemesis", "p0", "p5", "p901"):
        assert p in lanes
    assert _ytick_labels(browser, "y2") == ["n1", "n2", "n3", "n4", "n5"]
    assert browser.execute_script("return document.body.dataset.detail") == "full"
    assert int(browser.execute_script("return document.body.dataset.shownOps")) == run.n_client_ops + 2 + 2

    # the partition is a shaded band over exactly its time span, with its label
    band = browser.execute_script("""
        const gd = document.getElementById('plot'), xa = gd._fullLayout.xaxis;
        const shapes = document.querySelectorAll('.shapelayer path');
        const r = shapes[0].getBoundingClientRect(), g = gd.getBoundingClientRect();
        return {n: shapes.length, left: r.left - g.left, right: r.right - g.left,
                x0: xa._offset + xa.l2p(DATA.faults[0].start), x1: xa._offset + xa.l2p(DATA.faults[0].end),
                fill: getComputedStyle(shapes[0]).fill, h: r.height, ph: gd._fullLayout._size.h};""")
    assert band["n"] == 1
    assert abs(band["left"] - band["x0"]) < 2 and abs(band["right"] - band["x1"]) < 2
    assert band["right"] - band["left"] > 50 and band["h"] > 0.9 * band["ph"]
    assert band["fill"] != "none"
    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('.annotation-text')).map(e => e.textContent)")
    assert "start-partition: leader: n1 | n2 n3 n4 n5" in labels

    # the stale read is listed with its explanation, and drawn as a highlighted star
    items = browser.execute_script(
        "return Array.from(document.querySelectorAll('#anomalies li')).map(e => e.textContent)")
    assert len(items) == 3
    assert any("stale-read" in t and "deposed" in t for t in items)
    legend = browser.execute_script(
        "return Array.from(document.querySelectorAll('.legendtext')).map(e => e.textContent)")
    assert "anomaly" in legend and "zombie leader" in legend

    # hovering the highlighted op shows the checker's explanation
    hover = _hover_text(browser, "anomaly (op)", 0)
    assert "stale-read" in hover and "g1/orders/0" in hover

    # the zombie leader: n1 claims leadership during the partition after n2 reported term 2
    zombie = browser.execute_script("""
        const t = document.getElementById('plot').data.find(t => t.name === 'zombie leader');
        return {x: Array.from(t.x), y: Array.from(t.y)};""")
    assert len(zombie["x"]) > 5
    assert set(zombie["y"]) == {0}  # n1's lane
    p0, p1 = run.partition
    assert all(p0 <= x <= p1 for x in zombie["x"])
    # the split leadership the leaders checker found is ringed on the role lanes of n1 and n2
    ringed = browser.execute_script("""
        const t = document.getElementById('plot').data.find(t => t.name === 'anomaly (sample)');
        return Array.from(t.y);""")
    assert sorted(ringed) == [0, 1]
    screenshot(browser, "timeline")

    # clicking the anomaly zooms to it
    browser.execute_script("document.querySelector('#anomalies li').click()")
    browser.implicitly_wait(0)
    rng = browser.execute_script("""
        const gd = document.getElementById('plot');
        return new Promise(res => setTimeout(() => res(gd._fullLayout.xaxis.range), 400));""")
    ops = {o.index: o for o in read_history(run.run_dir / "history.jsonl")}
    t_stale = ops[run.stale_read_ops[0]].time / 1e9
    assert rng[0] < t_stale < rng[1] and rng[1] - rng[0] < 2
    assert severe_console_errors(browser) == []


def test_key_filter_and_node_lanes(browser: Any, tmp_path: Path) -> None:
    run = make_run(tmp_path, 400)
    page = render(run.run_dir)
    _open(browser, page)
    ops = read_history(run.run_dir / "history.jsonl")
    want = sum(1 for o in ops if o.type == "invoke" and o.key == "g1/orders/1" and o.process != "nemesis")
    browser.execute_script("""
        const sel = document.getElementById('key-filter');
        sel.value = Array.from(sel.options).find(o => o.textContent === 'g1/orders/1').value;
        document.body.dataset.rendered = '';
        sel.dispatchEvent(new Event('change'));""")
    wait_rendered(browser)
    shown = int(browser.execute_script("return document.body.dataset.shownOps"))
    assert shown == want + 2  # the key's ops plus the nemesis lane's two ops
    browser.execute_script("""
        const sel = document.getElementById('group-by'); sel.value = 'node';
        document.body.dataset.rendered = '';
        sel.dispatchEvent(new Event('change'));""")
    wait_rendered(browser)
    lanes = _ytick_labels(browser, "y")
    assert {"n1", "n2", "n3", "nemesis"} <= set(lanes)
    assert not any(label.startswith("p") for label in lanes)
    screenshot(browser, "timeline-by-node")
    assert severe_console_errors(browser) == []


def test_many_ops_merge_then_zoom_shows_each(browser: Any, tmp_path: Path) -> None:
    run = make_run(tmp_path, 30_000)
    _open(browser, render(run.run_dir))
    b = browser.execute_script("return Object.assign({}, document.body.dataset)")
    assert b["detail"] == "merged"
    assert int(b["shownOps"]) < int(b["visibleOps"]) // 3
    # zoom into one second: every op in it is drawn on its own
    browser.execute_script("""
        document.body.dataset.rendered = '';
        Plotly.relayout(document.getElementById('plot'), {'xaxis.range': [20, 21]});""")
    wait_rendered(browser)
    b = browser.execute_script("return Object.assign({}, document.body.dataset)")
    assert b["detail"] == "full"
    assert int(b["shownOps"]) >= int(b["visibleOps"]) - 1
    screenshot(browser, "timeline-30k-zoomed")
    assert severe_console_errors(browser) == []


def test_a_declared_outside_fault_is_a_band_of_its_kind() -> None:
    from jepsen_py.nemeses.faults import PAUSE, FaultKind, mark

    freeze = FaultKind("freeze", frozenset({"freeze"}), frozenset({"thaw"}), frozenset({PAUSE}))

    def pr(t0: int, f: str, value: Any = None, declared: bool = True) -> Pair:
        inv, comp = Op(0, t0 * 10**9, "invoke", "nemesis", f), Op(0, t0 * 10**9 + 1, "info", "nemesis", f,
                                                                   None, value)
        return Pair(mark(inv, freeze), mark(comp, freeze)) if declared else Pair(inv, comp)

    ws = fault_windows([pr(1, "freeze", {"nodes": ["n2"]}), pr(4, "thaw", {"nodes": ["n2"]})], 10.0)
    got = [(w.label, w.kind, round(w.start), round(w.end or 0)) for w in ws]
    assert got == [("freeze: n2", "freeze", 1, 4)]
    # the same ops undeclared: two bands of no kind, both open to the end
    ws = fault_windows([pr(1, "freeze", {"nodes": ["n2"]}, False), pr(4, "thaw", {"nodes": ["n2"]}, False)],
                       10.0)
    assert [(w.f, w.kind, round(w.end or 0)) for w in ws] == [("freeze", "", 10), ("thaw", "", 10)]


def test_fault_windows_pair_undo_with_its_fault() -> None:
    def pr(t0: int, f: str, value: Any = None, typ: str = "info") -> Pair:
        return Pair(Op(0, t0 * 10**9, "invoke", "nemesis", f),
                    Op(0, t0 * 10**9 + 1, typ, "nemesis", f, None, value))

    ws = fault_windows([pr(1, "start-partition", [["n1"], ["n2", "n3"]]), pr(2, "pause", {"nodes": ["n2"]}),
                        pr(3, "stop-partition"), pr(4, "kill", typ="fail"), pr(5, "resume")], 10.0)
    got = [(w.f, round(w.start), round(w.end or 0)) for w in ws]
    assert got == [("start-partition", 1, 3), ("pause", 2, 5)]
    assert ws[0].label == "start-partition: n1 | n2 n3" and ws[1].label == "pause: n2"
    ws = fault_windows([pr(1, "bump-clock", {"bumped-ms": {"n4": 250}}), pr(2, "start-partition"),
                        pr(6, "heal")], 10.0)
    assert [round(w.end or 0) for w in ws] == [6, 6] and ws[0].label == "bump-clock: n4 +250 ms"
    assert fault_windows([pr(1, "start-partition")], 9.5)[0].end == 9.5
    # our nemeses' own undo names: start ends kill, resume ends pause, even interleaved
    ws = fault_windows([pr(1, "kill", {"target": "leader", "nodes": ["n1"]}),
                        pr(2, "pause", {"nodes": ["n3"]}), pr(3, "start", {"nodes": ["n1"]}),
                        pr(4, "resume", {"nodes": ["n3"]})], 10.0)
    assert [(w.f, round(w.end or 0), w.label) for w in ws] == [("kill", 3, "kill: leader: n1"),
                                                                ("pause", 4, "pause: n3")]
    # a new partition replaces the open one; a strobe lasts its duration
    ws = fault_windows([pr(1, "start-partition", {"shape": "one", "sides": [["n2"], ["n1", "n3"]]}),
                        pr(2, "start-partition", {"shape": "ring", "grudge": {"n1": ["n3"]}}),
                        pr(3, "strobe-clock", {"nodes": ["n2"], "delta-ms": 200, "period-ms": 16,
                                               "duration-s": 2}),
                        pr(7, "stop-partition")], 10.0)
    assert [(w.label, round(w.start), round(w.end or 0)) for w in ws] == [
        ("start-partition: one: n2 | n1 n3", 1, 2), ("start-partition: ring: n1xn3", 2, 7),
        ("strobe-clock: n2 strobe 200 ms / 16 ms", 3, 5)]
    # the leader-clock fault pairs by its family name and says whom it cut off and how far back
    ws = fault_windows([pr(1, "start-leader-clock", {"node": "n2", "clock-back-ms": 31154,
                                                     "grudge": {"n1": ["n2"], "n2": ["n1"]}}),
                        pr(9, "stop-leader-clock", {"healed": True})], 10.0)
    assert [(w.label, round(w.start), round(w.end or 0)) for w in ws] == [
        ("start-leader-clock: n2 isolated, clock -31154 ms", 1, 9)]


def test_timeline_data_is_compact_and_complete(tmp_path: Path) -> None:
    run = make_run(tmp_path, 300)
    d = timeline_data(load_run(run.run_dir))
    # clients, the stale read and its write, 2 nemesis ops
    assert len(d["ops"]["t0"]) == run.n_client_ops + 2 + 2
    assert {a["kind"] for a in d["anomalies"]} == {"stale-read", "nonlinearizable", "split-leader"}
    assert [len(a["rows"]) for a in d["anomalies"]] == [1, 1, 0]  # invoke + completion: one bar
    assert len(d["anomalies"][2]["samples"]) == 2
    assert sum(d["samples"]["z"]) > 0
    json.dumps(d, allow_nan=False)


def test_bad_run_dirs_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such run directory"):
        render(tmp_path / "nope")
    with pytest.raises(BadInput, match=r"no history\.jsonl"):
        render(tmp_path)
    (tmp_path / "history.jsonl").write_text('{"index": 0}\n')
    with pytest.raises(BadInput, match=r"history\.jsonl:1: op is missing"):
        render(tmp_path)


def test_odd_histories_render_without_errors(browser: Any, tmp_path: Path) -> None:
    """Empty history; ops never completed; named processes; list keys; dict values; a hostile
    explanation; anomaly indices that point nowhere: every page still draws, nothing executes."""
    empty = tmp_path / "empty" / "20261122T000000.000"
    empty.mkdir(parents=True)
    (empty / "history.jsonl").write_text("")
    odd = tmp_path / "odd" / "20261122T000000.000"
    odd.mkdir(parents=True)
    with HistoryWriter(odd / "history.jsonl") as w:
        w.append(Op(0, 0, "invoke", 0, "describe", ["g1", "t", 0], {"a": [1, 2]}))
        w.append(Op(0, 5, "invoke", "nemesis", "start-partition", None, "leader"))
        w.append(Op(0, 9, "invoke", "worker-x", "create", "t1", None))
        w.append(Op(0, 10**6, "ok", "worker-x", "create", "t1", {"created": True}, "n3", None,
                    {"term": True}))
        w.append(Op(0, 2 * 10**6, "fail", "observer", "status", None, None, "n2"))
    hostile = "<img src=x onerror=\"document.title='pwned'\">"
    (odd / "results.json").write_text(json.dumps({"valid": "unknown", "checkers": {"x": {
        "valid": "unknown", "anomalies": [{"kind": "weird", "ops": [0, 99, "a"], "explanation": hostile}]}}}))
    for run_dir, shown in ((empty, 0), (odd, 3)):
        for page in render_run(run_dir):
            _open(browser, page)
            assert severe_console_errors(browser) == [], page
            assert browser.title != "pwned"
            if page.name == "timeline.html":
                assert int(browser.execute_script("return document.body.dataset.shownOps")) == shown
    _open(browser, odd / "timeline.html")
    never = browser.execute_script("""
        const t = document.getElementById('plot').data.find(t => t.name === 'info (completion)');
        return t.text.join(' ');""")
    assert "never completed" in never and "g1/t/0" in never and '{"a":[1,2]}' in never
