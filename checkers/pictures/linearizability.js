// linearizability.html's page script: one plotly chart per failure (see visualization.py).
// Strings in DATA come from the history and the checker's result: they reach plotly only through esc
// (from plotpage.page).
const ROLE_COLOR = {linearized: '#2e9b4f', blocked: '#c8312e', candidate: '#e8960c', concurrent: '#9a9a9a'};
const ROLE_NAME = {linearized: 'linearized', blocked: 'cannot be linearized', candidate: 'candidate next',
                   concurrent: 'concurrent'};
function fmt(v) { return v === null || v === undefined ? '?' : esc(JSON.stringify(v)); }

function drawFailure(fv, j) {
  const procs = Array.from(new Set(fv.bars.map(b => b.process)))
    .sort((a, b) => (isNaN(a) || isNaN(b)) ? (a < b ? -1 : a > b ? 1 : 0) : Number(a) - Number(b));
  const lane = new Map(procs.map((p, i) => [p, i]));
  const traces = [];
  for (const role of ['concurrent', 'candidate', 'linearized', 'blocked']) {
    const x = [], y = [], mx = [], my = [], text = [];
    for (const b of fv.bars) {
      if (b.role !== role) continue;
      const yy = lane.get(b.process);
      x.push(b.t0, b.t1, null); y.push(yy, yy, null);
      mx.push((b.t0 + b.t1) / 2); my.push(yy);
      let t = '<b>#' + esc(b.index) + ' ' + esc(b.f) + ' ' + esc(b.value) + '</b> (' + esc(b.type) +
              ')<br>process ' + esc(b.process) + '<br>' + ROLE_NAME[role];
      if (b.step !== null) t += ', step ' + (b.step + 1) + '<br>state after: ' + fmt(b.state);
      if (b.why) t += '<br>' + esc(b.why);
      text.push(t);
    }
    traces.push({type: 'scatter', mode: 'lines', name: ROLE_NAME[role], legendgroup: role, x, y,
                 line: {color: ROLE_COLOR[role], width: role === 'blocked' ? 12 : 8}, hoverinfo: 'skip'});
    traces.push({type: 'scatter', mode: 'markers', name: ROLE_NAME[role] + ' (op)', legendgroup: role,
                 showlegend: false, x: mx, y: my, text, hovertemplate: '%{text}<extra></extra>',
                 marker: {color: ROLE_COLOR[role], size: role === 'blocked' ? 14 : 8,
                          symbol: role === 'blocked' ? 'x' : 'circle', line: {color: '#222', width: 1}}});
  }
  // the linearization as a path of linearization points: each inside its op, never going back in time
  const lin = fv.bars.filter(b => b.step !== null).sort((a, b) => a.step - b.step);
  const px = [], py = [], pt = [], ptext = [];
  let last = -Infinity;
  for (const b of lin) {
    const t = Math.min(Math.max(last, b.t0), b.t1);
    last = t;
    px.push(t); py.push(lane.get(b.process)); pt.push(String(b.step + 1));
    ptext.push('step ' + (b.step + 1) + ': #' + esc(b.index) + ' ' + esc(b.f) + ' ' + esc(b.value) +
               '<br>state after: ' + fmt(b.state));
  }
  traces.push({type: 'scatter', mode: 'lines+markers+text', name: 'linearization order', x: px, y: py,
               text: pt, textposition: 'top center', hovertext: ptext, hovertemplate: '%{hovertext}<extra></extra>',
               line: {color: '#1f5fbf', dash: 'dot', width: 2}, marker: {color: '#1f5fbf', size: 7},
               textfont: {color: '#1f5fbf', size: 11}});
  const blocked = fv.bars.find(b => b.role === 'blocked');
  const annotations = [];
  if (blocked) {
    annotations.push({x: blocked.t1, y: lane.get(blocked.process), ax: 40, ay: -40, arrowcolor: '#c8312e',
                      text: 'cannot be placed; state is ' + esc(JSON.stringify(fv.state_before)),
                      font: {color: '#c8312e'}, bgcolor: 'rgba(255,255,255,0.85)', showarrow: true});
  }
  const layout = {margin: {l: 70, r: 20, t: 20, b: 40}, hovermode: 'closest', annotations,
                  xaxis: {title: {text: 'seconds since the test started'}},
                  yaxis: {tickvals: procs.map((_, i) => i), ticktext: procs.map(p => 'p' + esc(p)),
                          range: [-0.7, procs.length - 0.3], title: {text: 'process'}},
                  legend: {orientation: 'h', y: -0.2}};
  return Plotly.newPlot(document.getElementById('fplot-' + j), traces, layout,
                        {responsive: true, displaylogo: false});
}

Promise.all(DATA.failures.map(drawFailure)).then(() => {
  document.body.dataset.rendered = String(performance.now());
});
