/*
 * How event text is shown in the console: the rule of the CLI's human-readable output
 * (src/shared/terminal-text.ts, escapeControl), for the page. Control characters and bidirectional
 * overrides or isolates are commands to a renderer, not text: U+202E makes "\u202Egnp.exe" read as
 * "exe.png". They are shown as \uXXXX escapes; line feed and tab are left alone.
 * test/console/console-text.unit.test.ts holds this module to escapeControl over generated strings.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character (but `\n` and `\t`) written as `\uXXXX`. */
export function visibleText(text) {
  text = String(text);
  CONTROL.lastIndex = 0;
  if (!CONTROL.test(text)) return text;
  return text.replace(CONTROL, function (c) {
    return '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');
  });
}
