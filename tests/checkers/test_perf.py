"""perf.html in real headless Chromium: three plots on one time axis, faults shaded, quantiles drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jepsen_py.checkers.pictures.perf import (
    Sample,
    bucket_width,
    decimate,
    perf_figure,
    quantile,
    render,
    samples,
)
from jepsen_py.checkers.pictures.runview import load_run

from tests.browser import chromium, chromium_available, screenshot, severe_console_errors, wait_rendered
from tests.checkers.runfixture import make_run
from tests.conftest import require


@pytest.fixture(scope="module")
def browser() -> Any:
    require("chromium + chromedriver + selenium", chromium_available())
    with chromium() as driver:
        yield driver


def test_perf_page_as_seen(browser: Any, tmp_path: Path) -> None:
    run = make_run(tmp_path, 3000)
    page = render(run.run_dir)
    browser.get(page.as_uri())
    wait_rendered(browser)
    assert severe_console_errors(browser) == []
    seen = browser.execute_script("""
        const gd = document.getElementById('perf');
        const q = s => Array.from(document.querySelectorAll(s)).map(e => e.textContent);
        const shape = document.querySelector('.shapelayer path').getBoundingClientRect();
        const xa = gd._fullLayout.xaxis, g = gd.getBoundingClientRect();
        return {legend: q('.legendtext'), ytitles: q('.g-ytitle text, .g-y2title text, .g-y3title text'),
                notes: q('.annotation-text'), shapes: document.querySelectorAll('.shapelayer path').length,
                left: shape.left - g.left, x0: xa._offset + xa.l2p(DATA.figure.layout.shapes[0].x0),
                table: q('#summary td'), pts: gd.data.filter(t => t.yaxis === 'y')
                  .reduce((s, t) => s + t.x.length, 0)};""")
    for name in ("commit ok", "fetch ok", "commit p50", "commit p95", "commit p99", "fetch ok/s",
                 "commit info"):
        assert name in seen["legend"], name
    assert seen["ytitles"][0] == "latency (ms)" and seen["ytitles"][1] == "quantiles (ms)"
    assert seen["ytitles"][2].startswith("ops/s")
    assert seen["shapes"] == 1 and abs(seen["left"] - seen["x0"]) < 2
    assert "start-partition: leader: n1 | n2 n3 n4 n5" in seen["notes"]
    assert "commit" in seen["table"] and "fetch" in seen["table"]
    assert seen["pts"] == sum(1 for s in samples(load_run(run.run_dir)))  # small run: nothing decimated
    screenshot(browser, "perf")


def test_throughput_drops_inside_the_partition(tmp_path: Path) -> None:
    """The fixture's clients time out against the isolated leader: the ok rate dips there."""
    run = make_run(tmp_path, 3000)
    fig, summary = perf_figure(load_run(run.run_dir))
    ok_rate = next(t for t in fig["data"] if t["name"] == "commit ok/s")
    info_rate = next(t for t in fig["data"] if t["name"] == "commit info/s")
    p0, _ = run.partition
    inside = [y for x, y in zip(info_rate["x"], info_rate["y"], strict=True) if y > 0]
    assert inside and all(p0 <= x <= p0 + 3 for x, y in zip(info_rate["x"], info_rate["y"], strict=True) if y)
    assert max(ok_rate["y"]) > 0
    assert summary["commit"]["p50"] <= summary["commit"]["p95"] <= summary["commit"]["p99"]


def test_decimation_keeps_outliers_and_bounds_points() -> None:
    ss = [Sample(i / 1000, 1.0 + (i % 7), "fetch", "ok", i) for i in range(100_000)]
    ss[54_321] = Sample(54.321, 9_999.0, "fetch", "ok", 54_321)
    kept = decimate(ss, 20_000, 600)
    assert len(kept) <= 21_000
    assert any(s.latency_ms == 9_999.0 for s in kept)
    assert kept == sorted(kept, key=lambda s: s.t)
    assert decimate(ss[:100], 20_000, 600) == ss[:100]


def test_quantile_and_buckets() -> None:
    vals = sorted(float(i) for i in range(1, 101))
    assert quantile(vals, 0.5) == 50 and quantile(vals, 0.99) == 99 and quantile(vals, 1.0) == 100
    assert bucket_width(10) == 0.1 and bucket_width(300) == 2 and bucket_width(3600) == 50
