"""perf.html: latency and throughput over time per op type, with the faults shaded (Jepsen's perf).

Three stacked plots share one time axis: every op's latency (log scale), the p50/p95/p99 of each
op type per time bucket, and completions per second per op type and outcome. A fault that makes
latency jump or throughput collapse lines up visibly with its shaded window.

With very many ops the scatter keeps every fail and info op and, per time bucket, the slowest and
fastest ok op plus an even sample of the rest, so outliers survive decimation; the quantile and
throughput lines are always computed from every op.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jepsen_py.checkers.pictures.plotpage import esc, page, plotly_text, verdict_badge
from jepsen_py.checkers.pictures.runview import NS, RunView, load_run, pair_type

from jepsen_py.store import write_text_atomic

SCATTER_OK_LIMIT = 20_000  # ok points per op type kept in the scatter before decimating
QUANTILES = (0.5, 0.95, 0.99)
_TYPE_STYLE = {"ok": ("circle", 0.55), "info": ("triangle-up", 0.9), "fail": ("x", 0.9)}
_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]


@dataclass(slots=True)
class Sample:
    """One completed client op: when it completed, how long it took, what it was and how it ended."""

    t: float  # completion time, seconds since the start
    latency_ms: float
    f: str
    type: str
    index: int  # the invocation's history index


def samples(view: RunView) -> list[Sample]:
    """Client ops that completed (an op never completed has no latency to show)."""
    out = []
    for p in view.client_pairs:
        if p.complete is None:
            continue
        out.append(Sample(p.complete.time / NS, (p.complete.time - p.invoke.time) / 1e6, p.invoke.f,
                          pair_type(p), p.invoke.index))
    out.sort(key=lambda s: s.t)
    return out


def bucket_width(duration: float, target: int = 150) -> float:
    """A round bucket width (1, 2 or 5 times a power of ten seconds) giving about `target` buckets."""
    raw = max(duration, 1e-3) / target
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        w = m * 10.0**exp
        if w >= raw:
            return w
    return 10.0 ** (exp + 1)


def quantile(sorted_vals: list[float], q: float) -> float:
    """Nearest-rank quantile of an already sorted list (what Jepsen's perf plots use)."""
    if not sorted_vals:
        return math.nan
    k = min(len(sorted_vals) - 1, max(0, math.ceil(q * len(sorted_vals)) - 1))
    return sorted_vals[k]


def decimate(ok: list[Sample], limit: int, buckets: int, seed: int = 0) -> list[Sample]:
    """At most about `limit` ok samples: per time bucket the min and max latency plus an even sample."""
    if len(ok) <= limit:
        return ok
    t0, t1 = ok[0].t, ok[-1].t
    width = (t1 - t0) / buckets or 1.0
    by_bucket: dict[int, list[Sample]] = defaultdict(list)
    for s in ok:
        by_bucket[min(buckets - 1, int((s.t - t0) / width))].append(s)
    per = max(0, limit // max(1, len(by_bucket)) - 2)
    rng = random.Random(seed)
    out: list[Sample] = []
    for b in sorted(by_bucket):
        xs = by_bucket[b]
        lo = min(xs, key=lambda s: s.latency_ms)
        hi = max(xs, key=lambda s: s.latency_ms)
        rest = [s for s in xs if s is not lo and s is not hi]
        out.extend({id(lo): lo, id(hi): hi}.values())
        out.extend(rng.sample(rest, min(per, len(rest))))
    out.sort(key=lambda s: s.t)
    return out


def perf_figure(view: RunView) -> tuple[dict[str, Any], dict[str, Any]]:
    """The plotly figure (data, layout) and a summary per op type."""
    ss = samples(view)
    duration = max(view.end_time, 1e-3)
    width = bucket_width(duration)
    nb = int(duration / width) + 1
    fs = sorted({s.f for s in ss})
    color = {f: _PALETTE[i % len(_PALETTE)] for i, f in enumerate(fs)}
    data: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for f in fs:
        mine = [s for s in ss if s.f == f]
        fp = plotly_text(f)  # the op name as plotly draws it (legend, hover), never markup
        lat_sorted = sorted(s.latency_ms for s in mine if s.type == "ok")
        summary[f] = {
            "ok": sum(1 for s in mine if s.type == "ok"),
            "fail": sum(1 for s in mine if s.type == "fail"),
            "info": sum(1 for s in mine if s.type == "info"),
            **{f"p{round(q * 100)}": quantile(lat_sorted, q) for q in QUANTILES},
            "max": lat_sorted[-1] if lat_sorted else math.nan,
        }
        for typ in ("ok", "info", "fail"):
            pts = [s for s in mine if s.type == typ]
            if not pts:
                continue
            shown = decimate(pts, SCATTER_OK_LIMIT, 600) if typ == "ok" else pts
            summary[f][f"{typ}_shown"] = len(shown)
            sym, alpha = _TYPE_STYLE[typ]
            data.append({
                "type": "scattergl", "mode": "markers", "name": f"{fp} {typ}", "legendgroup": f,
                "x": [round(s.t, 6) for s in shown], "y": [round(s.latency_ms, 3) for s in shown],
                "customdata": [s.index for s in shown],
                "hovertemplate": (f"{fp} {typ}<br>%{{y:.2f}} ms at %{{x:.3f}} s<br>op #%{{customdata}}"
                                  "<extra></extra>"),
                "marker": {"color": color[f], "symbol": sym, "size": 4 if typ == "ok" else 7,
                           "opacity": alpha},
                "xaxis": "x", "yaxis": "y",
            })
        # quantiles per bucket over every completion of this op type
        per_bucket: dict[int, list[float]] = defaultdict(list)
        counts: dict[str, list[int]] = {t: [0] * nb for t in ("ok", "fail", "info")}
        for s in mine:
            b = min(nb - 1, int(s.t / width))
            per_bucket[b].append(s.latency_ms)
            counts[s.type][b] += 1
        # every bucket, None where nothing completed: the line breaks instead of bridging an outage
        mids = [round((b + 0.5) * width, 6) for b in range(nb)]
        sorted_b = {b: sorted(v) for b, v in per_bucket.items()}
        for q, dash in zip(QUANTILES, ("solid", "dash", "dot"), strict=True):
            ys = [round(quantile(sorted_b[b], q), 3) if b in sorted_b else None for b in range(nb)]
            data.append({
                "type": "scatter", "mode": "lines+markers", "name": f"{fp} p{round(q * 100)}",
                "legendgroup": f, "x": mids, "y": ys, "line": {"color": color[f], "dash": dash, "width": 2},
                "marker": {"size": 3},
                "hovertemplate": f"{fp} p{round(q * 100)}: %{{y:.2f}} ms<extra></extra>",
                "xaxis": "x", "yaxis": "y2",
            })
        for typ, dash in (("ok", "solid"), ("fail", "dot"), ("info", "dash")):
            if not any(counts[typ]):
                continue
            data.append({
                "type": "scatter", "mode": "lines", "name": f"{fp} {typ}/s", "legendgroup": f,
                "x": [round((b + 0.5) * width, 6) for b in range(nb)],
                "y": [round(c / width, 3) for c in counts[typ]],
                "line": {"color": color[f], "dash": dash, "width": 2, "shape": "hvh"},
                "hovertemplate": f"{fp} {typ}: %{{y:.1f}} ops/s<extra></extra>", "xaxis": "x", "yaxis": "y3",
            })
    shapes, annotations = [], []
    for i, w in enumerate(view.faults):
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": w.start, "x1": w.end, "y0": 0,
                       "y1": 1, "fillcolor": "rgba(200,49,46,0.12)", "line": {"width": 0}, "layer": "below"})
        annotations.append({"x": w.start, "xref": "x", "yref": "paper", "y": 1.0 - (i % 3) * 0.025,
                            "yanchor": "bottom", "xanchor": "left", "text": plotly_text(w.label),
                            "showarrow": False, "font": {"size": 10, "color": "#7a1512"},
                            "bgcolor": "rgba(255,255,255,0.6)"})
    layout = {
        "margin": {"l": 70, "r": 20, "t": 50, "b": 50}, "hovermode": "closest", "shapes": shapes,
        "annotations": annotations, "legend": {"orientation": "v", "x": 1.01, "y": 1},
        "xaxis": {"title": {"text": "seconds since the test started"}, "anchor": "y3",
                  "range": [0, duration]},
        "yaxis": {"title": {"text": "latency (ms)"}, "type": "log", "domain": [0.56, 1]},
        "yaxis2": {"title": {"text": "quantiles (ms)"}, "type": "log", "domain": [0.29, 0.52]},
        "yaxis3": {"title": {"text": f"ops/s ({width:g} s buckets)"}, "domain": [0, 0.25],
                   "rangemode": "tozero"},
    }
    return {"data": data, "layout": layout}, summary


_SCRIPT = """
const plot = document.getElementById('perf');
Plotly.newPlot(plot, DATA.figure.data, DATA.figure.layout,
               {responsive: true, displaylogo: false, scrollZoom: true}).then(() => {
  document.body.dataset.rendered = String(performance.now());
});
"""

_CSS = "#perf { width: 100%; height: 80vh; min-height: 560px; }"


def _fmt(v: float) -> str:
    return "-" if isinstance(v, float) and math.isnan(v) else f"{v:.2f}"


def render_perf(view: RunView, out: Path | None = None) -> Path:
    """Writes perf.html for a loaded run; returns its path."""
    out = out or view.run_dir / "perf.html"
    fig, summary = perf_figure(view)
    valid = view.results.get("valid", "unknown") if view.results else "unknown"
    rows = "".join(
        f"<tr><td>{esc(f)}</td><td>{s['ok']}</td><td>{s['fail']}</td><td>{s['info']}</td>"
        f"<td>{_fmt(s['p50'])}</td><td>{_fmt(s['p95'])}</td><td>{_fmt(s['p99'])}</td>"
        f"<td>{_fmt(s['max'])}</td></tr>"
        for f, s in summary.items())
    body = (
        f"<h1>{esc(view.name)} — performance {verdict_badge(valid)}</h1>"
        f'<div class="meta">run {esc(view.run_dir.name)} · {len(view.faults)} faults shaded · '
        '<a href="timeline.html">timeline</a></div>'
        '<div id="perf"></div>'
        '<table id="summary"><tr><th>op</th><th>ok</th><th>fail</th><th>info</th><th>p50 ms</th>'
        f"<th>p95 ms</th><th>p99 ms</th><th>max ms</th></tr>{rows}</table>"
        '<p class="meta">Latency quantiles in the table are over ok ops; the plotted quantiles and '
        "rates are over every completion in each bucket.</p>"
    )
    data = {"figure": _nan_free(fig), "summary": _nan_free(summary)}
    write_text_atomic(out, page(f"{view.name} perf", body, _SCRIPT, data, css=_CSS), fsync=False)
    return out


def _nan_free(x: Any) -> Any:
    """NaN is not JSON: plotly reads null as a gap."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _nan_free(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_free(v) for v in x]
    return x


def render(run_dir: Path | str) -> Path:
    """Reads a run directory and writes its perf.html."""
    return render_perf(load_run(run_dir))
