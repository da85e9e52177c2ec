/*
 * A plan's lineage (the fork tree it belongs to: GET /v1/plans/{id}/lineage) as a panel of the plan
 * page, and the comparison of two plans' steps side by side (`#/plans/<a>/compare/<b>`): per step
 * id present in either, both plans' status, tokens and stored output, the steps that differ marked.
 * Outputs are fetched when their row comes near the screen, a few at a time, each stored row once.
 */
import { api } from './api.js';
import { append, badge, clip, enc, fmtNum, fmtTime, h, link, show, wrapTable } from './dom.js';
import { compareSteps, forkLabel, lineageRows, outputDiffers, reasonText, rowOwner } from './lineage.js';

/** Output requests in flight at most. */
var CONCURRENT_OUTPUTS = 4;

/**
 * The lineage panel: the tree, each plan a link with how it came about, its status, steps, tokens
 * and cost, the plan shown and retired plans marked, and a link comparing the plan shown with each
 * other live one. Null for a plan alone (no parent, no forks); one quiet line for a fork whose
 * parent is no longer stored.
 */
export function lineagePanel(lineage) {
  if (!lineage) return null;
  if (lineage.plans < 2) {
    if (!lineage.root.parentPlanId) return null;
    return h('p', {
      class: 'muted',
      id: 'lineage',
      text: 'Lineage: its parent ' + lineage.root.parentPlanId + ' is no longer stored.',
    });
  }
  var relation = {};
  lineageRows(lineage).forEach(function (row) {
    relation[row.node.planId] = row.relation;
  });
  function item(node, parent) {
    var here = '#/plans/' + enc(node.planId);
    var planLink = h('a', { href: here, text: node.planId, 'aria-current': node.current ? 'page' : null });
    var steps =
      node.completedSteps +
      '/' +
      node.totalSteps +
      ' steps' +
      (node.failedSteps ? ' (' + node.failedSteps + ' failed)' : '');
    return h(
      'li',
      {
        'data-plan': node.planId,
        class: (node.current ? 'current' : '') + (node.retiredAt ? ' retired' : ''),
      },
      h(
        'div',
        { class: 'lineage-node' },
        planLink,
        h('span', { class: 'lineage-kind', text: forkLabel(node.kind, node.forkLayer, node.forkCheckpoint) }),
        badge(node.status),
        h('span', { text: steps }),
        h('span', { text: fmtNum(node.inputTokens + node.outputTokens) + ' tokens' }),
        h('span', { text: '$' + node.cost }),
        parent && parent.sessionId !== node.sessionId ? h('span', { text: 'session ' + node.sessionId }) : null,
        node.retiredAt ? h('span', { class: 'lineage-retired', text: 'retired ' + fmtTime(node.retiredAt) }) : null,
        node.current
          ? h('strong', { class: 'lineage-current', text: 'this plan' })
          : h('span', { class: 'muted lineage-relation', text: relation[node.planId] }),
        !node.current && !node.retiredAt
          ? h('a', {
              class: 'lineage-compare',
              href: '#/plans/' + enc(lineage.planId) + '/compare/' + enc(node.planId),
              'aria-label': 'compare ' + lineage.planId + ' with ' + node.planId,
              text: 'compare',
            })
          : null,
      ),
      node.children.length
        ? h(
            'ul',
            null,
            node.children.map(function (child) {
              return item(child, node);
            }),
          )
        : null,
    );
  }
  return h(
    'section',
    { id: 'lineage', class: 'lineage', 'aria-labelledby': 'lineage-title' },
    h('h2', { id: 'lineage-title', text: 'Lineage (' + lineage.plans + ' plans)' }),
    h('div', { class: 'lineage-tree' }, h('ul', null, item(lineage.root, null))),
    lineage.truncated ? h('p', { class: 'muted', text: 'The tree was cut: ' + lineage.plans + ' plans shown.' }) : null,
  );
}

/** Two plans' steps side by side, `planA` on the left. */
export function comparePage(planA, planB) {
  return Promise.all([
    api('/v1/plans/' + enc(planA)),
    api('/v1/plans/' + enc(planB)),
    api('/v1/plans/' + enc(planA) + '/lineage').catch(function () {
      return null;
    }),
  ]).then(function (r) {
    var a = r[0];
    var b = r[1];
    var rows = compareSteps({ planId: planA, steps: a.steps }, { planId: planB, steps: b.steps });
    var summary = h('p', { id: 'compare-summary', role: 'status' });
    var onlyDiff = h('input', { type: 'checkbox', id: 'compare-only-diff' });
    var entries = rows.map(function (row) {
      return compareRowElement(row, planA, planB);
    });
    var refresh = summaryRefresher({ entries: entries, onlyDiff: onlyDiff, summary: summary });
    onlyDiff.addEventListener('change', refresh);
    loadOutputsWhenSeen(entries, refresh);
    show(
      h('h1', { text: 'Compare ' + planA + ' with ' + planB }),
      h(
        'p',
        { id: 'compare-plans' },
        'Left: ',
        link('#/plans/' + enc(planA), planA),
        ' (' + planLabel(a.plan) + ') · right: ',
        link('#/plans/' + enc(planB), planB),
        ' (' + planLabel(b.plan) + ') · ',
        link('#/plans/' + enc(planB) + '/compare/' + enc(planA), 'swap sides'),
      ),
      pickForm(r[2], planA, planB),
      summary,
      h('label', { class: 'compare-filter' }, onlyDiff, ' Only steps that differ'),
      compareTable(entries, planA, planB),
      rows.length ? null : h('p', { class: 'muted', text: 'Neither plan has steps.' }),
    );
    refresh();
  });
}

/**
 * The count of steps that differ, are the same or wait for their outputs, written to `o.summary`;
 * with `o.onlyDiff` ticked, the rows of the same steps are hidden.
 */
function summaryRefresher(o) {
  return function refresh() {
    var differ = 0;
    var same = 0;
    var pending = 0;
    o.entries.forEach(function (e) {
      var state = e.state();
      if (state === 'differs') differ++;
      else if (state === 'pending') pending++;
      else same++;
      e.tr.hidden = o.onlyDiff.checked && state === 'same';
    });
    o.summary.textContent =
      o.entries.length +
      ' steps in either plan · ' +
      differ +
      ' differ · ' +
      same +
      ' the same' +
      (pending ? ' · ' + pending + ' with outputs still to compare (they load as you scroll)' : '');
  };
}

/** The rows that compare outputs load them when scrolled near (all at once without IntersectionObserver). */
function loadOutputsWhenSeen(entries, refresh) {
  var outputs = outputLoader();
  var byRow = new Map();
  function load(entry) {
    entry.load(outputs, refresh);
  }
  var io =
    typeof IntersectionObserver === 'function'
      ? new IntersectionObserver(
          function (seen) {
            seen.forEach(function (s) {
              if (!s.isIntersecting) return;
              io.unobserve(s.target);
              load(byRow.get(s.target));
            });
          },
          { rootMargin: '400px 0px' },
        )
      : null;
  entries.forEach(function (e) {
    byRow.set(e.tr, e);
    if (!e.needsOutputs()) return;
    if (io) io.observe(e.tr);
    else load(e);
  });
}

function compareTable(entries, planA, planB) {
  return wrapTable(
    'table',
    { id: 'compare' },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col', text: 'Step' }),
        h('th', { scope: 'col', text: planA }),
        h('th', { scope: 'col', text: planB }),
      ),
    ),
    h(
      'tbody',
      null,
      entries.map(function (e) {
        return e.tr;
      }),
    ),
  );
}

function planLabel(p) {
  var how = p.forkOf
    ? forkLabel(p.forkOf.kind, p.forkOf.layer, p.forkOf.checkpointId) + ' of ' + p.forkOf.planId
    : 'original';
  return how + ', ' + p.status;
}

/** Another plan of the tree to compare with: a select of the live plans but the left one. */
function pickForm(lineage, planA, planB) {
  if (!lineage) return null;
  var others = lineageRows(lineage).filter(function (row) {
    return row.node.planId !== planA && !row.node.retiredAt;
  });
  if (others.length < 2) return null;
  var select = h(
    'select',
    { id: 'compare-with' },
    others.map(function (row) {
      return h('option', {
        value: row.node.planId,
        selected: row.node.planId === planB,
        text:
          row.node.planId +
          ' (' +
          row.relation +
          ', ' +
          forkLabel(row.node.kind, row.node.forkLayer, row.node.forkCheckpoint) +
          ')',
      });
    }),
  );
  return h(
    'form',
    {
      class: 'filters',
      id: 'compare-pick',
      onsubmit: function (e) {
        e.preventDefault();
        location.hash = '#/plans/' + enc(planA) + '/compare/' + enc(select.value);
      },
    },
    h('label', null, 'Compare ' + planA + ' with', select),
    h('button', { type: 'submit', text: 'Compare' }),
  );
}

/** Fetches stored outputs, a few at a time, each stored row once (two plans may read the same row). */
function outputLoader() {
  var cache = {};
  var running = 0;
  var waiting = [];
  function pump() {
    while (running < CONCURRENT_OUTPUTS && waiting.length) {
      var job = waiting.shift();
      running++;
      job
        .run()
        .then(job.resolve, job.reject)
        .then(function () {
          running--;
          pump();
        });
    }
  }
  return function outputOf(planId, step) {
    var key = rowOwner(step, planId) + '\u0000' + step.stepId;
    if (!cache[key])
      cache[key] = new Promise(function (resolve, reject) {
        waiting.push({
          resolve: resolve,
          reject: reject,
          run: function () {
            return api('/v1/plans/' + enc(planId) + '/steps/' + enc(step.stepId) + '/output').then(function (o) {
              return o.outputContent;
            });
          },
        });
        pump();
      });
    return cache[key];
  };
}

/** A row of the comparison: the step id and its mark, then each plan's side; loads its outputs once. */
function compareRowElement(row, planA, planB) {
  var mark = h('div', { class: 'compare-mark' });
  var sideA = side(row.a, planA, row.stepId);
  var sideB = side(row.b, planB, row.stepId);
  var outputsCompared = !row.compareOutputs;
  var tr = h(
    'tr',
    { 'data-step': row.stepId },
    h('th', { scope: 'row' }, h('code', { text: row.stepId }), mark),
    sideA.td,
    sideB.td,
  );
  function state() {
    if (row.reasons.length) return 'differs';
    return outputsCompared ? 'same' : 'pending';
  }
  function drawMark() {
    var st = state();
    tr.setAttribute('data-differs', st === 'differs' ? 'true' : st === 'pending' ? 'pending' : 'false');
    tr.classList.toggle('differs', st === 'differs');
    mark.textContent = '';
    if (st === 'differs')
      append(mark, h('strong', { class: 'diff-mark', text: '≠ differs: ' + reasonText(row.reasons, planA, planB) }));
    else if (st === 'pending') append(mark, h('span', { class: 'muted', text: 'outputs not compared yet' }));
    else
      append(mark, h('span', { class: 'muted same-mark', text: row.sameRow ? '= the same stored run' : '= the same' }));
  }
  drawMark();
  var loaded = false;
  return {
    tr: tr,
    state: state,
    needsOutputs: function () {
      return sideA.wantsOutput || sideB.wantsOutput;
    },
    load: function (outputOf, done) {
      if (loaded) return;
      loaded = true;
      var a = sideA.fill(outputOf);
      var b = sideB.fill(outputOf);
      if (!row.compareOutputs) return;
      Promise.all([a, b]).then(
        function (texts) {
          outputsCompared = true;
          if (outputDiffers(texts[0], texts[1])) row.reasons.push('output');
          drawMark();
          done();
        },
        function () {
          // an output that could not be read is shown as the error in its cell; the row stays "not compared"
        },
      );
    },
  };
}

/** One plan's side of a step: status, tokens, where it ran, and its output (filled when loaded). */
function side(step, planId, stepId) {
  if (!step) return { td: h('td', null, h('span', { class: 'muted', text: 'not in this plan' })), wantsOutput: false };
  var out = step.hasOutput
    ? h('pre', {
        class: 'compare-output',
        tabindex: 0,
        'aria-label': 'output of ' + stepId + ' in ' + planId,
        text: 'Loading…',
      })
    : h('p', { class: 'muted compare-output none', text: '(no stored output)' });
  var td = h(
    'td',
    { class: step.inheritedFrom ? 'inherited' : null },
    h('div', null, badge(step.status), ' ', fmtNum(step.inputTokens) + ' / ' + fmtNum(step.outputTokens) + ' tokens'),
    step.inheritedFrom
      ? h(
          'div',
          { class: 'inherited-note' },
          'inherited from ',
          link('#/plans/' + enc(step.inheritedFrom), step.inheritedFrom),
        )
      : null,
    h('div', { class: 'compare-task muted', text: step.agentId + ': ' + clip(step.task || '', 200) }),
    out,
  );
  return {
    td: td,
    wantsOutput: !!step.hasOutput,
    fill: function (outputOf) {
      if (!step.hasOutput) return Promise.resolve(null);
      return outputOf(planId, step).then(
        function (text) {
          out.textContent = '';
          append(out, text === null || text === undefined ? '(no stored output)' : text);
          return text;
        },
        function (err) {
          out.textContent = '';
          out.classList.add('error');
          append(out, 'Could not read the output: ' + (err && err.message ? err.message : String(err)));
          throw err;
        },
      );
    },
  };
}
