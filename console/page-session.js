/*
 * One session: the plan an application restores (the active one) and every plan of the session, paged.
 */
import { api } from './api.js';
import { watch } from './live.js';
import { badge, enc, fmtNum, fmtTime, h, link, show, table, toQuery } from './dom.js';

var SESSION_PAGE = 50;

export function sessionPage(sessionId, q) {
  var offset = Math.max(0, Number(q.offset) || 0);
  var paths = [
    '/v1/sessions/' + enc(sessionId) + '/active',
    '/v1/plans?' + toQuery({ sessionId: sessionId, limit: SESSION_PAGE, offset: offset }),
  ];
  return Promise.all(
    paths.map(function (path) {
      return api(path);
    }),
  ).then(function (r) {
    // the active plan moves on and new plans arrive: the page redraws when either changes
    watch(paths, function () {
      return sessionPage(sessionId, q);
    });
    var active = r[0].activePlan;
    var history = r[1];
    var here = '#/sessions/' + enc(sessionId) + '?offset=';
    show(
      h('h1', { text: 'Session ' + sessionId }),
      h('h2', { text: 'Active plan (what the application restores)' }),
      active
        ? h(
            'p',
            { id: 'active-plan' },
            link('#/plans/' + enc(active.planId), active.planId),
            ' ',
            badge(active.status),
            ' ',
            active.completedSteps + '/' + active.totalSteps + ' steps · ',
            active.query,
          )
        : h('p', { class: 'muted', id: 'active-plan', text: 'No plan in progress.' }),
      h('h2', { text: 'Plans of the session, newest first' }),
      h(
        'p',
        { id: 'history-pager' },
        offset > 0 ? link(here + Math.max(0, offset - SESSION_PAGE), '← newer') : null,
        ' ',
        h('span', {
          class: 'muted',
          text:
            history.total === 0
              ? 'no plans'
              : offset +
                1 +
                '–' +
                (offset + history.plans.length) +
                ' of ' +
                fmtNum(history.total) +
                (history.totalExact === false ? '+' : ''),
        }),
        ' ',
        history.hasMore ? link(here + (offset + SESSION_PAGE), 'older →') : null,
      ),
      table(
        'history',
        ['Plan', 'Status', 'Steps', 'Ended', 'Query'],
        history.plans.map(function (p) {
          return h(
            'tr',
            null,
            h('td', null, link('#/plans/' + enc(p.planId), p.planId)),
            h('td', null, badge(p.status)),
            h('td', { class: 'num', text: p.completedSteps + '/' + p.totalSteps }),
            h('td', { text: fmtTime(p.completedAt) }),
            h('td', { text: p.query }),
          );
        }),
        'No plans.',
      ),
    );
  });
}
