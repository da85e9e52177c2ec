/*
 * The console's calls to its server: JSON in and out, the session cookie (sent by the browser),
 * the CSRF token on every write. A 401 means the session ended: state.onExpired shows the sign-in.
 */

/** The signed-in session ({ scopes, csrf }) or null, and what to do when it starts or ends. */
export var state = { session: null, onExpired: null, onSignedIn: null };

export function api(path, opts) {
  opts = opts || {};
  var headers = { accept: 'application/json' };
  if (opts.method && opts.method !== 'GET') {
    headers['x-csrf-token'] = state.session ? state.session.csrf : '';
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
  }
  return fetch(path, {
    method: opts.method || 'GET',
    headers: headers,
    credentials: 'same-origin',
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  }).then(function (res) {
    return res.text().then(function (text) {
      var body;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = { error: text };
      }
      if (res.status === 401 && path !== '/console/session') {
        state.session = null;
        if (state.onExpired) state.onExpired('Your sign-in has expired: sign in again.');
        throw new Error('not signed in');
      }
      if (!res.ok) throw new Error((body && body.error) || res.status + ' ' + res.statusText);
      return body;
    });
  });
}

export function isAdmin() {
  return !!state.session && state.session.scopes.indexOf('admin') >= 0;
}
