/*
 * The console's addresses: `#/page/part?key=value&...`, every part and value URI-encoded.
 */

/** `#/plans/p%2F1?offset=20` -> { page: 'plans', parts: ['plans', 'p/1'], q: { offset: '20' } }. */
export function parseHash(hash) {
  var rest = String(hash || '').replace(/^#\/?/, '');
  var q = {};
  var qi = rest.indexOf('?');
  if (qi >= 0) {
    rest
      .slice(qi + 1)
      .split('&')
      .forEach(function (kv) {
        var i = kv.indexOf('=');
        if (i > 0) q[safeDecode(kv.slice(0, i))] = safeDecode(kv.slice(i + 1));
      });
    rest = rest.slice(0, qi);
  }
  var parts = rest.split('/').map(safeDecode);
  return { page: parts[0] || 'plans', parts: parts, q: q, path: rest };
}

/** decodeURIComponent that keeps a malformed escape (`%E0%A4%A`) as typed instead of throwing. */
function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
