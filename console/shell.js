/*
 * The frame around every page: sign-in, the navigation, the page's title and focus.
 */
import { api, canRead, state } from './api.js';
import { append, errorBox, fmtNum, h, show } from './dom.js';
import { liveSwitch, stop, stopHeader, watchHeader } from './live.js';

/** Where the header learns how many approvals are pending (GET, read or approve scope). */
export var PENDING_SUMMARY_PATH = '/console/approvals/summary';

/** The header's count of pending approvals, kept across pages, updated by its own watch. */
var pendingCount = null;

export function signIn(message) {
  stop();
  stopHeader();
  pendingCount = null;
  document.getElementById('nav').textContent = '';
  var input = h('input', {
    type: 'password',
    id: 'api-key',
    name: 'key',
    autocomplete: 'off',
    placeholder: 'API key (HTTP_READ_KEYS, HTTP_ADMIN_KEYS or HTTP_APPROVE_KEYS)',
    required: true,
  });
  var out = h('div');
  var form = h(
    'form',
    {
      class: 'signin',
      id: 'signin',
      onsubmit: function (e) {
        e.preventDefault();
        out.textContent = '';
        api('/console/session', { method: 'POST', body: { key: input.value } }).then(
          function (s) {
            state.session = s;
            input.value = '';
            if (state.onSignedIn) state.onSignedIn();
          },
          function (err) {
            append(out, errorBox(err));
          },
        );
      },
    },
    h('h1', { text: 'Sign in' }),
    message ? h('p', { class: 'muted', text: message }) : null,
    h('label', { for: 'api-key', text: 'API key' }),
    input,
    h('button', { type: 'submit', text: 'Sign in' }),
    h('p', {
      class: 'muted',
      text: "The key is exchanged for a session cookie; read keys see everything, admin keys may also replay and purge dead letters, approve keys see and decide approvals (as the key's name).",
    }),
    out,
  );
  show(form);
  announcePage();
}

export function drawNav(active) {
  var nav = document.getElementById('nav');
  nav.textContent = '';
  // an approve-only key reads approvals and nothing else
  var pages = canRead()
    ? [
        ['plans', 'Plans'],
        ['approvals', 'Approvals'],
        ['dead-letters', 'Dead letters'],
        ['health', 'Health'],
        ['analytics', 'Analytics'],
        ['reconcile', 'Reconcile'],
      ]
    : [['approvals', 'Approvals']];
  pages.forEach(function (p) {
    var a = h('a', { href: '#/' + p[0], class: active === p[0] ? 'active' : null, text: p[1] });
    if (p[0] === 'approvals') append(a, [' ', pendingBadge()]);
    append(nav, a);
  });
  append(nav, liveSwitch());
  // an approve key's name: the decidedBy of the decisions made here
  if (state.session.name)
    append(nav, h('span', { id: 'signed-in-as', class: 'who', title: 'signed in as', text: state.session.name }));
  append(
    nav,
    h('button', {
      id: 'sign-out',
      text: 'Sign out',
      onclick: function () {
        api('/console/session', { method: 'DELETE' }).then(function () {
          state.session = null;
          signIn('Signed out.');
        });
      },
    }),
  );
}

/** The count in the header's Approvals link: pending approvals, live on every page. */
function pendingBadge() {
  if (!pendingCount) {
    pendingCount = h('span', { id: 'pending-count', class: 'count', 'aria-live': 'polite', text: '…' });
    var el = pendingCount;
    watchHeader(PENDING_SUMMARY_PATH, function (summary) {
      el.textContent = fmtNum(summary.pending);
      el.setAttribute('data-pending', String(summary.pending));
      el.setAttribute('title', summary.pending + ' pending approval(s)');
      el.className = 'count' + (summary.pending > 0 ? ' some' : '');
    });
  }
  return pendingCount;
}

/** Every route change: the page's title names it, and focus moves to its heading (screen readers read it). */
export function announcePage() {
  var heading = document.getElementById('app').querySelector('h1');
  document.title = (heading ? heading.textContent + ' · ' : '') + 'plan-ledger console';
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({ preventScroll: true });
  }
}
