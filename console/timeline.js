/*
 * The plan's timeline: one bar per step on an axis from the first start to the last end (to now
 * while the plan runs). Rows: one per step grouped by agent (`step`), or collapsed to one per agent
 * (`agent`) or per DAG layer (`layer`), where a row's bars may overlap.
 */
import { append, clip, fmtMs, fmtTime, s, statusClass } from './dom.js';

// the row labels' column, the axis's width, a row's height and the room for the tick labels
var LEFT = 170,
  WIDTH = 900,
  ROW = 26,
  TOP = 24;

export function ganttSvg(steps, plan, mode, layers) {
  mode = mode || 'step';
  var span = timeSpan(steps, plan);
  var rows = timelineRows(steps, mode, layers);
  var height = TOP + rows.count * ROW + 10;
  var svg = s('svg', {
    id: 'timeline',
    width: LEFT + WIDTH + 80,
    height: height,
    role: 'img',
    'data-mode': mode,
    'aria-label': mode === 'layer' ? 'steps per layer over time' : 'steps per agent over time',
  });
  drawAxis(svg, span, height);
  rows.labels.forEach(function (l) {
    append(svg, s('text', { class: 'gantt-row-label', x: 4, y: TOP + l[0] * ROW + 16, text: clip(l[1], 24) }));
  });
  steps.forEach(function (st) {
    if (rows.rowOf[st.stepId] === undefined) return;
    drawBar(svg, st, { span: span, row: rows.rowOf[st.stepId], labelled: mode === 'step' });
  });
  return svg;
}

/**
 * The axis's start and end (`t0`, `t1`, epoch ms): the first start and the last end of the steps,
 * to now while the plan runs (`running`); the plan's creation when no step has started.
 */
function timeSpan(steps, plan) {
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
  return { t0: t0, t1: t1, running: running };
}

/** Each step's row (`rowOf`), the rows' labels as [row, text], and how many rows (`count`). */
function timelineRows(steps, mode, layers) {
  var labels = [];
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
    return { labels: labels, rowOf: rowOf, count: row };
  }
  var agents = [];
  steps.forEach(function (st) {
    if (agents.indexOf(st.agentId) < 0) agents.push(st.agentId);
  });
  agents.forEach(function (a) {
    labels.push([row, a]);
    steps.forEach(function (st) {
      if (st.agentId !== a) return;
      rowOf[st.stepId] = row;
      if (mode === 'step') row++;
    });
    if (mode === 'agent') row++;
  });
  return { labels: labels, rowOf: rowOf, count: row };
}

/** The axis: the start as a time, then four ticks as the time elapsed since it; a running plan's "now". */
function drawAxis(svg, span, height) {
  for (var k = 0; k <= 4; k++) {
    var tx = LEFT + (k * WIDTH) / 4;
    append(svg, s('line', { class: 'gantt-tick', x1: tx, x2: tx, y1: 18, y2: height - 6 }));
    append(
      svg,
      s('text', {
        class: 'dag-layer-label gantt-tick-label',
        x: k === 4 ? tx - 40 : tx + 2,
        y: 14,
        text:
          k === 0 ? fmtTime(new Date(span.t0).toISOString()) : '+' + fmtMs(Math.round(((span.t1 - span.t0) * k) / 4)),
      }),
    );
  }
  if (span.running) {
    append(svg, s('line', { class: 'gantt-now', x1: LEFT + WIDTH, x2: LEFT + WIDTH, y1: 18, y2: height - 6 }));
    append(svg, s('text', { class: 'gantt-now-label', x: LEFT + WIDTH + 4, y: 28, text: 'now' }));
  }
}

/**
 * A step's bar on its row (`o.row`), from its start to its end (to the axis's end while it runs; a
 * short mark at the end for a step not run), with its id and duration beside it when `o.labelled`.
 */
function drawBar(svg, st, o) {
  var t0 = o.span.t0;
  var t1 = o.span.t1;
  var scale = WIDTH / (t1 - t0);
  var y = TOP + o.row * ROW + 4;
  var start = st.startedAt ? Date.parse(st.startedAt) : null;
  var end = st.completedAt ? Date.parse(st.completedAt) : start !== null ? t1 : null;
  var x = start === null ? LEFT + WIDTH : LEFT + (start - t0) * scale;
  var w = start === null ? 6 : Math.max(3, (end - start) * scale);
  var title =
    st.stepId + ' · ' + st.agentId + ' · ' + st.status + ' · ' + (start === null ? 'not run' : fmtMs(st.durationMs));
  append(
    svg,
    s(
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
      s('title', { text: title }),
    ),
  );
  // collapsed rows hold many bars: no label beside each
  if (!o.labelled) return;
  append(
    svg,
    s('text', {
      x: Math.min(x + w + 4, LEFT + WIDTH + 6),
      y: y + 13,
      text: clip(st.stepId, 16) + (st.durationMs !== null ? ' ' + fmtMs(st.durationMs) : ''),
    }),
  );
}
