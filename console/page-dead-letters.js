/*
 * Dead letters: the list (filters) and one dead letter with its reason, its event, replay and purge.
 */
import { api, isAdmin } from './api.js';
import { append, badge, enc, errorBox, fmtNum, fmtTime, h, link, show, toQuery, wrapTable } from './dom.js';
import { watch } from './live.js';

var DLQ_PAGE = 50;
var FILTER_KEYS = ['type', 'kind', 'plan', 'shard', 'since', 'until'];

/**
 * The dead letters, newest first (what an operator on call looks for; "oldest first" a click away),
 * a page at a time with the total, and with an admin key: replay or purge the ticked ones, or all
 * that match the filter, after a confirmation that says how many.
 */
export function deadLettersPage(q, notice) {
  var order = q.order === 'oldest' ? 'oldest' : 'newest';
  var offset = Math.max(0, Number(q.offset) || 0);
  var filter = {};
  FILTER_KEYS.forEach(function (k) {
    if (q[k]) filter[k] = q[k];
  });
  var path =
    '/v1/dead-letters?' + toQuery(Object.assign({}, filter, { order: order, offset: offset, limit: DLQ_PAGE }));
  return api(path).then(function (list) {
    // what the last bulk action did, kept across the redraw that follows it
    var out = h(
      'div',
      { id: 'bulk-result' },
      notice ? h('p', { class: 'notice', role: 'status', text: notice }) : null,
    );
    var page = {
      q: q,
      order: order,
      offset: offset,
      filter: filter,
      list: list,
      admin: isAdmin(),
      boxes: [],
      out: out,
    };
    watch([path], function () {
      // ticked boxes are the operator's work in progress: no redraw under them
      if (tickedIds(page.boxes).length === 0) return deadLettersPage(q);
    });
    show(
      h('h1', { text: 'Dead letters' }),
      filterForm(q, order),
      pagerLine(page),
      page.admin
        ? bulkActions(page)
        : h('p', { class: 'muted', text: 'Replay and purge need an admin key (HTTP_ADMIN_KEYS).' }),
      out,
      deadLettersTable(page),
    );
  });
}

/** The filter fields, each starting at the query's value; submitting opens the filtered list. */
function filterForm(q, order) {
  var inputs = {};
  function field(name, label, placeholder) {
    inputs[name] = h('input', { name: name, value: q[name] || '', placeholder: placeholder || '' });
    return h('label', null, label, inputs[name]);
  }
  return h(
    'form',
    {
      class: 'filters',
      id: 'dlq-filters',
      onsubmit: function (e) {
        e.preventDefault();
        var next = { order: order };
        Object.keys(inputs).forEach(function (k) {
          next[k] = inputs[k].value.trim();
        });
        location.hash = '#/dead-letters?' + toQuery(next);
      },
    },
    field('type', 'Type', 'step.completed'),
    field('kind', 'Kind', 'invalid,conflict'),
    field('plan', 'Plan'),
    field('shard', 'Shard', '0'),
    field('since', 'Since (ISO)'),
    field('until', 'Until (ISO)'),
    h('button', { type: 'submit', text: 'Filter' }),
  );
}

/** The order switch, the previous and next pages, and which rows of the total this page shows. */
function pagerLine(page) {
  var order = page.order;
  var offset = page.offset;
  var list = page.list;
  function here(changes) {
    return '#/dead-letters?' + toQuery(Object.assign({}, page.filter, { order: order, offset: offset }, changes));
  }
  return h(
    'p',
    { id: 'dlq-pager' },
    link(
      here({ order: order === 'newest' ? 'oldest' : 'newest', offset: 0 }),
      order === 'newest' ? 'oldest first' : 'newest first',
    ),
    ' · ',
    offset > 0 ? link(here({ offset: Math.max(0, offset - DLQ_PAGE) }), '← previous') : null,
    ' ',
    h('span', {
      class: 'muted',
      text:
        list.total === 0
          ? 'no dead letters'
          : (order === 'newest' ? 'newest first: ' : 'oldest first: ') +
            (offset + 1) +
            '–' +
            (offset + list.deadLetters.length) +
            ' of ' +
            fmtNum(list.total),
    }),
    ' ',
    offset + DLQ_PAGE < list.total ? link(here({ offset: offset + DLQ_PAGE }), 'next →') : null,
  );
}

/** The ids of the ticked boxes. */
function tickedIds(boxes) {
  return boxes
    .filter(function (b) {
      return b.checked;
    })
    .map(function (b) {
      return b.value;
    });
}

/** A replay or purge of `count` dead letters, once confirmed; the list is redrawn with what it did. */
function bulkAction(page, verb, body, count) {
  var question =
    verb === 'replay'
      ? 'Put ' + count + ' dead letter(s) back on the queue? The worker stores each event at most once.'
      : 'Remove ' + count + ' dead letter(s) for good? Their events are not stored.';
  if (!window.confirm(question)) return;
  page.out.textContent = '';
  api('/v1/dead-letters/' + verb, { method: 'POST', body: body }).then(
    function (r) {
      return deadLettersPage(page.q, actionNotice(verb, r));
    },
    function (err) {
      append(page.out, errorBox(err));
    },
  );
}

/** An admin's buttons: replay or purge the ticked dead letters, or all that match the filter. */
function bulkActions(page) {
  var total = page.list.total;
  function button(id, verb, text, onclick) {
    return h('button', {
      type: 'button',
      id: id,
      class: verb === 'purge' ? 'danger' : null,
      text: text,
      onclick: onclick,
    });
  }
  function onTicked(verb) {
    return function () {
      var ids = tickedIds(page.boxes);
      if (ids.length) bulkAction(page, verb, { ids: ids }, ids.length);
    };
  }
  function onAll(verb) {
    return function () {
      bulkAction(page, verb, Object.assign({ all: true }, page.filter), total);
    };
  }
  return h(
    'div',
    { class: 'bulk-actions', id: 'bulk-actions' },
    button('replay-selected', 'replay', 'Replay ticked', onTicked('replay')),
    button('purge-selected', 'purge', 'Purge ticked', onTicked('purge')),
    total > 0 ? button('replay-all', 'replay', 'Replay all ' + fmtNum(total) + ' matching', onAll('replay')) : null,
    total > 0 ? button('purge-all', 'purge', 'Purge all ' + fmtNum(total) + ' matching', onAll('purge')) : null,
  );
}

/** The page's dead letters, with a tick box each (and one for all) for an admin. */
function deadLettersTable(page) {
  var admin = page.admin;
  var boxes = page.boxes;
  if (page.list.deadLetters.length === 0)
    return h('p', { class: 'muted', id: 'dead-letters', text: 'No dead letters.' });
  var allBox = admin
    ? h('input', {
        type: 'checkbox',
        id: 'tick-all',
        'aria-label': 'tick every dead letter of this page',
        onchange: function () {
          boxes.forEach(function (b) {
            b.checked = allBox.checked;
          });
        },
      })
    : null;
  var head = ['Id', 'Kind', 'Type', 'Plan', 'Last failed', 'Reason'];
  var rows = page.list.deadLetters.map(function (d) {
    var box = admin ? h('input', { type: 'checkbox', class: 'tick', value: d.id, 'aria-label': 'tick ' + d.id }) : null;
    if (box) boxes.push(box);
    return h(
      'tr',
      { 'data-id': d.id },
      admin ? h('td', null, box) : null,
      h('td', null, link('#/dead-letters/' + enc(d.id), d.id)),
      h('td', null, badge(d.kind)),
      h('td', { text: d.type || '–' }),
      h('td', null, d.planId ? link('#/plans/' + enc(d.planId), d.planId) : '–'),
      h('td', { text: fmtTime(d.lastFailedAt) }),
      h('td', { text: d.error.message }),
    );
  });
  return wrapTable(
    'table',
    { id: 'dead-letters' },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        admin ? h('th', null, h('span', { class: 'visually-hidden', text: 'Tick' }), allBox) : null,
        head.map(function (t) {
          return h('th', { text: t });
        }),
      ),
    ),
    h('tbody', null, rows),
  );
}

/** One line on what a replay or purge did, kept letters included. */
function actionNotice(verb, r) {
  if (verb === 'purge') return 'Purged: ' + r.removed + ' removed.';
  var kept =
    r.kept && r.kept.length ? ' ' + r.kept.length + ' kept: ' + r.kept[0].reason + (r.kept.length > 1 ? ' …' : '') : '';
  return (
    'Replayed: ' +
    r.replayed +
    ' event(s) queued' +
    (r.alreadyStored ? ' (' + r.alreadyStored + ' already stored)' : '') +
    '.' +
    kept
  );
}

export function deadLetterPage(id) {
  return api('/v1/dead-letters/' + enc(id)).then(function (d) {
    var out = h('div', { id: 'action-result' });
    function act(verb) {
      var question =
        verb === 'replay'
          ? 'Put this event back on the queue? The worker stores it at most once.'
          : 'Remove this dead letter for good? Its event is not stored.';
      if (!window.confirm(question)) return;
      out.textContent = '';
      api('/v1/dead-letters/' + enc(id) + '/' + verb, { method: 'POST' }).then(
        function (r) {
          // the dead letter is gone either way: nothing is left to replay or purge from this page
          if (actions.parentNode) actions.parentNode.removeChild(actions);
          append(
            out,
            h('p', {
              class: 'notice',
              role: 'status',
              text: actionNotice(verb, r),
            }),
          );
        },
        function (err) {
          append(out, errorBox(err));
        },
      );
    }
    var actions = isAdmin()
      ? h(
          'p',
          null,
          h('button', {
            id: 'replay',
            text: 'Replay',
            onclick: function () {
              act('replay');
            },
          }),
          ' ',
          h('button', {
            id: 'purge',
            class: 'danger',
            text: 'Purge',
            onclick: function () {
              act('purge');
            },
          }),
        )
      : h('p', { class: 'muted', text: 'Replay and purge need an admin key (HTTP_ADMIN_KEYS).' });
    show(
      h('h1', { text: 'Dead letter ' + d.id }),
      h(
        'p',
        null,
        badge(d.kind),
        ' ',
        d.type || '(no type)',
        ' · plan ',
        d.planId || '–',
        ' · attempts ',
        String(d.attempts),
        ' · replayed ',
        String(d.replayCount),
        ' times · last failed ',
        fmtTime(d.lastFailedAt),
      ),
      h('h2', { text: 'Reason' }),
      h('pre', {
        id: 'reason',
        // each violation's message names its path, and the error's message joins them all: one line each
        text:
          (d.error.violations && d.error.violations.length
            ? d.error.violations
                .map(function (v) {
                  return v.message;
                })
                .join('\n')
            : d.error.message) + (d.error.code ? '\ncode ' + d.error.code : ''),
      }),
      h('h2', { text: 'Original event' }),
      typeof d.event === 'string'
        ? h('p', { class: 'muted', text: 'The event arrived as a JSON string, not an object; its text:' })
        : null,
      h('pre', { id: 'event', text: typeof d.event === 'string' ? d.event : JSON.stringify(d.event, null, 2) }),
      actions,
      out,
    );
  });
}
