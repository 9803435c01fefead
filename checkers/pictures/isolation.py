"""isolation.html: each dependency cycle the Elle checker found, drawn as a graph of transactions.

A cycle anomaly (checkers/elle's result: "cycle" lists the transactions, "steps" the edges between
them, each with its type ww / wr / rw / process / realtime, its key and why it exists) becomes an
SVG picture: the transactions on a circle in cycle order, each edge an arrow labelled with its type
and key, its sentence on hover and in a table below. Non-cycle anomalies (G1a, lost updates, ...)
are listed with their sentences. Plain SVG written here, no plotly: a cycle is a handful of nodes,
and a page that draws without any script still shows it when opened from disk anywhere.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jepsen_py.checkers.pictures.plotpage import BASE_CSS, esc, verdict_badge
from jepsen_py.checkers.pictures.runview import RunView, load_run

from jepsen_py.store import write_text_atomic

MAX_CYCLES = 40  # drawn per page; the checker keeps at most 20 examples per kind
MAX_OTHERS = 200  # non-cycle anomalies listed
EDGE_COLORS = {"ww": "#1f5fbf", "wr": "#2e9b4f", "rw": "#c8312e", "process": "#6a3d9a",
               "realtime": "#e8960c"}
EDGE_MEANING = {"ww": "write-write: the source's write came first in the version order",
                "wr": "write-read: the target read the source's write",
                "rw": "read-write (anti-dependency): the source read a version before the target's write",
                "process": "process order: the same process ran the source first",
                "realtime": "real-time order: the source completed before the target was invoked"}
_NODE_W, _NODE_H = 176, 46


@dataclass(slots=True)
class Drawn:
    """One anomaly found by one checker, and whether that checker's models prohibit its kind."""

    checker: str
    anomaly: dict[str, Any]
    prohibited: bool


def elle_results(results: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(checker name, result) for every Elle checker result in results.json (told apart by the
    fields only it reports)."""
    checkers = results.get("checkers") if isinstance(results.get("checkers"), dict) else {}
    return [(str(n), r) for n, r in (checkers or {}).items()
            if isinstance(r, dict) and "consistency_models" in r and "anomaly_types" in r]


def is_cycle(a: dict[str, Any]) -> bool:
    return (isinstance(a.get("cycle"), list) and isinstance(a.get("steps"), list) and bool(a["steps"])
            and all(isinstance(s, dict) for s in a["steps"]))


def found_in(results: dict[str, Any]) -> list[Drawn]:
    """Every anomaly of every Elle result: the prohibited ones first, then those the models allow."""
    out: list[Drawn] = []
    for name, res in elle_results(results):
        for field, prohibited in (("anomalies", True), ("other_anomalies", False)):
            out.extend(Drawn(name, a, prohibited) for a in res.get(field) or [] if isinstance(a, dict))
    out.sort(key=lambda d: not d.prohibited)
    return out


def _short(v: Any, n: int = 40) -> str:
    s = v if isinstance(v, str) else json.dumps(v, default=str, separators=(",", ":"))
    return s if len(s) <= n else s[: n - 1] + "…"


def _mop_text(m: Any) -> str:
    if isinstance(m, list) and len(m) == 3:
        f, k, v = m
        return f"{f} {_short(k, 16)} {_short(v, 24)}"
    return _short(m)


def _txn_label(t: dict[str, Any]) -> tuple[str, str, str]:
    """(name, one short line of its micro-ops, the whole transaction for hover)."""
    name = f"T{t.get('index', '?')}"
    mops = [_mop_text(m) for m in t.get("value") or []] if isinstance(t.get("value"), list) else []
    line = _short("; ".join(mops), 25)
    full = (f"{name}: process {t.get('process')}, {t.get('type')}, ops #{t.get('index')}"
            f"{' → #' + str(t['complete_index']) if t.get('complete_index') is not None else ''}\n"
            + "\n".join(mops))
    return name, line, full


def cycle_svg(j: int, anomaly: dict[str, Any]) -> str:
    """The cycle as SVG: transactions as boxes on a circle in cycle order, each step an arrow
    (bent to its own right, so the two edges of a 2-cycle do not overlap) labelled type and key."""
    e = esc
    txns = [t for t in anomaly["cycle"] if isinstance(t, dict)]
    steps = [s for s in anomaly["steps"] if isinstance(s, dict)]
    order = [t.get("index") for t in txns]
    for s in steps:  # transactions a step names but the cycle list does not (a damaged result)
        for end in (s.get("from"), s.get("to")):
            if end not in order:
                order.append(end)
                txns.append({"index": end})
    n = max(len(order), 1)
    radius = float(_NODE_W) if n == 2 else max(160.0, n * (_NODE_W + 70) / (2 * math.pi))
    pos: dict[Any, tuple[float, float]] = {}
    start = math.pi if n == 2 else -math.pi / 2  # two transactions side by side, else first at the top
    for i, idx in enumerate(order):
        a = start + 2 * math.pi * i / n
        pos[idx] = (radius * math.cos(a), radius * math.sin(a))
    # the picture's box: the nodes' plus room for the bent edges and their labels
    xs, ys = [p[0] for p in pos.values()], [p[1] for p in pos.values()]
    x0, x1 = min(xs) - _NODE_W / 2 - 30, max(xs) + _NODE_W / 2 + 30
    y0, y1 = min(ys) - _NODE_H / 2 - 80, max(ys) + _NODE_H / 2 + 80
    w, h = x1 - x0, y1 - y0
    pos = {k: (x - x0, y - y0) for k, (x, y) in pos.items()}
    parts = [f'<svg class="cycle" id="cycle-{j}" xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" '
             f'height="{h:.0f}" viewBox="0 0 {w:.0f} {h:.0f}" role="img" '
             f'aria-label="{e(str(anomaly.get("kind", "cycle")))} cycle of {len(order)} transactions">',
             "<defs>"]
    for kind, color in EDGE_COLORS.items():
        parts.append(f'<marker id="arrow-{j}-{kind}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                     f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
                     f'fill="{color}"/></marker>')
    parts.append("</defs>")
    for i, s in enumerate(steps):
        kind = str(s.get("type", ""))
        color = EDGE_COLORS.get(kind, "#555")
        (x1, y1), (x2, y2) = pos[s.get("from")], pos[s.get("to")]
        dx, dy = x2 - x1, y2 - y1
        length = math.hypot(dx, dy) or 1.0
        ux, uy = dx / length, dy / length
        # leave and enter at the boxes' borders, not their centres
        cut = min(length / 3, _box_cut(ux, uy))
        sx, sy, ex, ey = x1 + ux * cut, y1 + uy * cut, x2 - ux * cut, y2 - uy * cut
        bend = max(30.0, 0.18 * length if n > 2 else 0.3 * length)
        mx, my = (sx + ex) / 2 - uy * bend, (sy + ey) / 2 + ux * bend  # to the right of the direction
        lx, ly = (sx + 2 * mx + ex) / 4, (sy + 2 * my + ey) / 4  # the curve's midpoint
        label = kind + (f" {_short(s['key'], 18)}" if s.get("key") is not None else "")
        why = str(s.get("explanation", ""))
        parts.append(
            f'<g class="edge edge-{e(kind)}" id="edge-{j}-{i}" data-type="{e(kind)}" '
            f'data-from="{e(str(s.get("from")))}" data-to="{e(str(s.get("to")))}"><title>{e(why)}</title>'
            f'<path d="M{sx:.1f},{sy:.1f} Q{mx:.1f},{my:.1f} {ex:.1f},{ey:.1f}" fill="none" stroke="{color}" '
            f'stroke-width="2.5" marker-end="url(#arrow-{j}-{e(kind) if kind in EDGE_COLORS else "ww"})"/>'
            f'<text class="edge-label" x="{lx:.1f}" y="{ly:.1f}" text-anchor="middle" '
            f'dominant-baseline="middle" fill="{color}" stroke="white" stroke-width="4" '
            f'paint-order="stroke">{e(label)}</text></g>')
    for t in txns:
        x, y = pos[t.get("index")]
        name, line, full = _txn_label(t)
        fill = {"ok": "#eef3fb", "info": "#fdf1dc", "fail": "#fbe3e2"}.get(str(t.get("type")), "#f2f2f2")
        parts.append(
            f'<g class="txn" id="txn-{j}-{e(str(t.get("index")))}" data-index="{e(str(t.get("index")))}">'
            f"<title>{e(full)}</title>"
            f'<rect x="{x - _NODE_W / 2:.1f}" y="{y - _NODE_H / 2:.1f}" width="{_NODE_W}" height="{_NODE_H}" '
            f'rx="6" fill="{fill}" stroke="#333"/>'
            f'<text class="txn-name" x="{x:.1f}" y="{y - 7:.1f}" text-anchor="middle" font-weight="bold">'
            f'{e(name)} <tspan font-weight="normal" fill="#555">p{e(str(t.get("process", "?")))}</tspan>'
            "</text>"
            f'<text class="txn-mops" x="{x:.1f}" y="{y + 12:.1f}" text-anchor="middle" font-size="11" '
            f'font-family="monospace">{e(line)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _box_cut(ux: float, uy: float) -> float:
    """How far from a box's centre a ray in direction (ux, uy) leaves the box, plus a gap."""
    tx = (_NODE_W / 2) / abs(ux) if ux else math.inf
    ty = (_NODE_H / 2) / abs(uy) if uy else math.inf
    return min(tx, ty) + 6


def _key(d: dict[str, Any]) -> str:
    return esc(_short(d["key"], 30)) if d.get("key") is not None else ""


def _ops(v: Any) -> str:
    """An anomaly's "ops" as `#1, #2` (anything else a damaged result holds, as it is)."""
    if isinstance(v, list):
        return ", ".join(f"#{i}" for i in v)
    return "" if v is None else str(v)


def _steps_table(j: int, steps: list[dict[str, Any]]) -> str:
    e = esc
    rows = "".join(
        f'<tr class="step" data-edge="edge-{j}-{i}">'
        f'<td>T{e(str(s.get("from")))} → T{e(str(s.get("to")))}</td>'
        f'<td><span class="etype" style="color:{EDGE_COLORS.get(str(s.get("type")), "#555")}">'
        f'{e(str(s.get("type")))}</span></td><td><code>{_key(s)}'
        f"</code></td><td>{e(str(s.get('explanation', '')))}</td></tr>"
        for i, s in enumerate(steps))
    return f"<table><tr><th>edge</th><th>type</th><th>key</th><th>why it exists</th></tr>{rows}</table>"


def _cycle_section(j: int, d: Drawn) -> str:
    e = esc
    a = d.anomaly
    tag = ("prohibited by the models checked" if d.prohibited else
           "allowed by the models checked (reported, not failing)")
    return (
        f'<div class="anomaly {"prohibited" if d.prohibited else "allowed"}" id="anomaly-{j}">'
        f'<h2><span class="kind">{e(str(a.get("kind", "cycle")))}</span> · checker {e(d.checker)} · '
        f'{len(a["steps"])} edges · <span class="tag">{tag}</span></h2>'
        f'<div class="why">{e(str(a.get("explanation", "")))}</div>'
        f"{cycle_svg(j, a)}"
        f"{_steps_table(j, a['steps'])}</div>"
    )


def _others_table(others: list[Drawn]) -> str:
    e = esc
    rows = "".join(
        f'<tr class="other"><td class="kind">{e(str(d.anomaly.get("kind", "?")))}</td>'
        f"<td>{'prohibited' if d.prohibited else 'allowed'}</td><td>{e(d.checker)}</td>"
        f"<td><code>{_key(d.anomaly)}</code></td>"
        f"<td>{e(_ops(d.anomaly.get('ops')))}</td>"
        f"<td>{e(str(d.anomaly.get('explanation', '')))}</td></tr>"
        for d in others[:MAX_OTHERS])
    more = (f'<p class="meta">{len(others) - MAX_OTHERS} more not listed</p>'
            if len(others) > MAX_OTHERS else "")
    return ("<h2>Anomalies without a cycle</h2><table><tr><th>kind</th><th></th><th>checker</th><th>key</th>"
            f"<th>ops</th><th>what happened</th></tr>{rows}</table>{more}")


def totals(results: list[tuple[str, dict[str, Any]]], cycle_kinds: set[Any]) -> tuple[int, int]:
    """(cycles, other anomalies) found, by each result's anomaly_counts (the checker keeps only a
    few examples of each kind, so the examples alone undercount)."""
    n_cycles = n_others = 0
    for _, r in results:
        counts = r.get("anomaly_counts") if isinstance(r.get("anomaly_counts"), dict) else {}
        for kind, n in (counts or {}).items():
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                if kind in cycle_kinds:
                    n_cycles += n
                else:
                    n_others += n
    return n_cycles, n_others


def _summary(results: list[tuple[str, dict[str, Any]]]) -> str:
    e = esc
    out = []
    for name, r in results:
        counts = r.get("anomaly_counts") if isinstance(r.get("anomaly_counts"), dict) else {}
        found = ", ".join(f"{k} x{v}" for k, v in (counts or {}).items()) or "none"
        models = ", ".join(str(m) for m in r.get("consistency_models") or [])
        nots = ", ".join(str(m) for m in r.get("not") or [])
        badge = verdict_badge(r.get("valid", "unknown")).replace(' id="verdict"', "")
        out.append(f"<li>checker <b>{e(name)}</b> ({e(str(r.get('workload', '?')))}) under {e(models)}: "
                   f"{badge} · found {e(found)}"
                   + (f" · rules out {e(nots)}" if nots else "")
                   + (f" · unknown: {e(str(r['unknown_reason']))}" if r.get("unknown_reason") else "")
                   + "</li>")
    return f'<ul class="summary">{"".join(out)}</ul>'


_CSS = """
h2 { font-size: 1.05em; margin: 0.3em 0; }
.anomaly { border-top: 2px solid #c8312e; margin-top: 1em; padding-top: 0.4em; }
.anomaly.allowed { border-top-color: #d98b14; }
.kind { font-weight: bold; color: #b0007a; }
.tag { font-weight: normal; color: #555; font-size: 0.9em; }
.why { background: #fbe3e2; padding: 0.4em 0.7em; border-left: 4px solid #c8312e; margin: 0.4em 0;
       max-width: 70em; }
.allowed .why { background: #fdf1dc; border-left-color: #d98b14; }
svg.cycle { display: block; max-width: 100%; height: auto; font-size: 12px; }
svg.cycle .edge.lit path { stroke-width: 5; } svg.cycle .edge.lit text { font-weight: bold; }
tr.step.lit td { background: #fff6d6; }
.legend span { margin-right: 1.2em; }
"""

_SCRIPT = """
// hovering a row of a cycle's table lights its edge in the picture, and the other way round
for (const row of document.querySelectorAll('tr.step')) {
  const edge = document.getElementById(row.dataset.edge);
  if (!edge) continue;
  const on = () => { edge.classList.add('lit'); row.classList.add('lit'); };
  const off = () => { edge.classList.remove('lit'); row.classList.remove('lit'); };
  for (const el of [row, edge]) {
    el.addEventListener('mouseenter', on);
    el.addEventListener('mouseleave', off);
  }
}
document.body.dataset.rendered = String(performance.now());
"""


def render_isolation(view: RunView, out: Path | None = None) -> Path | None:
    """Writes isolation.html when results.json has an Elle result with anomalies; else None."""
    found = found_in(view.results)
    if not found:
        return None
    out = out or view.run_dir / "isolation.html"
    cycles = [d for d in found if is_cycle(d.anomaly)]
    others = [d for d in found if not is_cycle(d.anomaly)]
    drawn = cycles[:MAX_CYCLES]
    n_cycles, n_others = totals(elle_results(view.results), {d.anomaly.get("kind") for d in cycles})
    shown = min(len(others), MAX_OTHERS)
    listed = f" ({shown} listed)" if n_others > shown else ""
    e = esc
    legend = "".join(f'<span title="{e(EDGE_MEANING[k])}" style="color:{c}">━▶ {k}</span>'
                     for k, c in EDGE_COLORS.items())
    body = (
        f"<h1>{e(view.name)} — isolation anomalies {verdict_badge(view.results.get('valid', 'unknown'))}</h1>"
        f'<div class="meta">run {e(view.run_dir.name)} · {n_cycles} dependency cycle(s)'
        f"{f' ({len(drawn)} drawn)' if n_cycles > len(drawn) else ''} · "
        f"{n_others} other anomalies{listed}"
        f' · <a href="timeline.html">timeline</a> (the transactions are '
        "highlighted there) · boxes are transactions (T + the invocation's op number, p + process), "
        "arrows the dependencies that order them; hover an arrow for why it exists</div>"
        f'<div class="meta legend">{legend}</div>'
        f"{_summary(elle_results(view.results))}"
        + "".join(_cycle_section(j, d) for j, d in enumerate(drawn))
        + (_others_table(others) if others else "")
    )
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(view.name)} isolation</title><style>{BASE_CSS}{_CSS}</style></head>"
            f"<body>{body}<script>\"use strict\";{_SCRIPT}</script></body></html>\n")
    write_text_atomic(out, page, fsync=False)
    return out


def render(run_dir: Path | str) -> Path | None:
    """Reads a run directory and writes its isolation.html (None: nothing to show)."""
    return render_isolation(load_run(run_dir))
