/*
 * The plan's timeline: one bar per step on an axis from the first start to the last end (to now
 * while the plan runs). Rows: one per step grouped by agent (`step`), or collapsed to one per agent
 * (`agent`) or per DAG layer (`layer`), where a row's bars may overlap.
 */
import { append, clip, fmtMs, fmtTime, s, statusClass } from './dom.js';

export function ganttSvg(steps, plan, mode, layers) {
  mode = mode || 'step';
  var agents = [];
  steps.forEach(function (st) {
    if (agents.indexOf(st.agentId) < 0) agents.push(st.agentId);
  });
  var times = [];
  steps.forEach(function (st) {
    if (st.startedAt) times.push(Date.parse(st.startedAt));
    if (st.completedAt) times.push(Date.parse(st.completedAt));
  });
  var t0 = times.length
    ? times.reduce(function (a, b) {
        return Math.min(a, b);
      })
    : Date.parse(plan.createdAt);
  var t1 = times.length
    ? times.reduce(function (a, b) {
        return Math.max(a, b);
      })
    : t0 + 1;
  var running = plan.status === 'executing' || plan.status === 'planning';
  // a running plan's axis ends now: its running steps' bars reach the present
  if (running) t1 = Math.max(t1, Date.now());
  if (t1 <= t0) t1 = t0 + 1;
  var LEFT = 170,
    WIDTH = 900,
    ROW = 26,
    TOP = 24;
  var labels = []; // [row, text]
  var rowOf = {};
  var row = 0;
  if (mode === 'layer') {
    (layers || []).forEach(function (ids, li) {
      labels.push([row, 'layer ' + li]);
      ids.forEach(function (id) {
        rowOf[id] = row;
      });
      row++;
    });
  } else {
    agents.forEach(function (a) {
      var mine = steps.filter(function (st) {
        return st.agentId === a;
      });
      labels.push([row, a]);
      mine.forEach(function (st) {
        rowOf[st.stepId] = row;
        if (mode === 'step') row++;
      });
      if (mode === 'agent') row++;
    });
  }
  var height = TOP + row * ROW + 10;
  var svg = s('svg', {
    id: 'timeline',
    width: LEFT + WIDTH + 80,
    height: height,
    role: 'img',
    'data-mode': mode,
    'aria-label': mode === 'layer' ? 'steps per layer over time' : 'steps per agent over time',
  });
  // the axis: the start as a time, then four ticks as the time elapsed since it
  for (var k = 0; k <= 4; k++) {
    var tx = LEFT + (k * WIDTH) / 4;
    append(svg, s('line', { class: 'gantt-tick', x1: tx, x2: tx, y1: 18, y2: height - 6 }));
    append(
      svg,
      s('text', {
        class: 'dag-layer-label gantt-tick-label',
        x: k === 4 ? tx - 40 : tx + 2,
        y: 14,
        text: k === 0 ? fmtTime(new Date(t0).toISOString()) : '+' + fmtMs(Math.round(((t1 - t0) * k) / 4)),
      }),
    );
  }
  if (running) {
    append(svg, s('line', { class: 'gantt-now', x1: LEFT + WIDTH, x2: LEFT + WIDTH, y1: 18, y2: height - 6 }));
    append(svg, s('text', { class: 'gantt-now-label', x: LEFT + WIDTH + 4, y: 28, text: 'now' }));
  }
  labels.forEach(function (l) {
    append(svg, s('text', { class: 'gantt-row-label', x: 4, y: TOP + l[0] * ROW + 16, text: clip(l[1], 24) }));
  });
  var scale = WIDTH / (t1 - t0);
  steps.forEach(function (st) {
    if (rowOf[st.stepId] === undefined) return;
    var y = TOP + rowOf[st.stepId] * ROW + 4;
    var start = st.startedAt ? Date.parse(st.startedAt) : null;
    var end = st.completedAt ? Date.parse(st.completedAt) : start !== null ? t1 : null;
    var x = start === null ? LEFT + WIDTH : LEFT + (start - t0) * scale;
    var w = start === null ? 6 : Math.max(3, (end - start) * scale);
    var bar = s(
      'rect',
      {
        class: 'gantt-bar ' + (start === null ? 'pending' : statusClass(st.status)),
        'data-step': st.stepId,
        x: x,
        y: y,
        width: w,
        height: ROW - 8,
        rx: 2,
      },
      s('title', {
        text:
          st.stepId +
          ' · ' +
          st.agentId +
          ' · ' +
          st.status +
          ' · ' +
          (start === null ? 'not run' : fmtMs(st.durationMs)),
      }),
    );
    append(svg, bar);
    // collapsed rows hold many bars: no label beside each
    if (mode !== 'step') return;
    append(
      svg,
      s('text', {
        x: Math.min(x + w + 4, LEFT + WIDTH + 6),
        y: y + 13,
        text: clip(st.stepId, 16) + (st.durationMs !== null ? ' ' + fmtMs(st.durationMs) : ''),
      }),
    );
  });
  return svg;
}
