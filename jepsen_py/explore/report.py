"""report.html of an explore: what it tried, how its coverage grew, what it found.

A search is read afterwards by someone who was not watching its live line: the page lists every
configuration tried (a table, newest last), plots the distinct coverage features against the
search's own time (a search whose curve has flattened has stopped learning), and gives each finding
with its shrunk schedule and how often it reproduced. One standalone file (plotly.js embedded, as
every picture in checkers/pictures/ is), written beside explore.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jepsen_py.checkers.pictures.plotpage import esc, page
from jepsen_py.explore.search import Search, Trial
from jepsen_py.store import write_text_atomic

REPORT_FILE = "report.html"
# Rows of the configurations table: a simulated search tries thousands; the plot keeps every trial.
MAX_ROWS = 2000


@dataclass
class TrialRow:
    """One trial as the page shows it."""

    n: int
    at_s: float  # search seconds (shrinking excluded) when it ended
    config: str
    wall_s: float
    features: int  # distinct features seen by the search after it
    new: int  # features it was the first to reach
    anomalies: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    unknown: bool = False  # no verdict


def trial_row(trial: Trial, search: Search, before: int, at_s: float) -> TrialRow:
    """`trial`'s row, the last `search` ran: `before` is the features the search had seen before it,
    `at_s` the search seconds when it ended."""
    return TrialRow(n=search.stats.tried, at_s=at_s, config=trial.config.label() if trial.config else "",
                    wall_s=trial.wall_seconds, features=search.stats.features,
                    new=search.stats.features - before, anomalies=dict(trial.anomalies),
                    error=trial.error, unknown=trial.unknown)


_CSS = """
#coverage { width: 100%; height: 360px; }
td.bad { color: #c8312e; font-weight: bold; }
td.err { color: #d98b14; }
pre { background: #f6f6f6; padding: 0.4em; font-size: 0.8em; max-height: 20em; overflow: auto; }
"""

_SCRIPT = """
const rows = DATA.trials;
const ok = rows.filter(r => !r.anomalies || Object.keys(r.anomalies).length === 0);
const bad = rows.filter(r => r.anomalies && Object.keys(r.anomalies).length > 0);
Plotly.newPlot('coverage', [
  {x: rows.map(r => r.at_s), y: rows.map(r => r.features), mode: 'lines+markers', name: 'distinct features',
   line: {shape: 'hv'}, marker: {size: 4}, text: rows.map(r => '#' + esc(r.n) + ' ' + esc(r.config)),
   hoverinfo: 'x+y+text'},
  {x: bad.map(r => r.at_s), y: bad.map(r => r.features), mode: 'markers', name: 'finding',
   marker: {size: 11, color: '#c8312e', symbol: 'x'},
   text: bad.map(r => esc(Object.keys(r.anomalies).join(', '))), hoverinfo: 'x+text'},
], {margin: {t: 20, r: 10}, xaxis: {title: 'search seconds (shrinking excluded)'},
    yaxis: {title: 'distinct coverage features', rangemode: 'tozero'}, showlegend: true},
  {displaylogo: false, responsive: true}).then(() => { document.body.dataset.rendered = '1'; });
"""


def _finding_html(i: int, f: dict[str, Any]) -> str:
    size = f.get("shrunk") or f.get("original") or {}
    parts = [f'<div class="finding" id="finding-{i}"><h3>finding {i}: {esc(f.get("kind"))}</h3>',
             "<table>"]
    tried = f.get("schedules_tried", 0)
    schedule = f.get("schedule_file")
    rows = [("found after", f"{f.get('found_after_s', 0):.1f} s ({tried} configurations)"),
            ("configuration", f.get("config", "")),
            ("all kinds", ", ".join(f"{k} x{v}" for k, v in (f.get("kinds") or {}).items())),
            ("shrunk to", ", ".join(f"{v} {k}" for k, v in size.items())),
            ("reproduction on replay", f.get("reproduction") or f.get("timing_rate") or "not measured"),
            ("schedule file", f.get("schedule_file") or ""),
            ("replay it", f"jepsen-py run --schedule {schedule}" if schedule else "")]
    for name, value in rows:
        parts.append(f"<tr><th>{esc(name)}</th><td><code>{esc(value)}</code></td></tr>")
    parts.append("</table>")
    for n in f.get("notes") or []:
        parts.append(f"<p class=\"meta\">{esc(n)}</p>")
    if f.get("schedule_text"):
        parts.append(f"<pre>{esc(f['schedule_text'])}</pre>")
    parts.append("</div>")
    return "".join(parts)


def render(summary: dict[str, Any], trials: list[TrialRow]) -> str:
    """The page for an explore's summary (what explore.json holds) and its trials."""
    findings = summary.get("findings") or []
    bugs = summary.get("bugs")
    head = (f"<h1>jepsen-py explore on {esc(summary.get('backend', ''))}</h1>"
            f"<p class=\"meta\">seed {esc(summary.get('seed'))}, budget {esc(summary.get('budget_s'))} s, "
            f"DB {esc(summary.get('db', ''))}, bugs "
            f"{esc(', '.join(map(str, bugs)) if isinstance(bugs, list) and bugs else bugs or 'none')}; "
            f"{esc(summary.get('schedules_tried', 0))} configurations, "
            f"{esc(summary.get('coverage_features', 0))} distinct features, {len(findings)} finding(s), "
            f"{esc(summary.get('errors', 0))} error(s)</p>")
    body = [head, "<h2>coverage over time</h2><div id=\"coverage\"></div>", "<h2>findings</h2>"]
    body += [_finding_html(i + 1, f) for i, f in enumerate(findings)] or ["<p>none</p>"]
    shown = trials[-MAX_ROWS:]
    body.append(f"<h2>configurations tried</h2><p class=\"meta\">{len(trials)} trial(s)"
                + (f", the last {len(shown)} listed" if len(shown) < len(trials) else "") + "</p>")
    body.append("<table id=\"trials\"><thead><tr><th>#</th><th>at s</th><th>configuration</th>"
                "<th>wall s</th><th>new features</th><th>features</th><th>anomalies</th></tr></thead><tbody>")
    for r in shown:
        kinds = ", ".join(f"{k} x{v}" for k, v in r.anomalies.items())
        cell = (f'<td class="bad">{esc(kinds)}</td>' if kinds else
                f'<td class="err">error: {esc(r.error)}</td>' if r.error else "<td></td>")
        body.append(f"<tr class=\"trial\"><td>{r.n}</td><td>{r.at_s:.1f}</td><td>{esc(r.config)}</td>"
                    f"<td>{r.wall_s:.1f}</td><td>{r.new}</td><td>{r.features}</td>{cell}</tr>")
    body.append("</tbody></table>")
    data = {"trials": [{"n": r.n, "at_s": round(r.at_s, 3), "features": r.features, "config": r.config,
                        "anomalies": r.anomalies} for r in trials]}
    return page("jepsen-py explore", "".join(body), _SCRIPT, data, css=_CSS)


def write(out_dir: Path, summary: dict[str, Any], trials: list[TrialRow]) -> Path:
    path = out_dir / REPORT_FILE
    write_text_atomic(path, render(summary, trials))
    return path
