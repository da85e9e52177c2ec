/*
 * The frame around every page: sign-in, the navigation, the page's title and focus.
 */
import { api, state } from './api.js';
import { append, errorBox, h, show } from './dom.js';
import { liveSwitch, stop } from './live.js';

export function signIn(message) {
  stop();
  document.getElementById('nav').textContent = '';
  var input = h('input', {
    type: 'password',
    id: 'api-key',
    name: 'key',
    autocomplete: 'off',
    placeholder: 'API key (HTTP_READ_KEYS or HTTP_ADMIN_KEYS)',
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
      text: 'The key is exchanged for a session cookie; read keys see everything, admin keys may also replay and purge dead letters.',
    }),
    out,
  );
  show(form);
  announcePage();
}

export function drawNav(active) {
  var nav = document.getElementById('nav');
  nav.textContent = '';
  [
    ['plans', 'Plans'],
    ['dead-letters', 'Dead letters'],
    ['health', 'Health'],
    ['analytics', 'Analytics'],
    ['reconcile', 'Reconcile'],
  ].forEach(function (p) {
    append(nav, h('a', { href: '#/' + p[0], class: active === p[0] ? 'active' : null, text: p[1] }));
  });
  append(nav, liveSwitch());
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

/** Every route change: the page's title names it, and focus moves to its heading (screen readers read it). */
export function announcePage() {
  var heading = document.getElementById('app').querySelector('h1');
  document.title = (heading ? heading.textContent + ' · ' : '') + 'plan-ledger console';
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({ preventScroll: true });
  }
}
