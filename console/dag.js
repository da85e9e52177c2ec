/*
 * The plan's DAG, drawn by the layers the server computes (the ones an executor resumes by):
 * a column per layer, a box per step, an edge per dependency.
 */
import { append, clip, h, s, statusClass } from './dom.js';
import { visibleText } from './text.js';

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

// a step's box, the gaps between layers and between boxes, and the room for the layer labels
var W = 170,
  H = 40,
  GX = 60,
  GY = 14,
  TOP = 34;

/**
 * `serverLayers`: the plan's topological layers as the API gives them (GET /v1/plans/:id `layers`,
 * the same function the resume point uses), drawn left to right with fewer crossings.
 */
export function dagSvg(steps, serverLayers, resume, checkpoints) {
  var byId = stepsById(steps);
  var layers = orderLayers(serverLayers, byId);
  var next = resumeSteps(resume);
  var pos = layout(layers);
  var tallest = layers.reduce(function (m, l) {
    return Math.max(m, l.length);
  }, 1);
  var width = layers.length * (W + GX) + GX;
  var height = TOP + tallest * (H + GY) + 10;
  var svg = s('svg', {
    id: 'dag',
    width: width,
    height: height,
    viewBox: '0 0 ' + width + ' ' + height,
    // a group, not an image: its steps are buttons of their own
    role: 'group',
    'aria-label': 'plan DAG by layer',
  });
  drawLayerLabels(svg, layers, checkpointLayerOf(resume, checkpoints));
  drawEdges(svg, steps, pos);
  Object.keys(pos).forEach(function (id) {
    append(svg, stepNode(id, byId[id], pos[id], !!next[id]));
  });
  return svg;
}

function stepsById(steps) {
  var byId = {};
  steps.forEach(function (st) {
    byId[st.stepId] = st;
  });
  return byId;
}

/** The steps of the resume point (the next layer to run), by id; none when the plan cannot resume. */
function resumeSteps(resume) {
  var next = {};
  if (resume && resume.resumable && resume.nextSteps)
    resume.nextSteps.forEach(function (st) {
      next[st.stepId] = true;
    });
  return next;
}

/** The resume point's checkpoint layer, else (a plan that cannot resume) the newest one stored. */
function checkpointLayerOf(resume, checkpoints) {
  var checkpointLayer = resume && resume.resumable && resume.latestCheckpoint ? resume.latestCheckpoint.layer : null;
  if (checkpointLayer === null && checkpoints && checkpoints.length) {
    checkpointLayer = checkpoints.reduce(function (a, b) {
      return a.at > b.at || (a.at === b.at && a.layer > b.layer) ? a : b;
    }).layer;
  }
  return checkpointLayer;
}

/** Each step's box: its top-left corner and its layer (a column per layer, a row per step). */
function layout(layers) {
  var pos = {};
  layers.forEach(function (ids, li) {
    ids.forEach(function (id, i) {
      pos[id] = { x: GX / 2 + li * (W + GX), y: TOP + i * (H + GY), layer: li };
    });
  });
  return pos;
}

function drawLayerLabels(svg, layers, checkpointLayer) {
  layers.forEach(function (ids, li) {
    var x = GX / 2 + li * (W + GX);
    append(svg, s('text', { class: 'dag-layer-label', x: x, y: 14, text: 'layer ' + li }));
    if (checkpointLayer === li)
      append(
        svg,
        s('text', { class: 'dag-checkpoint', 'data-checkpoint-layer': li, x: x + 60, y: 14, text: '⚑ checkpoint' }),
      );
  });
}

/** An edge per dependency: a curve from the right side of the dependency's box to the left of the step's. */
function drawEdges(svg, steps, pos) {
  steps.forEach(function (st) {
    var to = pos[st.stepId];
    (st.dependsOn || []).forEach(function (dep) {
      var from = pos[dep];
      if (!from || !to) return;
      var x1 = from.x + W,
        y1 = from.y + H / 2,
        x2 = to.x,
        y2 = to.y + H / 2;
      var d = 'M' + x1 + ',' + y1 + ' C' + (x1 + GX / 2) + ',' + y1 + ' ' + (x2 - GX / 2) + ',' + y2;
      append(svg, s('path', { class: 'dag-edge', d: d + ' ' + x2 + ',' + y2 }));
    });
  });
}

/** A step's box: a button that opens the step's row; `st` is undefined for a step the plan does not list. */
function stepNode(id, st, at, resumesHere) {
  var status = st ? st.status : 'pending';
  return s(
    'g',
    {
      class: 'dag-node ' + statusClass(status) + (inherited(st) ? ' inherited' : '') + (resumesHere ? ' resume' : ''),
      'data-step': id,
      'data-status': status,
      'data-layer': at.layer,
      'data-inherited-from': inherited(st) ? st.inheritedFrom : null,
      transform: 'translate(' + at.x + ',' + at.y + ')',
      // reachable from the keyboard: Tab moves between steps, Enter or Space opens the step's row
      tabindex: 0,
      role: 'button',
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
    s('title', { text: nodeTitle(st, id, status) }),
    s('rect', { width: W, height: H, rx: 5 }),
    // the box's accessible name is its title (the whole id, agent and status; the lines are clipped)
    s('text', { x: 8, y: 16, text: clip(st ? st.stepId : id, 24) }),
    s('text', { class: 'dag-node-status', x: 8, y: 31, text: nodeLine(st, status) }),
  );
}

/** A fork's step that ran in an ancestor (GET /v1/plans/:id `inheritedFrom`), not in the plan itself. */
function inherited(st) {
  return !!(st && st.inheritedFrom);
}

function nodeTitle(st, id, status) {
  return (
    (st ? st.stepId + ' · ' + st.agentId : id) +
    ' (' +
    status +
    (inherited(st) ? ', inherited from ' + st.inheritedFrom : '') +
    ')' +
    (st && st.title ? ': ' + st.title : '')
  );
}

function nodeLine(st, status) {
  return clip((inherited(st) ? 'inherited' : st ? st.agentId : '') + ' · ' + status, 26);
}

/** A live update: each step's box takes its new status and resume mark, in place (the view stays). */
export function updateDag(svg, steps, resume) {
  if (!svg) return;
  var next = resumeSteps(resume);
  var byId = stepsById(steps);
  svg.querySelectorAll('.dag-node').forEach(function (g) {
    var id = g.getAttribute('data-step');
    var st = byId[id];
    var status = st ? st.status : 'pending';
    if (
      g.getAttribute('data-status') === status &&
      g.classList.contains('resume') === !!next[id] &&
      g.classList.contains('inherited') === inherited(st)
    )
      return;
    var dimmed = g.classList.contains('dimmed');
    g.setAttribute(
      'class',
      'dag-node ' +
        statusClass(status) +
        (inherited(st) ? ' inherited' : '') +
        (next[id] ? ' resume' : '') +
        (dimmed ? ' dimmed' : ''),
    );
    g.setAttribute('data-status', status);
    g.querySelector('title').textContent = visibleText(nodeTitle(st, id, status));
    g.querySelector('.dag-node-status').textContent = visibleText(nodeLine(st, status));
  });
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

/**
 * The DAG in a viewport an operator can move: drag to pan, Ctrl+wheel or the buttons to zoom,
 * "Fit" to see it all, "Resume point" to center the next layer to run. A step reached with Tab is
 * brought into view. Returns the toolbar and the viewport, to put on the page.
 */
export function dagViewer(svg, resumeStepId) {
  var vb = svg.getAttribute('viewBox').split(' ').map(Number);
  var height = Math.min(vb[3], 560);
  var viewport = h('div', { class: 'dag-viewport', id: 'dag-viewport', style: null });
  viewport.style.height = height + 'px';
  svg.setAttribute('width', '100%');
  svg.setAttribute('height', '100%');
  svg.setAttribute('preserveAspectRatio', 'xMinYMin meet');
  append(viewport, svg);
  var cam = dagCamera({ svg: svg, viewport: viewport, contentW: vb[2], contentH: vb[3], height: height });
  panAndZoom(viewport, cam);
  // a step reached from the keyboard is brought into view
  svg.addEventListener('focusin', function (e) {
    var node = e.target.closest && e.target.closest('.dag-node');
    if (node) cam.centerOn(node.getAttribute('data-step'));
  });
  // first view: everything when it stays legible, else the start of the plan at full size
  requestAnimationFrame(function () {
    if (cam.wholeScale() >= 0.6) cam.fit();
    else cam.apply();
  });
  cam.apply();
  return { toolbar: dagToolbar(cam, resumeStepId), viewport: viewport, fit: cam.fit, centerOn: cam.centerOn };
}

/**
 * What part of the DAG the viewport shows (`view`: the top-left corner in the drawing's units and
 * the scale), and the moves that change it; each move writes the svg's viewBox.
 */
function dagCamera(o) {
  var svg = o.svg;
  var height = o.height;
  var view = { x: 0, y: 0, scale: 1 };
  function width() {
    return o.viewport.clientWidth || o.contentW;
  }
  function apply() {
    var w = width() / view.scale;
    var hh = height / view.scale;
    svg.setAttribute('viewBox', [view.x, view.y, w, hh].map(Math.round).join(' '));
    svg.setAttribute('data-scale', view.scale.toFixed(3));
  }
  function wholeScale() {
    return Math.min(width() / o.contentW, height / o.contentH);
  }
  function fit() {
    view.scale = Math.min(1, wholeScale());
    view.x = 0;
    view.y = 0;
    apply();
  }
  function zoom(factor) {
    var cx = view.x + width() / view.scale / 2;
    var cy = view.y + height / view.scale / 2;
    view.scale = Math.max(0.05, Math.min(4, view.scale * factor));
    view.x = cx - width() / view.scale / 2;
    view.y = cy - height / view.scale / 2;
    apply();
  }
  function centerOn(stepId) {
    var node = svg.querySelector('.dag-node[data-step="' + cssEscape(stepId) + '"]');
    if (!node) return false;
    var t = /translate\(([-\d.]+),([-\d.]+)\)/.exec(node.getAttribute('transform'));
    if (view.scale < 0.6) view.scale = 1;
    view.x = Number(t[1]) + W / 2 - width() / view.scale / 2;
    view.y = Number(t[2]) + H / 2 - height / view.scale / 2;
    apply();
    return true;
  }
  return { view: view, apply: apply, wholeScale: wholeScale, fit: fit, zoom: zoom, centerOn: centerOn };
}

/** Drag on the background to pan; Ctrl (or Cmd) and the wheel to zoom. */
function panAndZoom(viewport, cam) {
  var view = cam.view;
  var drag = null;
  viewport.addEventListener('pointerdown', function (e) {
    if (e.target.closest && e.target.closest('.dag-node')) return;
    drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y };
    viewport.setPointerCapture(e.pointerId);
  });
  viewport.addEventListener('pointermove', function (e) {
    if (!drag) return;
    view.x = drag.vx - (e.clientX - drag.x) / view.scale;
    view.y = drag.vy - (e.clientY - drag.y) / view.scale;
    cam.apply();
  });
  viewport.addEventListener('pointerup', function () {
    drag = null;
  });
  viewport.addEventListener(
    'wheel',
    function (e) {
      if (!e.ctrlKey && !e.metaKey) return;
      e.preventDefault();
      cam.zoom(e.deltaY < 0 ? 1.2 : 1 / 1.2);
    },
    { passive: false },
  );
}

function dagToolbar(cam, resumeStepId) {
  function button(id, text, onclick) {
    return h('button', { type: 'button', id: id, text: text, onclick: onclick });
  }
  return h(
    'div',
    { class: 'dag-toolbar', role: 'toolbar', 'aria-label': 'DAG view' },
    button('dag-fit', 'Fit', cam.fit),
    button('dag-zoom-in', 'Zoom in', function () {
      cam.zoom(1.25);
    }),
    button('dag-zoom-out', 'Zoom out', function () {
      cam.zoom(0.8);
    }),
    resumeStepId
      ? button('dag-resume', 'Go to resume point', function () {
          cam.centerOn(resumeStepId);
        })
      : null,
    h('span', { class: 'muted', text: 'drag to move · Ctrl+wheel to zoom' }),
  );
}

function cssEscape(text) {
  return window.CSS && CSS.escape ? CSS.escape(text) : String(text).replace(/["\\]/g, '\\$&');
}
