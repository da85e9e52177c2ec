/**
 * Text from events (an agent id, a task, a dead letter's type) reaches the operator's terminal in
 * every human-readable output. Raw control characters there are commands, not text: ESC sequences
 * can clear the screen, retitle the window, rewrite earlier lines or hide what follows; CR and
 * bidirectional overrides make a line read as something else. They are shown as `\uXXXX` escapes:
 * visible, unambiguous, and still valid inside a JSON string, so a line that is JSON parses to the
 * same value. Line feed and tab are left alone (they only lay text out).
 */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const CONTROL_ALL = new RegExp(CONTROL.source, 'g');

/** `text` with every control character (but `\n` and `\t`) written as `\uXXXX`. */
export function escapeControl(text: string): string {
  if (!CONTROL.test(text)) return text; // the common case: no copy
  return text.replace(CONTROL_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
