/*
 * Health: queue depth, dead letters by kind, events stored per minute.
 */
import { api } from './api.js';
import { card, fmtAge, fmtNum, h, show, table } from './dom.js';
import { barChart } from './charts.js';
import { watch } from './live.js';

var HEALTH_PATH = '/v1/health?minutes=30';

export function healthPage() {
  return api(HEALTH_PATH).then(function (hv) {
    // the counters move by themselves: the page redraws when they change
    watch([HEALTH_PATH], function () {
      return healthPage();
    });
    var q = hv.queue;
    var dl = hv.deadLetters;
    show(
      h('h1', { text: 'Health' }),
      h(
        'div',
        { class: 'cards' },
        card('waiting jobs', q ? fmtNum(q.waiting) : '–'),
        card('active jobs', q ? fmtNum(q.active) : '–'),
        card('failed jobs', q ? fmtNum(q.failed) : '–'),
        card('oldest waiting', q ? fmtAge(q.oldestWaitingAgeSeconds) : '–'),
        card('dead letters', dl ? fmtNum(dl.total) : '–'),
        card('oldest dead letter', dl ? fmtAge(dl.oldestAgeSeconds) : '–'),
      ),
      h('h2', { text: 'Events queue by shard' }),
      table(
        'queue-shards',
        ['Shard', 'Waiting', 'Active', 'Delayed', 'Failed', 'Oldest waiting'],
        (hv.shards || []).map(function (sh) {
          return h(
            'tr',
            { 'data-shard': sh.shard },
            h('td', { class: 'num', text: sh.shard }),
            h('td', { class: 'num', text: fmtNum(sh.waiting) }),
            h('td', { class: 'num', text: fmtNum(sh.active) }),
            h('td', { class: 'num', text: fmtNum(sh.delayed) }),
            h('td', { class: 'num', text: fmtNum(sh.failed) }),
            h('td', { class: 'num', text: fmtAge(sh.oldestWaitingAgeSeconds) }),
          );
        }),
        'No queue access.',
      ),
      h('h2', { text: 'Dead letters by kind' }),
      barChart(
        'dlq-kinds',
        dl
          ? Object.keys(dl.byKind).map(function (k) {
              return [k, dl.byKind[k]];
            })
          : [],
      ),
      h('h2', { text: 'Events stored per minute (last 30 min, UTC)' }),
      barChart(
        'events-per-minute',
        hv.eventsPerMinute.map(function (m) {
          return [m.minute.slice(11, 16), m.events];
        }),
      ),
      h(
        'p',
        null,
        'Prometheus metrics: ',
        h('a', { href: '/metrics', text: '/metrics' }),
        ' (this server); each worker serves its own on HEALTH_PORT.',
      ),
    );
  });
}
