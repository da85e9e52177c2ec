/*
 * The plan's DAG, drawn by the layers the server computes (the ones an executor resumes by):
 * a column per layer, a box per step, an edge per dependency.
 */
import { append, clip, s, statusClass } from './dom.js';

/**
 * Fewer crossing edges: each layer after the first is sorted by the mean row of its steps'
 * dependencies in the layer before (the barycenter heuristic of layered drawing), stable for ties.
 */
export function orderLayers(layers, byId) {
  var row = {};
  return layers.map(function (ids, li) {
    var keyed = ids.map(function (id, i) {
      var deps =
        li === 0
          ? []
          : ((byId[id] && byId[id].dependsOn) || []).filter(function (d) {
              return row[d] !== undefined;
            });
      var center = deps.length
        ? deps.reduce(function (a, d) {
            return a + row[d];
          }, 0) / deps.length
        : i;
      return { id: id, center: center, i: i };
    });
    keyed.sort(function (a, b) {
      return a.center - b.center || a.i - b.i;
    });
    keyed.forEach(function (k, i) {
      row[k.id] = i;
    });
    return keyed.map(function (k) {
      return k.id;
    });
  });
}

/**
 * `serverLayers`: the plan's topological layers as the API gives them (GET /v1/plans/:id `layers`,
 * the same function the resume point uses), drawn left to right with fewer crossings.
 */
export function dagSvg(steps, serverLayers, resume, checkpoints) {
  var byId = {};
  steps.forEach(function (st) {
    byId[st.stepId] = st;
  });
  var layers = orderLayers(serverLayers, byId);
  var next = {};
  if (resume && resume.resumable && resume.nextSteps)
    resume.nextSteps.forEach(function (st) {
      next[st.stepId] = true;
    });
  // the resume point's checkpoint, else (a plan that cannot resume) the newest one stored
  var checkpointLayer = resume && resume.resumable && resume.latestCheckpoint ? resume.latestCheckpoint.layer : null;
  if (checkpointLayer === null && checkpoints && checkpoints.length) {
    checkpointLayer = checkpoints.reduce(function (a, b) {
      return a.at > b.at || (a.at === b.at && a.layer > b.layer) ? a : b;
    }).layer;
  }
  var W = 170,
    H = 40,
    GX = 60,
    GY = 14,
    TOP = 34;
  var tallest = layers.reduce(function (m, l) {
    return Math.max(m, l.length);
  }, 1);
  var width = layers.length * (W + GX) + GX;
  var height = TOP + tallest * (H + GY) + 10;
  var pos = {};
  layers.forEach(function (ids, li) {
    ids.forEach(function (id, i) {
      pos[id] = { x: GX / 2 + li * (W + GX), y: TOP + i * (H + GY), layer: li };
    });
  });
  var svg = s('svg', {
    id: 'dag',
    width: width,
    height: height,
    viewBox: '0 0 ' + width + ' ' + height,
    role: 'img',
    'aria-label': 'plan DAG by layer',
  });
  layers.forEach(function (ids, li) {
    var x = GX / 2 + li * (W + GX);
    append(svg, s('text', { class: 'dag-layer-label', x: x, y: 14, text: 'layer ' + li }));
    if (checkpointLayer === li)
      append(
        svg,
        s('text', { class: 'dag-checkpoint', 'data-checkpoint-layer': li, x: x + 60, y: 14, text: '⚑ checkpoint' }),
      );
  });
  steps.forEach(function (st) {
    var to = pos[st.stepId];
    (st.dependsOn || []).forEach(function (dep) {
      var from = pos[dep];
      if (!from || !to) return;
      var x1 = from.x + W,
        y1 = from.y + H / 2,
        x2 = to.x,
        y2 = to.y + H / 2;
      append(
        svg,
        s('path', {
          class: 'dag-edge',
          d:
            'M' +
            x1 +
            ',' +
            y1 +
            ' C' +
            (x1 + GX / 2) +
            ',' +
            y1 +
            ' ' +
            (x2 - GX / 2) +
            ',' +
            y2 +
            ' ' +
            x2 +
            ',' +
            y2,
        }),
      );
    });
  });
  Object.keys(pos).forEach(function (id) {
    var st = byId[id];
    var status = st ? st.status : 'pending';
    var label = st ? st.stepId + ' · ' + st.agentId : id;
    var g = s(
      'g',
      {
        class: 'dag-node ' + statusClass(status) + (next[id] ? ' resume' : ''),
        'data-step': id,
        'data-status': status,
        'data-layer': pos[id].layer,
        transform: 'translate(' + pos[id].x + ',' + pos[id].y + ')',
        // reachable from the keyboard: Tab moves between steps, Enter or Space opens the step's row
        tabindex: 0,
        role: 'button',
        'aria-label': 'step ' + label + ', ' + status,
        onclick: function () {
          openStepRow(id);
        },
        onkeydown: function (e) {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            openStepRow(id);
          }
        },
      },
      s('title', { text: label + ' (' + status + ')' + (st && st.title ? ': ' + st.title : '') }),
      s('rect', { width: W, height: H, rx: 5 }),
      s('text', { x: 8, y: 16, text: clip(st ? st.stepId : id, 24) }),
      s('text', { x: 8, y: 31, text: clip((st ? st.agentId : '') + ' · ' + status, 26) }),
    );
    append(svg, g);
  });
  return svg;
}

/** The steps table's row of a step: scrolled to, marked and focused. */
export function openStepRow(stepId) {
  var rows = document.querySelectorAll('#steps tr[data-step]');
  for (var i = 0; i < rows.length; i++) {
    var row = rows[i];
    var mine = row.getAttribute('data-step') === stepId;
    row.classList.toggle('selected', mine);
    if (mine) {
      row.setAttribute('tabindex', '-1');
      row.scrollIntoView({ block: 'center' });
      row.focus({ preventScroll: true });
    }
  }
}
