"""How big and how fast the pictures are: timeline.html and perf.html for 10,000 and 100,000 ops.

For each size it writes a plausible run (tests/checkers/runfixture.py: clients, a partition, a
zombie leader, a stale read), then prints
  - the Python side: history size, render time and HTML size of timeline.html and perf.html;
  - the browser side, in Debian's headless Chromium (software WebGL, no GPU): time from navigation
    to the first complete draw (median of --repeat loads), and the time to redraw after zooming
    into one second (full detail), against the 3 s target for opening the timeline.

    python3 bench/bench_timeline.py [--sizes 10000,100000] [--repeat 3] [--no-browser]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jepsen_py.checkers.pictures.perf import render_perf
from jepsen_py.checkers.pictures.runview import load_run
from jepsen_py.checkers.pictures.timeline import render_timeline

from tests.browser import chromium, chromium_available, wait_rendered
from tests.checkers.runfixture import make_run

TARGET_OPEN_S = 3.0


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def first_draw(driver: object, page: Path, repeat: int) -> tuple[float, float]:
    """(median ms from navigation to the first complete draw, in-page; median wall s from get())."""
    in_page, wall = [], []
    for _ in range(repeat):
        driver.get("about:blank")  # type: ignore[attr-defined]
        t = time.perf_counter()
        driver.get(page.as_uri())  # type: ignore[attr-defined]
        wait_rendered(driver, 120)
        wall.append(time.perf_counter() - t)
        drawn = driver.execute_script("return document.body.dataset.rendered")  # type: ignore[attr-defined]
        in_page.append(float(drawn))
    return statistics.median(in_page), statistics.median(wall)


def zoom_redraw_ms(driver: object) -> float:
    """ms to redraw the open timeline after zooming into one second (full detail there)."""
    zoom = driver.execute_script("""
        const t0 = performance.now(), gd = document.getElementById('plot');
        document.body.dataset.rendered = '';
        Plotly.relayout(gd, {'xaxis.range': [20, 21]});
        return new Promise(res => { const poll = () => document.body.dataset.rendered
            ? res(performance.now() - t0) : setTimeout(poll, 5); poll(); });""")  # type: ignore[attr-defined]
    return float(zoom)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    browser = not args.no_browser and chromium_available()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-timeline-") as tmp:
        for n in sizes:
            run = make_run(Path(tmp), n, name=f"bench-{n}")
            hist = (run.run_dir / "history.jsonl").stat().st_size
            t = time.perf_counter()
            view = load_run(run.run_dir)
            t_load = time.perf_counter() - t
            t = time.perf_counter()
            tl = render_timeline(view)
            t_tl = time.perf_counter() - t
            t = time.perf_counter()
            pf = render_perf(view)
            t_pf = time.perf_counter() - t
            row = {"ops": n, "records": len(view.ops), "history": hist, "load_s": t_load, "tl_s": t_tl,
                   "tl_size": tl.stat().st_size, "pf_s": t_pf, "pf_size": pf.stat().st_size}
            if browser:
                with chromium() as d:
                    row["pf_inpage_ms"], row["pf_wall_s"] = first_draw(d, pf, args.repeat)
                    row["tl_inpage_ms"], row["tl_wall_s"] = first_draw(d, tl, args.repeat)
                    row["zoom_ms"] = zoom_redraw_ms(d)
            rows.append(row)
    print(f"{'client ops':>10} {'records':>8} {'history':>9} {'read s':>7} {'timeline s':>10} "
          f"{'timeline':>9} {'perf s':>7} {'perf':>8}")
    for r in rows:
        print(f"{r['ops']:>10} {r['records']:>8} {_mb(r['history']):>9} {r['load_s']:>7.2f} "
              f"{r['tl_s']:>10.2f} {_mb(r['tl_size']):>9} {r['pf_s']:>7.2f} {_mb(r['pf_size']):>8}")
    if browser:
        print("\nheadless Chromium (software WebGL): ms from navigation to the first complete draw")
        print(f"{'client ops':>10} {'timeline ms':>12} {'wall s':>7} {'vs 3 s':>7} {'zoom redraw ms':>15} "
              f"{'perf ms':>8} {'wall s':>7}")
        for r in rows:
            print(f"{r['ops']:>10} {r['tl_inpage_ms']:>12.0f} {r['tl_wall_s']:>7.2f} "
                  f"{r['tl_inpage_ms'] / 1000 / TARGET_OPEN_S:>6.2f}x {r['zoom_ms']:>15.0f} "
                  f"{r['pf_inpage_ms']:>8.0f} {r['pf_wall_s']:>7.2f}")
        print("(plotly.js itself is ~4.8 MB of every page; 'vs 3 s' below 1.00x meets the target)")
    elif not args.no_browser:
        print("\n(headless Chromium or selenium not available: browser timings skipped)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
