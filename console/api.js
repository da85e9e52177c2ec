/*
 * The console's calls to its server: JSON in and out, the session cookie (sent by the browser),
 * the CSRF token on every write. A 401 means the session ended: state.onExpired shows the sign-in.
 */

/** The signed-in session ({ scopes, csrf }) or null, and what to do when it starts or ends. */
export var state = { session: null, onExpired: null, onSignedIn: null };

/** The ETag of the last answer of each GET path: what a live page asks "changed since?" with. */
var etags = {};

export function etagOf(path) {
  return etags[path] || null;
}

export function api(path, opts) {
  opts = opts || {};
  var headers = { accept: 'application/json' };
  var method = opts.method || 'GET';
  if (opts.ifNoneMatch) headers['if-none-match'] = opts.ifNoneMatch;
  if (opts.method && opts.method !== 'GET') {
    headers['x-csrf-token'] = state.session ? state.session.csrf : '';
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    if (opts.rawBody !== undefined) headers['content-type'] = opts.contentType;
  }
  return fetch(path, {
    method: method,
    headers: headers,
    credentials: 'same-origin',
    // conditional requests are this module's business: the browser's cache would answer a 304 with its own copy
    cache: 'no-store',
    // rawBody: text sent as it is, with its contentType (an export file for reconcile)
    body: opts.rawBody !== undefined ? opts.rawBody : opts.body === undefined ? undefined : JSON.stringify(opts.body),
  }).then(function (res) {
    if (method === 'GET' && res.headers.get('etag')) etags[path] = res.headers.get('etag');
    if (res.status === 304) return { notModified: true };
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

function hasScope(scope) {
  return !!state.session && state.session.scopes.indexOf(scope) >= 0;
}

export function isAdmin() {
  return hasScope('admin');
}

/** A read (or admin) key: every page; an approve-only key reads approvals alone. */
export function canRead() {
  return hasScope('read');
}

/** An approve key (HTTP_APPROVE_KEYS): decides approvals, as the key's name. */
export function canApprove() {
  return hasScope('approve');
}
