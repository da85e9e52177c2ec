/*
 * The plans list (filters, paging) and one plan: its DAG, timeline, decisions, handoffs,
 * checkpoints and steps; for a fork, where it came from, its lineage and which steps it inherited.
 */
import { api } from './api.js';
import {
  append,
  badge,
  card,
  enc,
  errorBox,
  fmtMs,
  fmtNum,
  fmtTime,
  h,
  link,
  show,
  table,
  toQuery,
  wrapTable,
} from './dom.js';
import { dagSvg, dagViewer, updateDag } from './dag.js';
import { stop, watch } from './live.js';
import { ganttSvg } from './timeline.js';
import { lineagePanel } from './page-compare.js';

var PAGE = 20;

export function plansPage(q) {
  // pages go by cursor (the last plan of the page before): a deep page costs what the first does;
  // `at` only numbers the page's rows for the reader
  var at = Number(q.at || 0);
  var filter = { sessionId: q.sessionId, status: q.status, agentId: q.agentId, from: q.from, to: q.to };
  var query = Object.assign({}, filter, { limit: PAGE }, q.cursor ? { cursor: q.cursor } : {});
  return api('/v1/plans?' + toQuery(query)).then(function (page) {
    show(
      h('h1', { text: 'Plans' }),
      planSearchForm(),
      planFilterForm(q),
      plansTable(page.plans),
      plansPager(page, filter, at),
    );
  });
}

/** Opens a plan by its id. */
function planSearchForm() {
  var search = h('input', { name: 'planId', placeholder: 'plan id', id: 'plan-search' });
  return h(
    'form',
    {
      class: 'filters',
      id: 'plan-search-form',
      onsubmit: function (e) {
        e.preventDefault();
        if (search.value.trim()) location.hash = '#/plans/' + enc(search.value.trim());
      },
    },
    h('label', null, 'Open a plan by id', search),
    h('button', { type: 'submit', text: 'Open' }),
  );
}

/** The list's filters, each starting at the query's value; submitting opens the filtered list's first page. */
function planFilterForm(q) {
  var fields = {};
  function field(name, label, attrs) {
    fields[name] = h('input', Object.assign({ name: name, value: q[name] || '' }, attrs || {}));
    return h('label', null, label, fields[name]);
  }
  var status = h(
    'select',
    { name: 'status' },
    ['', 'planning', 'executing', 'stalled', 'completed', 'failed', 'cancelled'].map(function (st) {
      return h('option', { value: st, selected: (q.status || '') === st, text: st || 'any status' });
    }),
  );
  return h(
    'form',
    {
      class: 'filters',
      id: 'plan-filters',
      onsubmit: function (e) {
        e.preventDefault();
        var next = {
          sessionId: fields.sessionId.value.trim(),
          status: status.value,
          agentId: fields.agentId.value.trim(),
          from: fields.from.value.trim(),
          to: fields.to.value.trim(),
        };
        location.hash = '#/plans?' + toQuery(next);
      },
    },
    field('sessionId', 'Session'),
    h('label', null, 'Status', status),
    field('agentId', 'Agent'),
    field('from', 'Created from (ISO)', { placeholder: '2026-01-01' }),
    field('to', 'to (exclusive)', { placeholder: '2026-02-01' }),
    h('button', { type: 'submit', text: 'Filter' }),
  );
}

function plansTable(plans) {
  var rows = plans.map(function (p) {
    return h(
      'tr',
      { 'data-plan': p.planId },
      h('td', null, link('#/plans/' + enc(p.planId), p.planId)),
      h('td', null, link('#/sessions/' + enc(p.sessionId), p.sessionId)),
      h('td', null, badge(p.status)),
      h('td', { class: 'num', text: p.completedSteps + '/' + p.totalSteps }),
      h('td', { class: 'num', text: fmtNum(p.inputTokens + p.outputTokens) }),
      h('td', { text: fmtTime(p.createdAt) }),
      h('td', { text: p.query.length > 120 ? p.query.slice(0, 119) + '…' : p.query }),
    );
  });
  var head = ['Plan', 'Session', 'Status', 'Steps', 'Tokens', 'Created', 'Query'].map(function (t) {
    return h('th', { text: t });
  });
  return wrapTable('table', { id: 'plans' }, h('thead', null, h('tr', null, head)), h('tbody', null, rows));
}

/** Back to the newest page, which rows of the total this page shows, and the next (older) page. */
function plansPager(page, filter, at) {
  var total = fmtNum(page.total) + (page.totalExact ? '' : '+');
  return h(
    'p',
    { id: 'plans-pager' },
    at > 0 ? link('#/plans?' + toQuery(filter), '← newest') : null,
    ' ',
    h('span', {
      class: 'muted',
      text: page.plans.length === 0 ? 'no plans' : at + 1 + '–' + (at + page.plans.length) + ' of ' + total,
    }),
    ' ',
    page.nextCursor
      ? link('#/plans?' + toQuery(Object.assign({}, filter, { cursor: page.nextCursor, at: at + PAGE })), 'older →')
      : null,
  );
}

export function planPage(planId) {
  var started = performance.now();
  var planPath = '/v1/plans/' + enc(planId);
  return Promise.all([api(planPath), resumePointOf(planId), lineageOf(planId)]).then(function (r) {
    // what the page shows; a running plan's live updates replace both
    var state = { view: r[0], resume: r[1] };
    var steps = state.view.steps;
    var resume = state.resume;
    var dagView = dagViewer(
      dagSvg(steps, state.view.layers, resume, state.view.checkpoints),
      resume && resume.resumable && resume.nextSteps && resume.nextSteps.length ? resume.nextSteps[0].stepId : null,
    );
    var parts = {
      summary: h(
        'div',
        { id: 'plan-summary' },
        planSummary(state.view.plan, state.view.source, steps),
        stalledBadge(state),
      ),
      rest: h('div', { id: 'plan-rest', 'aria-busy': 'true' }),
      timeline: timelinePart(state),
      tables: tablesPart(state),
    };
    show(
      h('h1', { text: 'Plan ' + state.view.plan.planId }),
      parts.summary,
      lineagePanel(r[2]),
      h('h2', { text: 'DAG' }),
      dagLegend(steps),
      dagView.toolbar,
      dagView.viewport,
      parts.rest,
    );
    var dag = document.getElementById('dag');
    if (dag) dag.setAttribute('data-render-ms', String(Math.round(performance.now() - started)));
    performance.mark('plan-rendered');
    drawRestAfterPaint(parts, dag, started);
    // a running plan updates by itself: the DAG's boxes, the cards, the tables and the timeline
    // change in place (the view, the filter and the scroll stay); a changed step list redraws all
    if (isRunning(state.view.plan))
      watchPlan({ planId: planId, planPath: planPath, state: state, parts: parts, dag: dag });
  });
}

function dagLegend(steps) {
  return h(
    'div',
    { class: 'legend' },
    ['completed', 'failed', 'in_progress', 'pending', 'skipped'].map(function (st) {
      return h('span', null, badge(st));
    }),
    h('span', { text: '▭ dashed: resume point (next layer to run)' }),
    h('span', { text: '⚑ last checkpoint' }),
    steps.some(isInherited)
      ? h('span', { class: 'legend-inherited', text: '▭ grey: inherited (ran in an ancestor)' })
      : null,
  );
}

/** The timeline with its rows select; a long plan's timeline starts collapsed to a row per agent. */
function timelinePart(state) {
  var box = h('div', { class: 'scroll', id: 'timeline-box' });
  var mode = h(
    'select',
    {
      id: 'timeline-mode',
      'aria-label': 'timeline rows',
      onchange: function () {
        draw();
      },
    },
    [
      ['step', 'a row per step'],
      ['agent', 'a row per agent'],
      ['layer', 'a row per layer'],
    ].map(function (o) {
      return h('option', { value: o[0], text: o[1] });
    }),
  );
  mode.value = state.view.steps.length > 100 ? 'agent' : 'step';
  function draw() {
    box.textContent = '';
    // a fork's inherited steps ran in an ancestor, before this plan existed: not on its timeline
    append(box, ganttSvg(state.view.steps.filter(ranHere), state.view.plan, mode.value, state.view.layers));
  }
  return { controls: h('div', { class: 'timeline-controls' }, h('label', null, 'Rows ', mode)), box: box, draw: draw };
}

/** The decisions, handoffs and checkpoints tables, the steps table with its filter, and a step's output. */
function tablesPart(state) {
  var tables = h('div', { id: 'plan-tables' });
  var stepsBox = h('div', { id: 'steps-box' });
  var outputBox = h('div', { id: 'step-output' });
  var filter = stepFilter(function () {
    return state.view.steps;
  });
  function draw() {
    var view = state.view;
    tables.textContent = '';
    append(tables, [
      h('h2', { text: 'Decisions' }),
      decisionsTable(view.decisions),
      h('h2', { text: 'Handoffs' }),
      handoffsTable(view.handoffs),
      h('h2', { text: 'Checkpoints' }),
      checkpointsTable(view.checkpoints, state.resume),
    ]);
    stepsBox.textContent = '';
    append(stepsBox, stepsTable(view.plan.planId, view.steps, outputBox));
    filter.apply();
  }
  return { elements: [tables, h('h2', { text: 'Steps' }), filter.element, stepsBox, outputBox], draw: draw };
}

/**
 * The first frame after the DOM is built: the DAG has been laid out and painted; the rest of the
 * page (timeline, tables: thousands of rows in a long plan) is built after that frame.
 */
function drawRestAfterPaint(parts, dag, started) {
  requestAnimationFrame(function () {
    setTimeout(function () {
      if (dag) dag.setAttribute('data-paint-ms', String(Math.round(performance.now() - started)));
      parts.timeline.draw();
      append(parts.rest, [h('h2', { text: 'Timeline' }), parts.timeline.controls, parts.timeline.box]);
      append(parts.rest, parts.tables.elements);
      parts.tables.draw();
      parts.rest.removeAttribute('aria-busy');
      parts.rest.setAttribute('data-ready', 'true');
    }, 0);
  });
}

/** A running plan's page follows its changes in place; a changed step list draws the page anew. */
function watchPlan(o) {
  var parts = o.parts;
  watch([o.planPath], function (bodies) {
    var next = bodies[0];
    if (!sameShape(o.state.view, next)) return planPage(o.planId);
    return resumePointOf(o.planId).then(function (nextResume) {
      o.state.view = next;
      o.state.resume = nextResume;
      parts.summary.textContent = '';
      append(parts.summary, [planSummary(next.plan, next.source, next.steps), stalledBadge(o.state)]);
      updateDag(o.dag, next.steps, nextResume);
      if (parts.rest.hasAttribute('data-ready')) {
        parts.timeline.draw();
        parts.tables.draw();
      }
      document.getElementById('app').setAttribute('data-updated', String(Date.now()));
      if (!isRunning(next.plan)) stop();
    });
  });
}

/** The plan's fork tree; null when it cannot be read (the plan page is shown without it). */
function lineageOf(planId) {
  return api('/v1/plans/' + enc(planId) + '/lineage').catch(function () {
    return null;
  });
}

function isInherited(st) {
  return !!st.inheritedFrom;
}

function ranHere(st) {
  return !st.inheritedFrom;
}

function resumePointOf(planId) {
  return api('/v1/workflows/' + enc(planId) + '/resume-point').catch(function () {
    return null;
  });
}

/** A plan's cost, and its steps no price is known for: never shown as a silent zero. */
function costText(p) {
  if (p.cost === undefined || p.cost === null) return '–';
  return '$' + p.cost + (p.unpricedSteps ? ' + ' + p.unpricedSteps + ' unpriced' : '');
}

/**
 * A stalled plan (running, no event within its deadline): since when, and where an executor
 * resumes it (the resume point's next layer and checkpoint).
 */
function stalledBadge(state) {
  var view = state.view;
  if (!view || !view.stalledSince) return null;
  var resume = state.resume;
  var where =
    resume && resume.resumable
      ? 'resume at layer ' +
        resume.nextLayer +
        ' (' +
        (resume.nextSteps || [])
          .map(function (st) {
            return st.stepId;
          })
          .join(', ') +
        ')' +
        (resume.latestCheckpoint ? ' from checkpoint ' + resume.latestCheckpoint.checkpointId : '') +
        ', next seq ' +
        resume.nextSeq
      : 'no resume point' + (resume && resume.reason ? ': ' + resume.reason : '');
  return h('p', { id: 'plan-stalled' }, badge('stalled'), ' since ' + fmtTime(view.stalledSince) + ' · ' + where);
}

function isRunning(p) {
  return p.status === 'executing' || p.status === 'planning';
}

/** The same steps in the same layers: the DAG can be updated in place. */
function sameShape(a, b) {
  return JSON.stringify(a.layers) === JSON.stringify(b.layers);
}

/** Cards of the cache and reasoning tokens of the plan's own steps, those that are not zero. */
function usageCards(steps) {
  var own = steps.filter(function (st) {
    return !isInherited(st);
  });
  var sum = function (field) {
    return own.reduce(function (n, st) {
      return n + (st[field] || 0);
    }, 0);
  };
  return [
    ['cache read tokens', sum('cacheReadTokens')],
    ['cache write tokens', sum('cacheWriteTokens')],
    ['reasoning tokens', sum('reasoningTokens')],
  ]
    .filter(function (c) {
      return c[1] > 0;
    })
    .map(function (c) {
      return card(c[0], fmtNum(c[1]));
    });
}

function planSummary(p, source, steps) {
  var inherited = steps.filter(isInherited).length;
  return [
    p.forkOf
      ? h(
          'p',
          { id: 'plan-fork' },
          p.forkOf.kind === 'replay' ? 'replay of ' : 'fork of ',
          link('#/plans/' + enc(p.forkOf.planId), p.forkOf.planId),
          p.forkOf.kind === 'replay' ? '' : ' from layer ' + p.forkOf.layer,
          p.forkOf.checkpointId ? ' (checkpoint ' + p.forkOf.checkpointId + ')' : '',
          ' · ' + inherited + ' of ' + steps.length + ' steps inherited, ' + (steps.length - inherited) + ' its own',
        )
      : null,
    h(
      'p',
      { id: 'plan-status' },
      badge(p.status),
      ' ',
      'session ',
      link('#/sessions/' + enc(p.sessionId), p.sessionId),
      ' · created ',
      fmtTime(p.createdAt),
      p.completedAt ? ' · ended ' + fmtTime(p.completedAt) : '',
      ' · source ',
      h('span', {
        id: 'plan-source',
        text:
          source && source.kind === 'opentelemetry'
            ? 'OpenTelemetry trace' + (source.traceId ? ' ' + source.traceId : '')
            : 'events',
      }),
    ),
    h('p', { class: 'query', text: p.query }),
    p.failureReason ? h('p', { class: 'error', text: 'Failure: ' + p.failureReason }) : null,
    h(
      'div',
      { class: 'cards' },
      card('steps', p.totalSteps),
      card('completed', p.completedSteps),
      card('failed', p.failedSteps),
      card('skipped', p.skippedSteps),
      card('input tokens', fmtNum(p.inputTokens)),
      card('output tokens', fmtNum(p.outputTokens)),
      usageCards(steps),
      card('cost (USD)', costText(p)),
      isRunning(p)
        ? card('running for', fmtMs(Math.max(0, Date.now() - Date.parse(p.createdAt))))
        : card('duration', fmtMs(p.durationMs)),
    ),
  ];
}

function decisionsTable(decisions) {
  return table(
    'decisions',
    ['When', 'Decision', 'By', 'What changed', 'Feedback'],
    decisions.map(function (d) {
      var changed = '–';
      if (d.stepChanges) {
        var c = d.stepChanges;
        var parts = [];
        if (c.added.length) parts.push('added ' + c.added.join(', '));
        if (c.changed.length) parts.push('changed ' + c.changed.join(', '));
        if (c.removed.length) parts.push('removed ' + c.removed.join(', '));
        // what the edit replaced: the old task text of each changed or removed step
        (c.replaced || []).forEach(function (r) {
          parts.push(r.stepId + ' was "' + (r.task || r.title || '') + '"');
        });
        changed = (parts.length ? parts.join('; ') : 'no step changed') + ' (' + d.editedStepCount + ' steps after)';
      } else if (d.editedStepCount !== null) {
        changed = d.editedStepCount + ' steps after the edit';
      }
      return h(
        'tr',
        { 'data-decision': d.decision },
        h('td', { text: fmtTime(d.at) }),
        h('td', null, badge(d.decision)),
        h('td', { text: d.decidedBy || '–' }),
        h('td', { text: changed }),
        h('td', { text: d.feedback || '' }),
      );
    }),
    'No decisions recorded.',
  );
}

function handoffsTable(handoffs) {
  return table(
    'handoffs',
    ['When', 'From', 'To', 'Step', 'Reason'],
    handoffs.map(function (x) {
      return h(
        'tr',
        null,
        h('td', { text: fmtTime(x.at) }),
        h('td', { text: x.fromAgentId }),
        h('td', { text: x.toAgentId }),
        h('td', { text: x.stepId || '–' }),
        h('td', { text: x.reason + (x.explanation ? ': ' + x.explanation : '') }),
      );
    }),
    'No handoffs.',
  );
}

function checkpointsTable(checkpoints, resume) {
  var latest = resume && resume.resumable && resume.latestCheckpoint ? resume.latestCheckpoint.checkpointId : null;
  return table(
    'checkpoints',
    ['When', 'Checkpoint', 'Layer', 'Resume'],
    checkpoints.map(function (c) {
      return h(
        'tr',
        null,
        h('td', { text: fmtTime(c.at) }),
        h('td', { text: c.checkpointId }),
        h('td', { class: 'num', text: c.layer }),
        h('td', { text: c.checkpointId === latest ? 'latest (resume from here)' : '' }),
      );
    }),
    'No checkpoints.',
  );
}

/**
 * Filters the steps table and dims the DAG's other steps: by text (step id, title, agent, model,
 * result or error) and by status.
 */
function stepFilter(getSteps) {
  var text = h('input', { id: 'step-filter', type: 'search', placeholder: 'step, agent, model, error…' });
  var status = h(
    'select',
    { id: 'step-status-filter', 'aria-label': 'step status' },
    ['', 'pending', 'in_progress', 'completed', 'failed', 'skipped'].map(function (st) {
      return h('option', { value: st, text: st || 'any status' });
    }),
  );
  // a fork's steps: the ones it ran itself, or the ones it inherited
  var origin = getSteps().some(isInherited)
    ? h(
        'select',
        { id: 'step-origin-filter', 'aria-label': 'where the step ran' },
        [
          ['', 'inherited or own'],
          ['own', 'its own steps'],
          ['inherited', 'inherited steps'],
        ].map(function (o) {
          return h('option', { value: o[0], text: o[1] });
        }),
      )
    : null;
  var count = h('span', { class: 'muted', id: 'step-filter-count', text: getSteps().length + ' steps' });
  function apply() {
    var steps = getSteps();
    var needle = text.value.trim().toLowerCase();
    var wanted = status.value;
    var from = origin ? origin.value : '';
    var byId = {};
    steps.forEach(function (st) {
      byId[st.stepId] = st;
    });
    function keep(id) {
      var st = byId[id];
      if (!st) return false;
      if (wanted && st.status !== wanted) return false;
      if (from && isInherited(st) !== (from === 'inherited')) return false;
      if (!needle) return true;
      var hay = [st.stepId, st.title, st.agentId, st.model, st.error, st.result].filter(Boolean).join(' ');
      return hay.toLowerCase().indexOf(needle) >= 0;
    }
    var shown = 0;
    document.querySelectorAll('#steps tr[data-step]').forEach(function (row) {
      var ok = keep(row.getAttribute('data-step'));
      row.hidden = !ok;
      if (ok) shown++;
    });
    document.querySelectorAll('#dag .dag-node').forEach(function (node) {
      node.classList.toggle('dimmed', !!(needle || wanted || from) && !keep(node.getAttribute('data-step')));
    });
    count.textContent = needle || wanted || from ? shown + ' of ' + steps.length + ' steps' : steps.length + ' steps';
  }
  text.addEventListener('input', apply);
  status.addEventListener('change', apply);
  if (origin) origin.addEventListener('change', apply);
  return {
    apply: apply,
    element: h(
      'div',
      { class: 'step-filter', role: 'search' },
      h('label', null, 'Filter ', text),
      h('label', null, 'Status ', status),
      origin ? h('label', null, 'Ran ', origin) : null,
      count,
    ),
  };
}

/** "cache read 900 · cache write 100 · reasoning 40": the parts of a step's tokens it reported, or ''. */
function usageParts(st) {
  return [
    st.cacheReadTokens ? 'cache read ' + fmtNum(st.cacheReadTokens) : '',
    st.cacheWriteTokens ? 'cache write ' + fmtNum(st.cacheWriteTokens) : '',
    st.reasoningTokens ? 'reasoning ' + fmtNum(st.reasoningTokens) : '',
  ]
    .filter(Boolean)
    .join(' · ');
}

/** For a step costed at the provider's reported figure: "reported; priced $0.07" when the prices differ. */
function reportedNote(st) {
  if (st.reportedCost === null || st.reportedCost === undefined) return '';
  if (st.pricedCost === st.reportedCost) return 'reported';
  return 'reported; priced ' + (st.pricedCost === null ? 'unpriced' : '$' + st.pricedCost);
}

function stepsTable(planId, steps, outputBox) {
  return table(
    'steps',
    ['#', 'Step', 'Agent', 'Status', 'Model', 'Tokens in/out', 'Cost (USD)', 'Duration', 'Result / error', 'Output'],
    steps.map(function (st) {
      return h(
        'tr',
        {
          'data-step': st.stepId,
          class: isInherited(st) ? 'inherited' : null,
          'data-inherited-from': st.inheritedFrom || null,
        },
        h('td', { class: 'num', text: st.index }),
        h(
          'td',
          null,
          st.stepId + (st.title ? ' — ' + st.title : ''),
          isInherited(st)
            ? h(
                'span',
                { class: 'inherited-note' },
                'inherited from ',
                link('#/plans/' + enc(st.inheritedFrom), st.inheritedFrom),
              )
            : null,
        ),
        h('td', { text: st.agentId }),
        h('td', null, badge(st.status)),
        h('td', { text: st.model || '–' }),
        h(
          'td',
          { class: 'num step-tokens' },
          fmtNum(st.inputTokens) + ' / ' + fmtNum(st.outputTokens),
          usageParts(st) ? h('span', { class: 'usage-note', text: usageParts(st) }) : null,
        ),
        h(
          'td',
          { class: 'num step-cost', title: st.priceRef || st.costSource || '' },
          st.cost !== null && st.cost !== undefined ? '$' + st.cost : st.costSource === 'unpriced' ? 'unpriced' : '–',
          reportedNote(st) ? h('span', { class: 'usage-note reported-cost', text: reportedNote(st) }) : null,
        ),
        h('td', { class: 'num', text: fmtMs(st.durationMs) }),
        h('td', { text: st.error || st.result || '' }),
        h(
          'td',
          null,
          st.hasOutput
            ? h('button', {
                class: 'show-output',
                'data-step': st.stepId,
                text: 'output',
                onclick: function () {
                  outputBox.textContent = 'Loading…';
                  api('/v1/plans/' + enc(planId) + '/steps/' + enc(st.stepId) + '/output').then(
                    function (o) {
                      outputBox.textContent = '';
                      // shown as text, whatever it holds (markdown, HTML): never parsed as markup
                      append(outputBox, [
                        h('h2', { text: 'Output of ' + o.stepId + ' (shown as text)' }),
                        h('pre', {
                          id: 'output-text',
                          text: o.outputContent === null ? '(no stored output)' : o.outputContent,
                        }),
                      ]);
                      // the output sits below the steps table: bring it into view
                      outputBox.scrollIntoView({ block: 'start' });
                    },
                    function (err) {
                      outputBox.textContent = '';
                      append(outputBox, errorBox(err));
                    },
                  );
                },
              })
            : null,
        ),
      );
    }),
    'No steps.',
  );
}
