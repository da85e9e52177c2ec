/*
 * Reconcile: the ledger against a provider's usage or cost export (POST /v1/analytics/reconcile,
 * what `plan-ledger cost reconcile --json` prints), from uploaded files or a pasted export. Read
 * only: nothing is stored. Every value of the answer reaches the page as text.
 */
import { api } from './api.js';
import { card, errorBox, fmtNum, h, show, table, toQuery } from './dom.js';

/** The body of the request: one export as it is, or several JSON exports as an array of their pages. */
function exportBody(texts) {
  var list = texts
    .map(function (t) {
      return t.trim();
    })
    .filter(Boolean);
  if (list.length === 0) throw new Error('choose an export file or paste one');
  var json = list.every(function (t) {
    return t[0] === '{' || t[0] === '[';
  });
  if (list.length > 1 && !json) throw new Error('several files must all be JSON exports; send a CSV export alone');
  var body = list.length === 1 ? list[0] : '[' + list.join(',') + ']';
  return { body: body, type: json ? 'application/json' : 'text/csv' };
}

function readFiles(input) {
  return Promise.all(
    Array.prototype.map.call(input.files || [], function (f) {
      return f.text();
    }),
  );
}

function pct(v) {
  return v === null || v === undefined ? '–' : v + ' %';
}

/** "$0.25", "-$0.25" for an exact decimal string of USD; "–" for none. */
function money(v) {
  if (v === null || v === undefined) return '–';
  var text = String(v);
  return text[0] === '-' ? '-$' + text.slice(1) : '$' + text;
}

/** The answer: coverage, cost delta, totals, what could not be attributed, then per model. */
function resultView(r) {
  var u = r.unattributed;
  var unattributed = [];
  u.billedModelsNotInLedger.forEach(function (m) {
    unattributed.push(['billed, not in the ledger', m.model, m.totalTokens, m.cost]);
  });
  u.ledgerModelsNotBilled.forEach(function (m) {
    unattributed.push(['in the ledger, not billed', m.model, m.totalTokens, m.cost]);
  });
  if (u.costWithoutModel !== null && u.costWithoutModel !== '0')
    unattributed.push(['billed cost naming no model', '–', null, u.costWithoutModel]);
  return [
    r.check && r.check.beyond ? h('p', { class: 'error', id: 'reconcile-beyond', text: r.check.beyond }) : null,
    h(
      'div',
      { class: 'cards', id: 'reconcile-cards' },
      card('coverage (ledger / billed tokens)', pct(r.coveragePct)),
      card('cost delta (ledger − billed)', money(r.costDelta)),
      card('cost delta', pct(r.costDeltaPct)),
      card('ledger cost', money(r.ledger.cost)),
      card('billed cost', money(r.billedTotals.cost)),
      card('ledger tokens', fmtNum(r.ledger.totalTokens)),
      card('billed tokens', fmtNum(r.billedTotals.totalTokens)),
    ),
    h('p', { class: 'muted', text: r.provider + ', ' + (r.from || '…') + ' to ' + (r.to || '…') }),
    h('h2', { text: 'Not attributed' }),
    table(
      'reconcile-unattributed',
      ['What', 'Model', 'Tokens', 'Cost (USD)'],
      unattributed.map(function (row) {
        return h(
          'tr',
          null,
          h('td', { text: row[0] }),
          h('td', { text: row[1] }),
          h('td', { class: 'num', text: fmtNum(row[2]) }),
          h('td', { class: 'num', text: money(row[3]) }),
        );
      }),
      'Everything billed is in the ledger, and everything in the ledger is billed.',
    ),
    h('h2', { text: 'Per model' }),
    table(
      'reconcile-models',
      ['Model', 'Ledger tokens', 'Billed tokens', 'Coverage', 'Ledger cost', 'Billed cost', 'Delta'],
      r.byModel.map(function (l) {
        return h(
          'tr',
          null,
          h('td', { text: l.model }),
          h('td', { class: 'num', text: fmtNum(l.ledger.totalTokens) }),
          h('td', { class: 'num', text: l.billed ? fmtNum(l.billed.totalTokens) : '–' }),
          h('td', { class: 'num', text: pct(l.coveragePct) }),
          h('td', { class: 'num', text: money(l.ledger.cost) }),
          h('td', { class: 'num', text: l.billed ? money(l.billed.cost) : '–' }),
          h('td', { class: 'num', text: money(l.costDelta) }),
        );
      }),
      'No model in the ledger or the export for this range.',
    ),
  ];
}

export function reconcilePage() {
  var result = h('div', { id: 'reconcile-result', 'aria-live': 'polite' });
  var provider = h(
    'select',
    { name: 'provider' },
    h('option', { value: 'openai', text: 'OpenAI' }),
    h('option', { value: 'anthropic', text: 'Anthropic' }),
  );
  var from = h('input', { name: 'from', placeholder: '2026-11-01' });
  var to = h('input', { name: 'to', placeholder: '2026-12-01' });
  var failOver = h('input', { name: 'failOver', inputmode: 'decimal', placeholder: '5' });
  var files = h('input', { type: 'file', name: 'files', multiple: true, accept: '.json,.jsonl,.csv,.txt' });
  var pasted = h('textarea', { name: 'pasted', rows: 5, cols: 60 });
  var submit = function (e) {
    e.preventDefault();
    result.textContent = 'Reconciling…';
    readFiles(files)
      .then(function (texts) {
        var sent = exportBody(texts.concat([pasted.value]));
        var query = toQuery({
          provider: provider.value,
          from: from.value.trim(),
          to: to.value.trim(),
          failOver: failOver.value.trim(),
        });
        return api('/v1/analytics/reconcile?' + query, { method: 'POST', rawBody: sent.body, contentType: sent.type });
      })
      .then(
        function (r) {
          result.textContent = '';
          result.append.apply(result, resultView(r).filter(Boolean));
        },
        function (err) {
          result.textContent = '';
          result.append(errorBox(err));
        },
      );
  };
  show(
    h('h1', { text: 'Reconcile with the bill' }),
    h('p', {
      class: 'muted',
      text:
        "The ledger against a provider's usage or cost export (the JSON or CSV files its admin console or API gives), " +
        'by UTC day and model: nothing is stored. Several JSON files (usage and cost) are sent together.',
    }),
    h(
      'form',
      { class: 'filters', id: 'reconcile-form', onsubmit: submit },
      h('label', null, 'Provider', provider),
      h('label', null, 'From (ISO)', from),
      h('label', null, 'to (exclusive)', to),
      h('label', null, 'Fail over (%)', failOver),
      h('label', null, 'Export files', files),
      h('label', null, 'or paste an export', pasted),
      h('button', { type: 'submit', text: 'Reconcile' }),
    ),
    result,
  );
  return Promise.resolve();
}
