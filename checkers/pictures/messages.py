"""messages.html: the message flow of a `--backend maelstrom` run, as Maelstrom's messages.svg.

A spacetime diagram: every client and node is a vertical line, time runs down, and each message is an
arrow from its send time on the sender's line to its delivery time on the receiver's line. A message a
partition dropped ends in a red x where the router dropped it; one sent to a node that was down ends
in a grey x; one still in flight when the nodes stopped runs to the end of the run. Hovering a message
shows its src, dest, ids, times and body. Faults are shaded across all lines.

Drawn from the run's messages.json (the router's journal, written by the maelstrom world: the first
20,000 messages, the rest counted); a run without one (any other backend) gets no page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from jepsen_py.checkers.pictures.plotpage import esc, page
from jepsen_py.checkers.pictures.runview import RunView, load_run

from jepsen_py.errors import BadInput
from jepsen_py.maelstrom.journal import MESSAGES_FILE
from jepsen_py.store import read_json, write_text_atomic

OUTCOMES = ("delivered", "dropped", "lost", "in-flight")
_CLIENT = re.compile(r"c([0-9]+)")
_NODE = re.compile(r"n([0-9]+)")


def _lane_key(name: str, nodes: list[str]) -> tuple[int, int, str]:
    """Clients (c0, c1, ...) left, then the nodes in their order, then anything else (services)."""
    if (m := _CLIENT.fullmatch(name)) is not None:
        return (0, int(m.group(1)), name)
    if name in nodes:
        return (1, nodes.index(name), name)
    if (m := _NODE.fullmatch(name)) is not None:
        return (1, len(nodes) + int(m.group(1)), name)
    return (2, 0, name)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _id(v: Any) -> int | str | None:
    return v if v is None or isinstance(v, int | str) else str(v)


def message_data(journal: dict[str, Any], view: RunView) -> dict[str, Any]:
    """What the page draws: the lanes, each message as [src lane, dest lane, sent, landed, outcome,
    type, msg_id, in_reply_to, body], the fault windows and the run's end, all in seconds."""
    nodes = [str(n) for n in journal.get("nodes") or []]
    raw = journal.get("messages")
    if not isinstance(raw, list):
        raise BadInput(f"{view.run_dir / MESSAGES_FILE}: no list of messages")
    kept = []
    for m in raw:
        if not isinstance(m, dict) or _num(m.get("sent")) is None:
            continue
        outcome = m.get("outcome") if m.get("outcome") in OUTCOMES else "in-flight"
        kept.append((str(m.get("src")), str(m.get("dest")), _num(m.get("sent")), _num(m.get("landed")),
                     outcome, str(m.get("type")), _id(m.get("msg_id")), _id(m.get("in_reply_to")),
                     str(m.get("body", ""))))
    lanes = sorted({*nodes, *(k[0] for k in kept), *(k[1] for k in kept)}, key=lambda n: _lane_key(n, nodes))
    index = {n: i for i, n in enumerate(lanes)}
    times = [t for k in kept for t in (k[2], k[3]) if t is not None]
    end = max([view.end_time, *times], default=0.0)
    rows = [[index[src], index[dest], sent, landed, *rest] for src, dest, sent, landed, *rest in kept]
    faults = [[w.start, w.end if w.end is not None else end, w.label] for w in view.faults]
    counts = {o: sum(1 for k in kept if k[4] == o) for o in OUTCOMES}
    return {"lanes": lanes, "nodes": nodes, "messages": rows, "faults": faults, "end": end,
            "start": min([0.0, *times]), "counts": counts,
            "unrecorded": int(_num(journal.get("unrecorded")) or 0), "limit": journal.get("limit")}


_SCRIPT = r"""
const gd = document.getElementById('messages');
const L = DATA.lanes, nodes = new Set(DATA.nodes);
const isClient = n => /^c[0-9]+$/.test(n);
const STYLE = {
  client: {name: 'client \u2194 node', color: '#1f77b4', dash: 'solid', symbol: 'arrow'},
  server: {name: 'node \u2194 node', color: '#2ca02c', dash: 'solid', symbol: 'arrow'},
  service: {name: 'service', color: '#9467bd', dash: 'solid', symbol: 'arrow'},
  dropped: {name: 'dropped (partition)', color: '#c8312e', dash: 'dot', symbol: 'x-thin-open'},
  lost: {name: 'lost (node down)', color: '#7f7f7f', dash: 'dot', symbol: 'x-thin-open'},
  'in-flight': {name: 'in flight at the end', color: '#bbbbbb', dash: 'dash', symbol: 'circle-open'},
};
const traces = {};
const wrap = s => { const out = []; for (let i = 0; i < s.length; i += 90) out.push(esc(s.slice(i, i + 90)));
                    return out.join('<br>'); };
for (const [s, d, sent, landed, outcome, type, id, reply, body] of DATA.messages) {
  const src = L[s], dest = L[d];
  let kind = outcome;
  if (outcome === 'delivered') {
    kind = (isClient(src) || isClient(dest)) ? 'client' : (nodes.has(src) && nodes.has(dest)) ? 'server'
         : 'service';
  }
  const t = traces[kind] || (traces[kind] = {x: [], y: [], text: [], size: []});
  const end = landed === null ? DATA.end : landed;
  const ids = (id === null ? '' : ` msg_id ${esc(id)}`) +
    (reply === null ? '' : ` in_reply_to ${esc(reply)}`);
  const when = landed === null ? 'never landed' :
    `${outcome} ${landed.toFixed(4)} s (${((landed - sent) * 1000).toFixed(2)} ms)`;
  const text = `<b>${esc(type)}</b> ${esc(src)} \u2192 ${esc(dest)}${ids}<br>` +
    `sent ${sent.toFixed(4)} s \u00b7 ${when}<br>body: ${wrap(body)}`;
  t.x.push(s, d, null); t.y.push(sent, end, null); t.text.push(text, text, null);
  t.size.push(0, outcome === 'delivered' ? 10 : 12, 0);
}
const data = Object.keys(STYLE).filter(k => traces[k]).map(k => ({
  type: 'scatter', mode: 'lines+markers', name: STYLE[k].name, x: traces[k].x, y: traces[k].y,
  text: traces[k].text, hovertemplate: '%{text}<extra></extra>', connectgaps: false, cliponaxis: false,
  line: {color: STYLE[k].color, width: 1, dash: STYLE[k].dash},
  marker: {symbol: STYLE[k].symbol, angleref: 'previous', size: traces[k].size, color: STYLE[k].color,
           line: {color: STYLE[k].color, width: 2}},
}));
const shapes = L.map((_, i) => ({type: 'line', xref: 'x', yref: 'paper', x0: i, x1: i, y0: 0, y1: 1,
                                 line: {color: '#888', width: 1}, layer: 'below'}));
const annotations = [];
DATA.faults.forEach(([a, b, label], i) => {
  shapes.push({type: 'rect', xref: 'paper', yref: 'y', x0: 0, x1: 1, y0: a, y1: b,
               fillcolor: 'rgba(200,49,46,0.10)', line: {width: 0}, layer: 'below'});
  annotations.push({xref: 'paper', x: 1, xanchor: 'left', yref: 'y', y: a, yanchor: 'top',
                    text: esc(label), showarrow: false, font: {size: 10, color: '#7a1512'}});
});
const layout = {
  margin: {l: 70, r: 180, t: 40, b: 20}, hovermode: 'closest', showlegend: true, shapes, annotations,
  legend: {orientation: 'h', x: 0, y: -0.01, yanchor: 'top'},
  xaxis: {tickvals: L.map((_, i) => i), ticktext: L.map(esc), side: 'top', range: [-0.5, L.length - 0.5],
          showgrid: false, zeroline: false, fixedrange: true},
  yaxis: {title: {text: 'seconds since the test started'}, range: [DATA.end + 0.01, DATA.start - 0.01],
          zeroline: false},
};
Plotly.newPlot(gd, data, layout, {responsive: true, displaylogo: false, scrollZoom: true}).then(() => {
  document.body.dataset.rendered = String(performance.now());
});
"""

_CSS = "#messages { width: 100%; height: 85vh; min-height: 600px; }"


def render_messages(view: RunView, out: Path | None = None) -> Path | None:
    """Writes messages.html from the run's messages.json; None (nothing written) without one."""
    source = view.run_dir / MESSAGES_FILE
    if not source.is_file():
        return None
    journal = read_json(source)
    if not isinstance(journal, dict):
        raise BadInput(f"{source}: expected a JSON object, got {type(journal).__name__}")
    data = message_data(journal, view)
    out = out or view.run_dir / "messages.html"
    c = data["counts"]
    more = (f" · the first {len(data['messages'])} drawn, {data['unrecorded']} later ones only counted"
            if data["unrecorded"] else "")
    body = (
        f"<h1>{esc(view.name)} — messages</h1>"
        f'<div class="meta" id="counts">run {esc(view.run_dir.name)} · {c["delivered"]} delivered · '
        f'{c["dropped"]} dropped by partitions · {c["lost"]} lost to stopped nodes · '
        f'{c["in-flight"]} in flight at the end{esc(more)} · <a href="timeline.html">timeline</a> · '
        '<a href="perf.html">perf</a></div>'
        '<div id="messages"></div>'
        '<p class="meta">Each line is a client or node, time runs down; an arrow goes from a message\'s '
        "send on its sender's line to its delivery on its receiver's. An x marks where a partition "
        "dropped a message (red) or where it found its node down (grey). Hover a message's ends for "
        "its body.</p>"
    )
    write_text_atomic(out, page(f"{view.name} messages", body, _SCRIPT, data, css=_CSS), fsync=False)
    return out


def render(run_dir: Path | str) -> Path | None:
    """Reads a run directory and writes its messages.html (None: the run has no messages.json)."""
    return render_messages(load_run(run_dir))
