/*
 * Dead letters: the list (filters) and one dead letter with its reason, its event, replay and purge.
 */
import { api, isAdmin } from './api.js';
import { append, badge, enc, errorBox, fmtTime, h, link, show, table, toQuery } from './dom.js';

export function deadLettersPage(q) {
  var filter = { type: q.type, kind: q.kind, plan: q.plan, since: q.since, until: q.until, limit: q.limit || '100' };
  return api('/v1/dead-letters?' + toQuery(filter)).then(function (list) {
    var inputs = {};
    function field(name, label, placeholder) {
      inputs[name] = h('input', { name: name, value: q[name] || '', placeholder: placeholder || '' });
      return h('label', null, label, inputs[name]);
    }
    var form = h(
      'form',
      {
        class: 'filters',
        id: 'dlq-filters',
        onsubmit: function (e) {
          e.preventDefault();
          var next = {};
          Object.keys(inputs).forEach(function (k) {
            next[k] = inputs[k].value.trim();
          });
          location.hash = '#/dead-letters?' + toQuery(next);
        },
      },
      field('type', 'Type', 'step.completed'),
      field('kind', 'Kind', 'invalid,conflict'),
      field('plan', 'Plan'),
      field('since', 'Since (ISO)'),
      field('until', 'Until (ISO)'),
      field('limit', 'Limit', '100'),
      h('button', { type: 'submit', text: 'Filter' }),
    );
    show(
      h('h1', { text: 'Dead letters' }),
      form,
      h('p', {
        class: 'muted',
        text:
          list.total +
          ' matching' +
          (list.total > list.deadLetters.length ? ', the oldest ' + list.deadLetters.length + ' shown' : ''),
      }),
      table(
        'dead-letters',
        ['Id', 'Kind', 'Type', 'Plan', 'Last failed', 'Reason'],
        list.deadLetters.map(function (d) {
          return h(
            'tr',
            { 'data-id': d.id },
            h('td', null, link('#/dead-letters/' + enc(d.id), d.id)),
            h('td', null, badge(d.kind)),
            h('td', { text: d.type || '–' }),
            h('td', null, d.planId ? link('#/plans/' + enc(d.planId), d.planId) : '–'),
            h('td', { text: fmtTime(d.lastFailedAt) }),
            h('td', { text: d.error.message }),
          );
        }),
        'No dead letters.',
      ),
    );
  });
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
              text:
                verb === 'replay'
                  ? 'Replayed: ' +
                    r.replayed +
                    ' event(s) queued' +
                    (r.alreadyStored ? ' (' + r.alreadyStored + ' already stored)' : '') +
                    '.'
                  : 'Purged: ' + r.removed + ' removed.',
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
