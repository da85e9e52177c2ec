/*
 * Analytics: plans per day, success rate per agent (over the steps that ran), tokens per model,
 * cost per model and per agent.
 */
import { api } from './api.js';
import { fmtNum, h, show, table, toQuery } from './dom.js';
import { barChart } from './charts.js';

export function analyticsPage(q) {
  var range = toQuery({ from: q.from, to: q.to });
  var sep = range ? '&' + range : '';
  return Promise.all([
    api('/v1/analytics/daily?' + range),
    api('/v1/analytics/agents?' + range),
    api('/v1/analytics/tokens?by=model' + sep),
    api('/v1/analytics/cost?by=model' + sep),
    api('/v1/analytics/cost?by=agent' + sep),
  ]).then(function (r) {
    var from = h('input', { name: 'from', value: q.from || '', placeholder: '2026-01-01' });
    var to = h('input', { name: 'to', value: q.to || '', placeholder: '2026-02-01' });
    var agents = r[1].agents;
    var ranAgents = agents.filter(function (a) {
      return a.successRate !== null;
    });
    var idle = agents.filter(function (a) {
      return a.successRate === null;
    });
    show(
      h('h1', { text: 'Analytics' }),
      h(
        'form',
        {
          class: 'filters',
          id: 'analytics-range',
          onsubmit: function (e) {
            e.preventDefault();
            location.hash = '#/analytics?' + toQuery({ from: from.value.trim(), to: to.value.trim() });
          },
        },
        h('label', null, 'From (ISO)', from),
        h('label', null, 'to (exclusive)', to),
        h('button', { type: 'submit', text: 'Show' }),
      ),
      h('h2', { text: 'Plans per day' }),
      barChart(
        'plans-per-day',
        r[0].days.slice(0, 30).map(function (d) {
          return [d.day, d.totalPlans, d.completed + ' completed, ' + d.failed + ' failed'];
        }),
      ),
      h('h2', { text: 'Success rate per agent (completed of the steps that ran: completed + failed)' }),
      barChart(
        'agent-success',
        ranAgents.map(function (a) {
          return [
            a.agentId,
            Math.round(a.successRate * 1000) / 10,
            a.completed +
              '/' +
              (a.completed + a.failed) +
              ' ran' +
              (a.totalSteps > a.completed + a.failed
                ? ', ' + (a.totalSteps - a.completed - a.failed) + ' not run'
                : ''),
          ];
        }),
        100,
        'success rate per agent',
      ),
      idle.length
        ? h(
            'p',
            { class: 'muted', id: 'agents-not-run' },
            'No step ran (no rate): ' +
              idle
                .map(function (a) {
                  return a.agentId + ' (' + a.totalSteps + ' not run)';
                })
                .join(', '),
          )
        : null,
      h('h2', { text: 'Tokens per model' }),
      barChart(
        'tokens-per-model',
        (r[2].byModel || []).map(function (m) {
          return [
            m.model || '(none)',
            m.totalTokens,
            fmtNum(m.inputTokens) + ' in, ' + fmtNum(m.outputTokens) + ' out',
          ];
        }),
      ),
      usageTable(r[2].byModel || []),
      h('h2', { text: 'Cost per model (USD)' }),
      barChart('cost-per-model', costBars(r[3]), undefined, 'cost per model in USD'),
      h('h2', { text: 'Cost per agent (USD)' }),
      barChart('cost-per-agent', costBars(r[4]), undefined, 'cost per agent in USD'),
    );
  });
}

/**
 * The cache and reasoning parts of each model's tokens, as a table (the bars' notes are too short
 * for them); nothing when no model reported any.
 */
function usageTable(models) {
  var any = models.some(function (m) {
    return m.cacheReadTokens || m.cacheWriteTokens || m.reasoningTokens;
  });
  if (!any) return null;
  return [
    h('h2', { text: 'Cache and reasoning tokens per model' }),
    table(
      'token-parts-per-model',
      ['Model', 'Input', 'Cache read', 'Cache write', 'Output', 'Reasoning'],
      models.map(function (m) {
        return h(
          'tr',
          null,
          h('td', { text: m.model || '(none)' }),
          [m.inputTokens, m.cacheReadTokens, m.cacheWriteTokens, m.outputTokens, m.reasoningTokens].map(function (n) {
            return h('td', { class: 'num', text: fmtNum(n || 0) });
          }),
        );
      }),
    ),
  ];
}

/** Bars of an analytics cost answer: the exact amount as text, unpriced steps named. */
function costBars(answer) {
  return (answer.lines || []).map(function (l) {
    return [
      l.key || '(none)',
      Number(l.cost),
      l.pricedSteps +
        ' priced' +
        (l.unpricedSteps ? ', ' + l.unpricedSteps + ' unpriced' : '') +
        reportedNote(l.reported),
      '$' + l.cost,
    ];
  });
}

/**
 * A cost line's steps at a reported cost (e.g. llm.cost.total): the reported figure beside what the
 * prices give for them, flagged when the two differ.
 */
function reportedNote(r) {
  if (!r) return '';
  return (
    '; ' +
    r.steps +
    ' reported $' +
    r.reportedCost +
    (r.differs ? ', differs from the prices: $' + r.pricedCost : ', as the prices give')
  );
}
