"""The aggregate dashboard: one self-contained plotly HTML page (plotly.js inlined, works offline).

Charts: detection rate per bug and nemesis, availability and longest outage per group, latency
percentiles per group, anomalies by kind, trends per day, and the summary table. Every name from the
runs (workloads, nemeses, bugs, versions, anomaly kinds) reaches plotly through plotly_text: plotly
reads tags in trace names, tick labels and table cells.
"""

from __future__ import annotations

import html
from collections import defaultdict
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from jepsen_py.checkers.pictures.plotpage import plotly_text
from jepsen_py.spark.schema import NO_BUG, group_label
from plotly.offline import get_plotlyjs

from jepsen_py.files import make_dirs
from jepsen_py.store import write_text


def _label(r: dict[str, Any]) -> str:
    return plotly_text(group_label(r))


def _fig_html(fig: go.Figure) -> str:
    fig.update_layout(template="plotly_white", margin={"l": 60, "r": 20, "t": 50, "b": 120}, height=420)
    return fig.to_html(full_html=False, include_plotlyjs=False)


def detection_figure(summary: list[dict[str, Any]]) -> go.Figure:
    fig = go.Figure()
    by_nemesis: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in summary:
        if r["bug"] != NO_BUG:
            by_nemesis[r["nemesis"]].append(r)
    for nemesis, rows in sorted(by_nemesis.items()):
        fig.add_bar(
            name=plotly_text(nemesis),
            x=[plotly_text(f"{r['bug']} ({r['workload']}, {r['read_mode']}, {r['version']})") for r in rows],
            y=[r["detection_rate"] for r in rows],
            text=[f"{r['invalid_runs']}/{r['runs']}" for r in rows],
        )
    fig.update_layout(title="Detection rate: runs with a bug judged invalid", barmode="group",
                      yaxis={"tickformat": ".0%", "range": [0, 1]})
    return fig


def availability_figure(summary: list[dict[str, Any]]) -> go.Figure:
    labels = [_label(r) for r in summary]
    fig = go.Figure()
    fig.add_bar(name="availability (ok fraction)", x=labels, y=[r["availability"] for r in summary])
    fig.add_scatter(name="longest unavailable (s)", x=labels, y=[r["longest_unavailable_s"] for r in summary],
                    mode="markers", yaxis="y2", marker={"size": 10, "symbol": "diamond"})
    fig.update_layout(title="Availability and longest stretch without an ok",
                      yaxis={"tickformat": ".0%", "range": [0, 1]},
                      yaxis2={"overlaying": "y", "side": "right", "title": "seconds"})
    return fig


def latency_figure(summary: list[dict[str, Any]]) -> go.Figure:
    labels = [_label(r) for r in summary]
    fig = go.Figure()
    for p in ("p50", "p95", "p99"):
        fig.add_bar(name=p, x=labels, y=[r[f"latency_{p}_ms"] for r in summary])
    fig.update_layout(title="Latency of ok client ops (ms)", barmode="group", yaxis={"type": "log"})
    return fig


def anomalies_figure(summary: list[dict[str, Any]]) -> go.Figure:
    labels = [_label(r) for r in summary]
    kinds = sorted({k for r in summary for k in (r.get("anomalies") or {})})
    fig = go.Figure()
    for k in kinds:
        fig.add_bar(name=plotly_text(k), x=labels, y=[(r.get("anomalies") or {}).get(k, 0) for r in summary])
    fig.update_layout(title="Anomalies by kind", barmode="stack")
    return fig


def trends_figure(trends: list[dict[str, Any]]) -> go.Figure:
    """Per day: detection rate of the runs with a bug, and availability of all runs, per nemesis."""
    det: dict[str, dict[Any, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    avail: dict[str, dict[Any, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r in trends:
        day = r["start_day"]
        if r["bug"] != NO_BUG:
            d = det[r["nemesis"]][day]
            d[0] += r["invalid_runs"]
            d[1] += r["runs"]
        a = avail[r["nemesis"]][day]
        a[0] += r["ok_ops"] or 0
        a[1] += r["client_invokes"] or 0
    fig = go.Figure()
    for nemesis, days in sorted(det.items()):
        xs = sorted(days)
        fig.add_scatter(name=plotly_text(f"detection, {nemesis}"), x=xs,
                        y=[days[x][0] / days[x][1] for x in xs], mode="lines+markers")
    for nemesis, days in sorted(avail.items()):
        xs = sorted(days)
        fig.add_scatter(name=plotly_text(f"availability, {nemesis}"), x=xs,
                        y=[days[x][0] / days[x][1] if days[x][1] else None for x in xs],
                        mode="lines", line={"dash": "dot"})
    fig.update_layout(title="Trends by day", yaxis={"tickformat": ".0%", "range": [0, 1.05]})
    return fig


def table_figure(summary: list[dict[str, Any]]) -> go.Figure:
    def f(v: Any, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    cols = {
        "workload": [r["workload"] for r in summary],
        "nemesis": [r["nemesis"] for r in summary],
        "bug": [r["bug"] for r in summary],
        "reads": [r["read_mode"] for r in summary],
        "targets": [r["fault_targets"] for r in summary],
        "schedule": [r["nemesis_schedule"] for r in summary],
        "version": [r["version"] for r in summary],
        "runs": [r["runs"] for r in summary],
        "valid/invalid/unknown": [
            f"{r['valid_runs']}/{r['invalid_runs']}/{r['unknown_runs'] + r['unchecked_runs']}"
            for r in summary
        ],
        "detection": [f(r["detection_rate"], ".0%") for r in summary],
        "anomalies": [" ".join(f"{k}:{v}" for k, v in sorted((r.get("anomalies") or {}).items())) or "-"
                      for r in summary],
        "p50/p95/p99 ms": [
            f"{f(r['latency_p50_ms'], '.1f')}/{f(r['latency_p95_ms'], '.1f')}/{f(r['latency_p99_ms'], '.1f')}"
            for r in summary
        ],
        "ok/s": [f(r["throughput"], ".0f") for r in summary],
        "availability": [f(r["availability"], ".1%") for r in summary],
        "longest gap s": [f(r["longest_unavailable_s"], ".2f") for r in summary],
    }
    cells = [[plotly_text(v) for v in col] for col in cols.values()]
    fig = go.Figure(go.Table(header={"values": list(cols)}, cells={"values": cells}))
    fig.update_layout(title="Summary", height=max(300, 60 + 28 * len(summary)))
    return fig


def write_dashboard(
    path: Path, summary: list[dict[str, Any]], trends: list[dict[str, Any]], runs: list[dict[str, Any]]
) -> Path:
    """Writes the dashboard page; returns its path."""
    figs = [detection_figure(summary), availability_figure(summary), latency_figure(summary),
            anomalies_figure(summary), trends_figure(trends)]
    parts = [_fig_html(f) for f in figs]
    table = table_figure(summary)
    table.update_layout(template="plotly_white")
    parts.append(table.to_html(full_html=False, include_plotlyjs=False))
    n_ops = sum(r.get("invokes") or 0 for r in runs)
    head = (f"{len(runs)} runs, {n_ops:,} client ops, {len(summary)} groups "
            "(workload x nemesis x bug x read mode x fault targets x schedule x version)")
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>jepsen-py aggregate</title>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script>"
        "<style>body{font-family:sans-serif;margin:20px}</style></head><body>"
        f"<h1>jepsen-py aggregate</h1><p>{html.escape(head)}</p>"
        + "".join(f"<div class='chart'>{p}</div>" for p in parts)
        + "</body></html>"
    )
    path = Path(path)
    make_dirs(path.parent)
    write_text(path, page)
    return path
