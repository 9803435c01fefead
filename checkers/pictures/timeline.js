// timeline.html's page script: builds WebGL traces from the column arrays in DATA (see timeline.py).
// Every string in DATA comes from the history or a checker: it reaches plotly only through esc (from
// plotpage.page) and the DOM only through textContent.
const MARKS = {parsed: performance.now()};
const O = DATA.ops, N = O.t0.length;
const TYPES = ['ok', 'fail', 'info'];
const COLORS = {ok: '#2e9b4f', fail: '#c8312e', info: '#e8960c'};
const ROLE_STYLE = {leader: ['#1f5fbf', 'diamond', 9], follower: ['#9a9a9a', 'circle', 5],
                    candidate: ['#e8960c', 'triangle-up', 7], 'pre-candidate': ['#f2c37a', 'triangle-up', 6],
                    unreachable: ['#000000', 'x', 6]};
const anomalousRow = new Uint8Array(N);
for (const a of DATA.anomalies) for (const r of a.rows) anomalousRow[r] = 1;
const procLane = new Map(DATA.lanes.map((p, i) => [p, i]));
const procOfRow = i => DATA.procs[O.p[i]];

function hoverFor(i) {
  const lat = (O.t1[i] - O.t0[i]) * 1000;
  const key = O.k[i] >= 0 ? DATA.keys[O.k[i]] : '';
  const node = O.n[i] >= 0 ? DATA.nodes[O.n[i]] : '';
  let s = '<b>' + esc(DATA.fs[O.f[i]]) + '</b> ' + esc(key) + ' = ' + esc(O.v[i]) +
          '<br>' + TYPES[O.ty[i]] + (O.err[i] ? ' (' + esc(O.err[i]) + ')' : '') +
          '<br>process ' + esc(procOfRow(i)) + (node ? ', node ' + esc(node) : '');
  if (O.role[i] >= 0) s += ', ' + esc(DATA.roles[O.role[i]]);
  if (O.term[i] !== null) s += ', term ' + O.term[i];
  s += '<br>latency ' + lat.toFixed(2) + ' ms' + (O.c[i] < 0 ? ' (never completed)' : '') +
       '<br>ops #' + O.i[i] + (O.c[i] >= 0 ? ' → #' + O.c[i] : '');
  return s;
}

function laneY(i, groupBy) {
  if (groupBy === 'node') {
    const n = O.n[i] >= 0 ? DATA.nodes[O.n[i]] : null;
    const proc = procOfRow(i);
    if (proc === 'nemesis') return -1;
    const base = n === null ? DATA.node_lanes.length : DATA.node_lanes.indexOf(n);
    const slot = (O.p[i] * 7919) % 9;  // spread a node's concurrent ops across its lane
    return base + slot / 11;
  }
  return procLane.get(procOfRow(i));
}

// Above this many ops in view, ops of one lane and type closer than two pixels merge into one bar
// (hover says how many); zooming in redraws the visible range at full detail.
const DETAIL_LIMIT = 12000;
const anomalyRows = [];
for (let i = 0; i < N; i++) if (anomalousRow[i]) anomalyRows.push(i);

function opTraces(keyFilter, groupBy, range, pxWidth) {
  const [x0, x1] = range;
  const vis = [];
  for (let i = 0; i < N; i++) {
    if (O.t1[i] < x0 || O.t0[i] > x1) continue;
    if (keyFilter !== null && O.k[i] !== keyFilter && procOfRow(i) !== 'nemesis') continue;
    vis.push(i);
  }
  const detailed = vis.length <= DETAIL_LIMIT;
  const seg = [[[], []], [[], []], [[], []]];
  const pts = [[[], [], []], [[], [], []], [[], [], []]];  // x, y, hover text
  const ys = new Float64Array(N);  // lane of each visible row
  for (const i of vis) ys[i] = laneY(i, groupBy);
  if (detailed) {
    for (const i of vis) {
      const ty = O.ty[i], y = ys[i];
      seg[ty][0].push(O.t0[i], O.t1[i], null); seg[ty][1].push(y, y, null);
      pts[ty][0].push(O.t1[i]); pts[ty][1].push(y); pts[ty][2].push(hoverFor(i));
    }
  } else {
    const gap = 2 * (x1 - x0) / Math.max(pxWidth, 100);
    const flush = (ty, y, m) => {
      seg[ty][0].push(m[0], m[1], null); seg[ty][1].push(y, y, null);
      pts[ty][0].push(m[1]); pts[ty][1].push(y);
      pts[ty][2].push(m[2] === 1 ? hoverFor(m[3]) : '<b>' + m[2] + ' ' + TYPES[ty] + ' ops</b> merged at this zoom<br>' +
        m[0].toFixed(3) + ' s to ' + m[1].toFixed(3) + ' s<br>zoom in to see each op');
    };
    // rows arrive in invocation order, so each lane's rows are already sorted by start time
    const byLane = new Map();
    for (const i of vis) {
      let rows = byLane.get(ys[i]);
      if (!rows) byLane.set(ys[i], rows = []);
      rows.push(i);
    }
    for (const [y, rows] of byLane) {
      const open = [null, null, null];  // per type: [start, end, count, firstRow]
      for (const i of rows) {
        const ty = O.ty[i], m = open[ty];
        if (m && O.t0[i] - m[1] <= gap) { if (O.t1[i] > m[1]) m[1] = O.t1[i]; m[2]++; continue; }
        if (m) flush(ty, y, m);
        open[ty] = [O.t0[i], O.t1[i], 1, i];
      }
      for (const ty of [0, 1, 2]) if (open[ty]) flush(ty, y, open[ty]);
    }
  }
  const traces = [];
  for (const ty of [0, 2, 1]) {  // fail drawn last: on top of merged ok bars
    const name = TYPES[ty];
    traces.push({type: 'scattergl', mode: 'lines', name: name, legendgroup: name, x: seg[ty][0],
                 y: seg[ty][1], line: {color: COLORS[name], width: detailed || ty === 0 ? 4 : 2}, hoverinfo: 'skip',
                 xaxis: 'x', yaxis: 'y', connectgaps: false});
    traces.push({type: 'scattergl', mode: 'markers', name: name + ' (completion)', legendgroup: name,
                 showlegend: false, x: pts[ty][0], y: pts[ty][1], text: pts[ty][2],
                 hovertemplate: '%{text}<extra></extra>',
                 marker: {color: COLORS[name], size: 5, symbol: 'line-ns-open', line: {width: 2, color: COLORS[name]}},
                 xaxis: 'x', yaxis: 'y'});
  }
  const an = [[], []], anPts = [[], [], []];
  for (const i of anomalyRows) {
    if (keyFilter !== null && O.k[i] !== keyFilter) continue;
    const y = laneY(i, groupBy);
    an[0].push(O.t0[i], O.t1[i], null); an[1].push(y, y, null);
    anPts[0].push((O.t0[i] + O.t1[i]) / 2); anPts[1].push(y);
    const which = DATA.anomalies.filter(a => a.rows.includes(i));
    anPts[2].push(which.map(a => '<b>' + esc(a.kind) + '</b> (' + esc(a.checker) + '): ' +
                  wrap(esc(a.explanation))).join('<br>') + '<br>' + hoverFor(i));
  }
  traces.push({type: 'scattergl', mode: 'lines', name: 'anomaly', legendgroup: 'anomaly', x: an[0], y: an[1],
               line: {color: '#e0007f', width: 9}, opacity: 0.55, hoverinfo: 'skip', xaxis: 'x', yaxis: 'y'});
  traces.push({type: 'scattergl', mode: 'markers', name: 'anomaly (op)', legendgroup: 'anomaly', showlegend: false,
               x: anPts[0], y: anPts[1], text: anPts[2], hovertemplate: '%{text}<extra></extra>',
               marker: {color: '#e0007f', size: 14, symbol: 'star', line: {color: '#5a0033', width: 1}},
               xaxis: 'x', yaxis: 'y'});
  return {traces, detailed, visible: vis.length};
}
function wrap(s) { return String(s).replace(/(.{1,90})(\s|$)/g, '$1<br>').replace(/(<br>)+$/, ''); }

function observerTraces() {
  const S = DATA.samples, byRole = Object.create(null);  // a role named "constructor" is just a role
  const zx = [], zy = [], zt = [];
  for (let j = 0; j < S.t.length; j++) {
    const role = S.role[j], node = DATA.nodes[S.n[j]], y = DATA.node_lanes.indexOf(node);
    const r = byRole[role] || (byRole[role] = [[], [], []]);
    const txt = esc(node) + ': ' + esc(role) + (S.term[j] !== null ? ', term ' + S.term[j] : '') +
                (S.leader[j] ? ', leader ' + esc(S.leader[j]) : '') + '<br>t = ' + S.t[j].toFixed(3) + ' s';
    if (!S.z[j]) { r[0].push(S.t[j]); r[1].push(y); r[2].push(txt); }
    if (S.z[j]) { zx.push(S.t[j]); zy.push(y); zt.push('<b>ZOMBIE LEADER</b> ' + txt +
                  '<br>another node already reported a higher term'); }
  }
  const traces = [];
  for (const role of Object.keys(byRole)) {
    const st = Object.hasOwn(ROLE_STYLE, role) ? ROLE_STYLE[role] : ['#6a3d9a', 'square', 5];
    traces.push({type: 'scattergl', mode: 'markers', name: esc(role), legendgroup: 'role-' + role,
                 x: byRole[role][0], y: byRole[role][1], text: byRole[role][2],
                 hovertemplate: '%{text}<extra></extra>', marker: {color: st[0], symbol: st[1], size: st[2]},
                 xaxis: 'x', yaxis: 'y2'});
  }
  // observer samples a checker pointed at (a split leadership, a node seen down)
  const ax = [], ay = [], at = [];
  for (const a of DATA.anomalies) for (const j of a.samples || []) {
    ax.push(S.t[j]); ay.push(DATA.node_lanes.indexOf(DATA.nodes[S.n[j]]));
    at.push('<b>' + esc(a.kind) + '</b> (' + esc(a.checker) + '): ' + wrap(esc(a.explanation)));
  }
  traces.push({type: 'scattergl', mode: 'markers', name: 'anomaly (sample)', legendgroup: 'anomaly',
               showlegend: false, x: ax, y: ay, text: at, hovertemplate: '%{text}<extra></extra>',
               marker: {color: '#e0007f', symbol: 'circle-open', size: 18, line: {color: '#e0007f', width: 3}},
               xaxis: 'x', yaxis: 'y2'});
  traces.push({type: 'scattergl', mode: 'markers', name: 'zombie leader', x: zx, y: zy, text: zt,
               hovertemplate: '%{text}<extra></extra>',
               marker: {color: '#e0007f', symbol: 'star', size: 12, line: {color: '#5a0033', width: 0.5}},
               xaxis: 'x', yaxis: 'y2'});
  // term over time per node (a step line; gaps where the node did not answer)
  DATA.node_lanes.forEach((node, ni) => {
    const x = [], y = [];
    for (let j = 0; j < S.t.length; j++) {
      if (DATA.nodes[S.n[j]] !== node) continue;
      x.push(S.t[j]); y.push(S.term[j]);
    }
    traces.push({type: 'scattergl', mode: 'lines', name: 'term ' + esc(node), x: x, y: y,
                 line: {shape: 'hv', width: 2}, xaxis: 'x', yaxis: 'y3',
                 hovertemplate: esc(node) + ' term %{y}<extra></extra>'});
  });
  return traces;
}

function faultShapes() {
  const palette = ['rgba(200,49,46,0.13)', 'rgba(31,95,191,0.13)', 'rgba(120,60,170,0.13)',
                   'rgba(232,150,12,0.16)', 'rgba(46,155,79,0.13)'];
  const fam = new Map();
  const shapes = [], annotations = [];
  DATA.faults.forEach((w, j) => {
    if (!fam.has(w.f)) fam.set(w.f, palette[fam.size % palette.length]);
    shapes.push({type: 'rect', xref: 'x', yref: 'paper', x0: w.start, x1: w.end, y0: 0, y1: 1,
                 fillcolor: fam.get(w.f), line: {width: 0}, layer: 'below', name: 'fault-' + j});
    annotations.push({x: w.start, xref: 'x', yref: 'paper', y: 1.0 - (j % 3) * 0.025, yanchor: 'bottom',
                      xanchor: 'left', text: esc(w.label), showarrow: false, font: {size: 10, color: '#7a1512'},
                      hovertext: esc(w.detail || w.label), bgcolor: 'rgba(255,255,255,0.6)'});
  });
  return {shapes, annotations};
}

function laneAxis(groupBy) {
  if (groupBy === 'node') {
    const vals = DATA.node_lanes.map((_, i) => i), text = DATA.node_lanes.map(esc);
    vals.push(DATA.node_lanes.length); text.push('(no node)');
    vals.push(-1); text.push('nemesis');
    return {tickvals: vals, ticktext: text, range: [-1.6, DATA.node_lanes.length + 0.8]};
  }
  // label every lane when the labels fit (about 13 px each), else every k-th lane
  const n = DATA.lanes.length;
  const fit = Math.max(8, Math.floor((plot.clientHeight || 700) * 0.5 / 13));
  const step = Math.max(1, Math.ceil(n / fit)), vals = [], text = [];
  for (let i = 0; i < n; i += step) { vals.push(i); text.push(DATA.lanes[i] === 'nemesis' ? 'nemesis' : 'p' + esc(DATA.lanes[i])); }
  return {tickvals: vals, ticktext: text, range: [-0.8, n - 0.2]};
}

function layout(groupBy) {
  const fs = faultShapes();
  const la = laneAxis(groupBy);
  const hasObs = DATA.samples.t.length > 0;
  return {
    margin: {l: 70, r: 20, t: 50, b: 90}, hovermode: 'closest', dragmode: 'zoom',
    legend: {orientation: 'h', y: -0.09, yanchor: 'top'}, shapes: fs.shapes, annotations: fs.annotations,
    xaxis: {title: {text: 'seconds since the test started'}, range: [0, Math.max(DATA.end, 0.001)],
            anchor: hasObs ? 'y3' : 'y', showspikes: true, spikemode: 'across', spikethickness: 1},
    yaxis: {title: {text: groupBy === 'node' ? 'node' : 'process'}, domain: hasObs ? [0.42, 1] : [0, 1],
            tickvals: la.tickvals, ticktext: la.ticktext, range: la.range, zeroline: false, fixedrange: false},
    yaxis2: {title: {text: 'role'}, domain: [0.2, 0.38], tickvals: DATA.node_lanes.map((_, i) => i),
             ticktext: DATA.node_lanes.map(esc), range: [-0.6, DATA.node_lanes.length - 0.4], zeroline: false,
             visible: hasObs},
    yaxis3: {title: {text: 'term'}, domain: [0, 0.17], visible: hasObs, rangemode: 'tozero', tick0: 0,
             dtick: Math.max(1, Math.ceil(DATA.samples.term.reduce((m, t) => t !== null && t > m ? t : m, 0) / 4))},
  };
}

const plot = document.getElementById('plot');
const obsTraces = observerTraces();
let drawing = false, lastRange = null;
function currentRange() {
  const xa = plot._fullLayout && plot._fullLayout.xaxis;
  return xa && lastRange ? xa.range.slice() : [0, Math.max(DATA.end, 0.001)];
}
function draw(range) {
  const kf = document.getElementById('key-filter').value;
  const groupBy = document.getElementById('group-by').value;
  const keyFilter = kf === '' ? null : Number(kf);
  range = range || currentRange();
  const width = plot.clientWidth || 1200;
  const ops = opTraces(keyFilter, groupBy, range, width);
  const traces = ops.traces.concat(obsTraces);
  MARKS.traces = performance.now();
  const lay = layout(groupBy);
  lay.xaxis.range = range;
  lastRange = range;
  const config = {responsive: true, displaylogo: false, scrollZoom: true};
  drawing = true;
  return Plotly.react(plot, traces, lay, config).then(() => {
    drawing = false;
    listen();
    const b = document.body.dataset;
    b.detail = ops.detailed ? 'full' : 'merged';
    b.visibleOps = String(ops.visible);
    b.shownOps = String(traces.filter(t => t.yaxis === 'y' && t.mode === 'markers'
      && t.name !== 'anomaly (op)').reduce((s, t) => s + t.x.length, 0));
    b.rendered = String(performance.now());
  });
}
let pending = null, listening = false;
function listen() {
  if (listening) return;
  listening = true;
  plot.on('plotly_relayout', ev => {
  if (drawing) return;
  let r = null;
  if (ev['xaxis.range[0]'] !== undefined) r = [ev['xaxis.range[0]'], ev['xaxis.range[1]']];
  else if (ev['xaxis.range']) r = ev['xaxis.range'].slice();
  else if (ev['xaxis.autorange']) r = [0, Math.max(DATA.end, 0.001)];
  if (!r) return;
  clearTimeout(pending);
  pending = setTimeout(() => draw(r), 60);
  });
}

(function setup() {
  const sel = document.getElementById('key-filter');
  const order = DATA.keys.map((k, i) => [k, i]).sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  for (const [k, i] of order) {
    const o = document.createElement('option'); o.value = String(i); o.textContent = k; sel.appendChild(o);
  }
  sel.addEventListener('change', () => draw());
  document.getElementById('group-by').addEventListener('change', () => draw());
  const list = document.getElementById('anomalies');
  DATA.anomalies.forEach((a, j) => {
    const li = document.createElement('li');
    li.className = 'anomaly'; li.dataset.index = String(j);
    const kind = document.createElement('span'), checker = document.createElement('i');
    kind.className = 'akind'; kind.textContent = a.kind;
    checker.textContent = '(' + a.checker + ')';
    li.append(kind, ' ', checker, ' ops ' + a.ops.map(o => '#' + o).join(', ') + ': ' + a.explanation);
    li.title = 'click to zoom to these ops';
    li.addEventListener('click', () => {
      const samples = a.samples || [];
      if (!a.rows.length && !samples.length) return;
      let lo = Infinity, hi = -Infinity;
      for (const r of a.rows) { lo = Math.min(lo, O.t0[r]); hi = Math.max(hi, O.t1[r]); }
      for (const j of samples) { lo = Math.min(lo, DATA.samples.t[j]); hi = Math.max(hi, DATA.samples.t[j]); }
      const pad = Math.max((hi - lo) * 2, 0.05);
      draw([lo - pad, hi + pad]);
    });
    list.appendChild(li);
  });
  document.getElementById('anomaly-count').textContent = String(DATA.anomalies.length);
  draw();
})();
