"""timeline.html: the history as a person reads it, one lane per process (or per node).

Each op is a bar from invoke to completion coloured ok / fail / info; faults are shaded bands;
below the ops, every node's role and term over time from the observer (a zombie leader is a big
magenta star); the ops a checker flagged are drawn over everything with the checker's explanation.

The page ships the history as compact column arrays and builds WebGL (scattergl) traces in the
browser, so 100,000 ops stay a few MB and open in well under 3 s; filtering by key and switching the
lane grouping re-draw from those arrays without a round trip.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jepsen_py.checkers.pictures.isolation import found_in
from jepsen_py.checkers.pictures.linearizability import failures_in
from jepsen_py.checkers.pictures.plotpage import esc, page, verdict_badge
from jepsen_py.checkers.pictures.runview import NS, RunView, load_run, pair_type

from jepsen_py.history import NEMESIS
from jepsen_py.store import write_text_atomic

_TYPE_CODE = {"ok": 0, "fail": 1, "info": 2}
_VALUE_CHARS = 80


def _short(v: Any) -> str:
    if v is None:
        return ""
    s = v if isinstance(v, str) else json.dumps(v, default=str, separators=(",", ":"))
    return s if len(s) <= _VALUE_CHARS else s[: _VALUE_CHARS - 1] + "…"


class _Interner:
    """Maps repeated strings (f names, keys, nodes) to small ints so the page stays small."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.items: list[str] = []

    def __call__(self, s: str | None) -> int:
        if s is None:
            return -1
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i


def _key_str(k: Any) -> str | None:
    if k is None:
        return None
    if isinstance(k, list | tuple):
        return "/".join(str(x) for x in k)
    return str(k)


def timeline_data(view: RunView) -> dict[str, Any]:
    """The column arrays and tables the page script draws from."""
    fs, keys, nodes, procs, roles = _Interner(), _Interner(), _Interner(), _Interner(), _Interner()
    names = ("t0", "t1", "ty", "p", "f", "k", "v", "n", "term", "role", "i", "c", "err")
    cols: dict[str, list[Any]] = {k: [] for k in names}
    row_of: dict[int, int] = {}
    end = view.end_time
    for pr in view.client_pairs + view.nemesis_pairs:
        inv, comp = pr.invoke, pr.complete
        r = len(cols["t0"])
        row_of[inv.index] = r
        if comp is not None:
            row_of[comp.index] = r
        meta = comp.meta if comp is not None and isinstance(comp.meta, dict) else {}
        value = comp.value if comp is not None and comp.value is not None else inv.value
        node = (comp.node if comp is not None and comp.node else None) or inv.node
        cols["t0"].append(round(inv.time / NS, 6))
        cols["t1"].append(round(comp.time / NS, 6) if comp is not None else round(end, 6))
        cols["ty"].append(_TYPE_CODE[pair_type(pr)])
        cols["p"].append(procs(str(inv.process)))
        cols["f"].append(fs(inv.f))
        cols["k"].append(keys(_key_str(inv.key)))
        cols["v"].append(_short(value))
        cols["n"].append(nodes(str(node)) if node else -1)
        term = meta.get("term")
        cols["term"].append(term if isinstance(term, int) and not isinstance(term, bool) else None)
        cols["role"].append(roles(str(meta["role"])) if meta.get("role") else -1)
        cols["i"].append(inv.index)
        cols["c"].append(comp.index if comp is not None else -1)
        err = comp.error if comp is not None else "never completed"
        cols["err"].append(_short(err) if err is not None else "")

    def proc_order(p: str) -> tuple[int, int | str]:
        if p == NEMESIS:
            return (0, 0)
        try:
            return (1, int(p))
        except ValueError:  # a name ("--5" and "²" too: isdigit is no test for int)
            return (2, p)

    lanes = sorted(procs.items, key=proc_order)
    node_names = sorted({s.node for s in view.samples} | set(nodes.items))
    for n in node_names:
        nodes(n)
    sample_cols: dict[str, list[Any]] = {k: [] for k in ("t", "n", "role", "term", "leader", "z")}
    sample_row: dict[int, int] = {}
    for s in view.samples:
        sample_row[s.index] = len(sample_cols["t"])
        sample_cols["t"].append(round(s.time, 6))
        sample_cols["n"].append(nodes(s.node))
        sample_cols["role"].append(s.role)
        sample_cols["term"].append(s.term)
        sample_cols["leader"].append(s.leader or "")
        sample_cols["z"].append(1 if s.zombie else 0)
    anomalies = [
        {"checker": a.checker, "kind": a.kind, "ops": a.ops, "explanation": a.explanation,
         "rows": sorted({row_of[i] for i in a.ops if i in row_of}),
         "samples": sorted({sample_row[i] for i in a.ops if i in sample_row})}
        for a in view.anomalies
    ]
    return {
        "ops": cols,
        "fs": fs.items,
        "keys": keys.items,
        "nodes": nodes.items,
        "node_lanes": node_names,
        "procs": procs.items,
        "lanes": lanes,
        "roles": roles.items,
        "samples": sample_cols,
        "faults": [{"start": w.start, "end": w.end, "f": w.f, "label": w.label, "detail": w.detail}
                   for w in view.faults],
        "anomalies": anomalies,
        "end": end,
    }


_CSS = """
#plot { width: 100%; height: 82vh; min-height: 520px; }
#anomalies li { margin: 0.25em 0; cursor: pointer; }
#anomalies li:hover { background: #fbe7f6; }
.akind { font-weight: bold; color: #b0007a; }
"""

_SCRIPT = (Path(__file__).with_name("timeline.js")).read_text(encoding="utf-8")


def render_timeline(view: RunView, out: Path | None = None) -> Path:
    """Writes timeline.html for a loaded run; returns its path."""
    out = out or view.run_dir / "timeline.html"
    data = timeline_data(view)
    valid = view.results.get("valid", "unknown") if view.results else "unknown"
    t = view.test
    nem = t.get("nemesis")
    nem_s = ",".join(map(str, nem)) if isinstance(nem, list) else str(nem or "")
    bugs = t.get("bugs")
    bugs_s = ",".join(map(str, bugs)) if isinstance(bugs, list) and bugs else "none"
    n_client = len(view.client_pairs)
    lin_link = (' · <a href="linearizability.html" id="failure-view">linearizability failure view</a>'
                if failures_in(view.results) else "")
    if found_in(view.results):
        lin_link += (' · <a href="isolation.html" id="isolation-view">isolation anomalies '
                     "(dependency cycles)</a>")
    body = (
        f"<h1>{esc(view.name)} — timeline {verdict_badge(valid)}</h1>"
        f'<div class="meta">run {esc(view.run_dir.name)} · workload '
        f"{esc(t.get('workload', '?'))} · nemesis {esc(nem_s or 'none')} · bugs "
        f"{esc(bugs_s)} · {n_client} client ops · {len(view.faults)} faults · "
        f"{len(view.samples)} observer samples · <a href=\"perf.html\">perf</a>{lin_link}</div>"
        '<div class="controls"><label>key <select id="key-filter"><option value="">all keys</option>'
        '</select></label><label>lanes <select id="group-by"><option value="process">per process'
        '</option><option value="node">per node</option></select></label>'
        "<span class=\"meta\">drag to zoom, shift-drag or scroll to pan, double-click to reset</span></div>"
        '<div id="plot"></div>'
        '<h2 style="font-size:1.05em">Anomalies (<span id="anomaly-count">0</span>)</h2>'
        '<ul id="anomalies"></ul>'
    )
    write_text_atomic(out, page(f"{view.name} timeline", body, _SCRIPT, data, css=_CSS), fsync=False)
    return out


def render(run_dir: Path | str) -> Path:
    """Reads a run directory and writes its timeline.html."""
    return render_timeline(load_run(run_dir))
