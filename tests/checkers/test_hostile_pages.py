"""Every page the framework writes, from a run whose every string is hostile: history (op f, process,
key, value, error, node, meta, observer samples, nemesis values), results.json (checker names,
anomaly kinds, ops, keys, explanations, Elle cycles, linearizability failures), test.json (name,
workload, nemesis, bugs, DB and its options, read mode), explore's report inputs and Spark's
dashboard rows. Opened in real headless Chromium, served by `jepsen-py serve`'s server on
127.0.0.1: nothing runs, no alert fires, and the hostile text is there to read as text. A property
test draws hostile strings and checks the written HTML itself, without a browser."""

from __future__ import annotations

import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.pictures.isolation import _short, render_isolation
from jepsen_py.checkers.pictures.linearizability import render_failures
from jepsen_py.checkers.pictures.perf import perf_figure, render_perf
from jepsen_py.checkers.pictures.render import render_run
from jepsen_py.checkers.pictures.runview import load_run
from jepsen_py.checkers.pictures.timeline import render_timeline
from jepsen_py.spark import dashboard

from jepsen_py.explore import report
from jepsen_py.web import index_html, list_runs, make_server, server_url
from tests.browser import chromium, chromium_available, severe_console_errors
from tests.checkers.hostile import PAYLOADS, PWNED, dashboard_inputs, explore_inputs, inert, write_run
from tests.checkers.runfixture import make_run
from tests.conftest import require

RUN = "hostile/20261122T031500.000"


@dataclass
class Site:
    root: Path
    url: str  # the server's, ending in /
    s: dict[str, str]  # which payload went into which field of the hostile run


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A results directory holding the hostile run with every picture rendered, explore's report and
    Spark's dashboard where those commands write them, a node log a DB named like a page, and beside
    them a good run and two damaged ones (test.json nested 100,000 deep, results.json not JSON)."""
    root = tmp_path_factory.mktemp("results")
    run = write_run(root, PAYLOADS)
    assert {p.name for p in render_run(run.run_dir)} == {"timeline.html", "perf.html", "isolation.html",
                                                         "linearizability.html"}
    out = root / "explore" / "20261122T040000.000"
    out.mkdir(parents=True)
    report.write(out, *explore_inputs(PAYLOADS))
    dashboard.write_dashboard(root / "aggregate" / "dashboard.html", *dashboard_inputs(PAYLOADS))
    logs = run.run_dir / "nodes" / "n1"
    logs.mkdir(parents=True)
    for name in ("status.html", "timeline.html", "trace.svg"):
        (logs / name).write_text(f"<html><body><script>{PWNED}</script><svg onload=\"{PWNED}\"></svg>")
    make_run(root, 20, name="good", stamp="20261122T010000.000")
    deep = make_run(root, 20, name="deep", stamp="20261122T020000.000")
    (deep.run_dir / "test.json").write_text("[" * 100_000 + "]" * 100_000)
    garbled = make_run(root, 20, name="garbled", stamp="20261122T020500.000")
    (garbled.run_dir / "results.json").write_text('{"valid": tru')
    srv = make_server(root, "127.0.0.1", 0)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield Site(root, server_url(srv), run.s)
    finally:
        srv.shutdown()
        srv.server_close()


# Before any page's own script: every alert, confirm or prompt is recorded instead of shown.
_HOOK = """window.__alerts = [];
for (const k of ['alert', 'confirm', 'prompt']) window[k] = m => { window.__alerts.push(String(m)); };"""

# Hovers up to three points of every hoverable trace of every plot; returns each hover label's text
# (the label is where plotly reads the most markup: pseudo-HTML and %{...}).
_HOVER = """
const out = [];
for (const gd of document.querySelectorAll('.js-plotly-plot')) {
  gd.data.forEach(t => {
    if (!t.x || !t.y || t.hoverinfo === 'skip' || t.type === 'table') return;
    const sub = (t.xaxis || 'x') + (t.yaxis || 'y');
    for (let j = 0; j < Math.min(t.x.length, 3); j++) {
      if (t.x[j] === null || t.y[j] === null) continue;
      Plotly.Fx.unhover(gd);
      Plotly.Fx.hover(gd, {xval: t.x[j], yval: t.y[j]}, [sub]);
      const layer = gd.querySelector('.hoverlayer');
      if (layer) out.push(layer.textContent);
    }
  });
}
return out.join('\\n');"""

_TEXT = """return {
  body: document.body.innerText,
  legend: Array.from(document.querySelectorAll('.legendtext')).map(e => e.textContent),
  ticks: Array.from(document.querySelectorAll('.xtick text, .ytick text, .y2tick text'))
         .map(e => e.textContent),
  pwned: typeof window.__pwned, alerts: window.__alerts || [],
  foreign: document.querySelectorAll('img, iframe, object, embed, [onerror], [onload]').length};"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require("chromium + chromedriver + selenium", chromium_available())
    with chromium(1400, 1000) as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _HOOK})
        yield driver


def _visit(driver: Any, url: str, *, ready: str | None = "document.body.dataset.rendered") -> dict[str, Any]:
    """Opens `url`, waits until `ready` (a JavaScript expression) holds, hovers every plot, and
    says what a person sees."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get_log("browser")
    driver.get(url)
    if ready is not None:
        WebDriverWait(driver, 60).until(lambda d: d.execute_script(f"return {ready} || null"))
    hovered = driver.execute_script(_HOVER)
    time.sleep(0.3)  # an injected <img src=x onerror> would fire by now
    seen = driver.execute_script(_TEXT)
    seen["hover"] = hovered
    seen["errors"] = severe_console_errors(driver)
    return seen


def _assert_inert(seen: dict[str, Any]) -> None:
    assert seen["pwned"] == "undefined"
    assert seen["alerts"] == []
    assert seen["foreign"] == 0
    assert seen["errors"] == []


def test_timeline(browser: Any, site: Site) -> None:
    s = site.s
    seen = _visit(browser, f"{site.url}files/{RUN}/timeline.html")
    _assert_inert(seen)
    # the anomaly list, the key filter and the header: text, as written
    assert f"({s['checker']}) ops #0, #9: {s['explanation']}" in seen["body"]
    assert s["kind"] in seen["body"] and s["test_name"] in seen["body"] and s["workload"] in seen["body"]
    assert browser.execute_script(
        "return Array.from(document.querySelectorAll('#key-filter option')).map(o => o.textContent)"
    ) == ["all keys", s["key"]]
    # what plotly draws: legend, lane labels, hover labels
    assert s["obs_role"] in seen["legend"] and f"term {s['obs_node']}" in seen["legend"]
    assert f"p{s['process']}" in seen["ticks"] and s["obs_node"] in seen["ticks"]
    for field in ("f", "key", "value", "error", "node", "role", "process", "obs_node", "obs_role", "leader"):
        assert s[field] in seen["hover"], field


def test_perf(browser: Any, site: Site) -> None:
    s = site.s
    seen = _visit(browser, f"{site.url}files/{RUN}/perf.html")
    _assert_inert(seen)
    assert browser.execute_script("return document.querySelector('#summary tr:nth-child(2) td').textContent"
                                  ) == s["f"]
    assert f"{s['f']} ok" in seen["legend"] and f"{s['f']} p99" in seen["legend"]
    assert f"{s['f']} ok" in seen["hover"]
    assert any(s["side"] in t for t in browser.execute_script(
        "return Array.from(document.querySelectorAll('.annotation-text')).map(e => e.textContent)"))


def test_isolation(browser: Any, site: Site) -> None:
    s = site.s
    seen = _visit(browser, f"{site.url}files/{RUN}/isolation.html")
    _assert_inert(seen)
    other = browser.execute_script("""
        return Array.from(document.querySelectorAll('tr.other')).map(
          r => Array.from(r.querySelectorAll('td')).map(td => td.textContent));""")
    assert other[0] == [s["other_kind"], "prohibited", "elle", _short(s["other_key"], 30), f"#{s['ops']}, #3",
                        s["other_why"]]
    assert other[1][1] == "allowed" and other[1][4] == s["ops"]
    svg = browser.execute_script("""
        const q = s => Array.from(document.querySelectorAll(s)).map(e => e.textContent);
        return {why: q('g.edge title'), labels: q('g.edge .edge-label'), txn: q('g.txn title'),
                kinds: q('.anomaly .kind')};""")
    assert svg["why"] == [s["edge_why"]] * 2 and svg["kinds"] == [s["elle_kind"]]
    assert any(s["txn_process"] in t for t in svg["txn"])
    for field in ("model", "not", "elle_workload", "reason", "elle_why", "test_name", "edge_type"):
        assert s[field] in seen["body"], field


def test_linearizability(browser: Any, site: Site) -> None:
    s = site.s
    seen = _visit(browser, f"{site.url}files/{RUN}/linearizability.html")
    _assert_inert(seen)
    blocked = browser.find_element("css selector", ".blocked").get_attribute("textContent")
    assert s["lin_why"] in blocked and s["process"] in blocked and s["f"] in blocked
    cells = browser.execute_script("""
        return Array.from(document.querySelectorAll('.failure details:first-of-type td')).map(
          td => td.textContent);""")
    assert f"#{s['cand_op']}" in cells and s["cand_why"] in cells and s["cand_f"] in cells
    for field in ("lin_model", "lin_key", "test_name"):
        assert s[field] in seen["body"], field
    assert s["process"] in seen["hover"] and s["cand_why"] in seen["hover"]
    assert f"p{s['process']}" in seen["ticks"]


def test_explore_report(browser: Any, site: Site) -> None:
    summary, trials = explore_inputs(PAYLOADS)
    seen = _visit(browser, f"{site.url}files/explore/20261122T040000.000/report.html")
    _assert_inert(seen)
    cells = browser.execute_script("""
        return Array.from(document.querySelectorAll('#trials tbody tr.trial td:nth-child(3)')).map(
          td => td.textContent);""")
    assert cells == [t.config for t in trials]
    assert browser.find_element("css selector", ".finding h3").get_attribute("textContent") == (
        f"finding 1: {summary['findings'][0]['kind']}")
    assert browser.find_element("css selector", ".finding pre").get_attribute("textContent") == (
        summary["findings"][0]["schedule_text"])
    assert f"#1 {trials[0].config}" in seen["hover"]
    assert summary["db"] in seen["body"] and summary["backend"] in seen["body"]


def test_spark_dashboard(browser: Any, site: Site) -> None:
    summary, _, _ = dashboard_inputs(PAYLOADS)
    seen = _visit(browser, f"{site.url}files/aggregate/dashboard.html",
                  ready="document.querySelectorAll('.js-plotly-plot .main-svg').length >= 6")
    _assert_inert(seen)
    r = summary[0]
    assert f"detection, {r['nemesis']}" in seen["legend"]
    assert f"{r['bug']} ({r['workload']}, {r['read_mode']}, {r['version']})" in seen["ticks"]


def test_serve_index_lists_every_run_and_shows_the_damaged(browser: Any, site: Site) -> None:
    with urllib.request.urlopen(site.url, timeout=60) as r:
        assert r.status == 200
    seen = _visit(browser, site.url, ready=None)
    _assert_inert(seen)
    rows = browser.execute_script("""
        return Object.fromEntries(Array.from(document.querySelectorAll('tr.run')).map(r => [r.dataset.run,
          Array.from(r.querySelectorAll('td')).map(td => td.textContent)]));""")
    assert set(rows) == {RUN, "good/20261122T010000.000", "deep/20261122T020000.000",
                         "garbled/20261122T020500.000"}
    s = site.s
    assert rows[RUN][1:6] == [s["test_name"], "2026-11-22 03:15:00 UTC", s["workload"], f"{s['nemesis']},7",
                              s["bug"]]
    assert rows[RUN][6] == f"{s['db_key']}={s['db_value']},read-mode={s['read_mode']}"
    assert rows["good/20261122T010000.000"][0] == "invalid"
    assert rows["deep/20261122T020000.000"][0] == "damaged"
    assert "test.json: nested too deep" in rows["deep/20261122T020000.000"][1]
    assert rows["garbled/20261122T020500.000"][0] == "damaged"
    assert "results.json" in rows["garbled/20261122T020500.000"][1]


@pytest.mark.parametrize("name", ["status.html", "timeline.html", "trace.svg"])
def test_serve_sends_a_node_log_named_like_a_page_as_text(browser: Any, site: Site, name: str) -> None:
    url = f"{site.url}files/{RUN}/nodes/n1/{name}"
    with urllib.request.urlopen(url, timeout=60) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
    seen = _visit(browser, url, ready=None)
    _assert_inert(seen)
    assert f"<script>{PWNED}</script>" in seen["body"]


def test_a_damaged_run_never_breaks_the_index(tmp_path: Path) -> None:
    """Without a browser: the deep and the garbled run are listed as damaged, the others as they are."""
    make_run(tmp_path, 20, name="ok", stamp="20261122T010000.000")
    deep = make_run(tmp_path, 20, name="deep", stamp="20261122T020000.000")
    (deep.run_dir / "test.json").write_text("[" * 100_000 + "]" * 100_000)
    wide = make_run(tmp_path, 20, name="wide", stamp="20261122T030000.000")  # parses, too deep to print
    (wide.run_dir / "test.json").write_text('{"name": "w", "workload": ' + "[" * 500 + "]" * 500 + "}")
    runs = {r.test: r for r in list_runs(tmp_path)}
    assert runs["ok"].damaged == "" and runs["ok"].valid is False
    assert runs["deep"].damaged == "test.json: nested too deep"
    assert runs["wide"].damaged == "test.json: a field is nested too deep"
    assert index_html(tmp_path).count('<tr class="run') == 3


# Hostile strings: markup fragments, quotes, a script close, a comment open, plotly's %{...}, and any
# unicode, run together; the marker at the end keeps a fragment from matching the page's own markup.
FRAGMENTS = ["<script>", "</script>", "<!--", "-->", "<img src=x onerror=", "\"", "'", "&", "&amp;", ">",
             "<", "javascript:", "%{y}", "<b>", "</b>", "<a href=", "<svg onload=", "<iframe srcdoc=",
             "]]>", "\\", "\u2028", "\u2029", "\U0001f4a9", "\u202e", "</", "<style>", "`", "${x}"]
HOSTILE = st.builds(lambda parts, n: "".join(parts) + f"\u2603{n}",
                    st.lists(st.one_of(st.sampled_from(FRAGMENTS),
                                       st.text(st.characters(blacklist_categories=["Cs"]), max_size=4)),
                             min_size=1, max_size=5),
                    st.integers(0, 99))
_ALLOWED_PLOTLY_TAGS = ("<br>", "<extra></extra>", "<b>", "</b>")


def _plotly_text_ok(text: Any) -> bool:
    """No markup and no template field in plotly text beyond what the page itself wrote."""
    if not isinstance(text, str):
        return True
    for tag in _ALLOWED_PLOTLY_TAGS:
        text = text.replace(tag, "")
    for field in ("%{y:.2f}", "%{x:.3f}", "%{customdata}", "%{y:.1f}"):
        text = text.replace(field, "")
    return "<" not in text and "%" not in text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(HOSTILE, min_size=3, max_size=8))
def test_pages_never_carry_markup_from_data(strings: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="jepsen-py-hostile-") as tmp:
        root = Path(tmp)
        run = write_run(root, strings)
        view = load_run(run.run_dir)
        written = [(render_timeline(view), 3), (render_perf(view), 3), (render_isolation(view), 1),
                   (render_failures(view), 3)]
        for page, scripts in written:
            assert page is not None
            assert inert(page.read_text(encoding="utf-8"), strings, scripts=scripts) == [], page.name
        fig, _ = perf_figure(view)
        for trace in fig["data"]:
            assert _plotly_text_ok(trace["name"]) and _plotly_text_ok(trace["hovertemplate"])
        assert all(_plotly_text_ok(a["text"]) for a in fig["layout"]["annotations"])
        assert inert(report.render(*explore_inputs(strings)), strings, scripts=3) == []
        assert inert(index_html(root), strings, scripts=0) == []
        summary, trends, _ = dashboard_inputs(strings)
        for make in (dashboard.detection_figure, dashboard.availability_figure, dashboard.latency_figure,
                     dashboard.anomalies_figure, dashboard.table_figure):
            d = make(summary).to_dict()
            for trace in d["data"]:
                texts = [trace.get("name"), *(trace.get("x") or [])]
                texts += [c for col in (trace.get("cells") or {}).get("values") or [] for c in col]
                assert all(_plotly_text_ok(t) for t in texts), make.__name__
        assert all(_plotly_text_ok(t["name"]) for t in dashboard.trends_figure(trends).to_dict()["data"])
