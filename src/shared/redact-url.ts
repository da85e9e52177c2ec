/** `scheme://` and what follows up to a space or a quote: a URL, or the start of one, in any text. */
const URL_CANDIDATE = /[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]*/gi;

/**
 * Replace the password of every `scheme://user:password@host` in a string with `***`.
 *
 * By parsing, as the drivers and WHATWG URL do: the user information ends at the LAST `@` of the
 * authority, so a password holding an unencoded `@` (`user:p@ss@host`) is hidden whole, not up to
 * its first `@`. A password may hold `/` or `?` too (the drivers then misread the URL, but the text
 * still reaches error messages): the authority is taken up to the last `@` of the URL, which hides
 * more than needed in a URL whose path has an `@` with a `:` before it, never less.
 */
export function redactUrl(text: string): string {
  return text.replace(URL_CANDIDATE, redactOne);
}

function redactOne(url: string): string {
  const start = url.indexOf('//') + 2;
  const at = url.lastIndexOf('@');
  if (at < start) return url;
  const colon = url.indexOf(':', start);
  if (colon < 0 || colon > at) return url;
  return `${url.slice(0, colon + 1)}***${url.slice(at)}`;
}
