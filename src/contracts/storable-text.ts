/**
 * Which strings the contract admits: the one place that decides. Every string of an event and
 * every key of its checkpoint state must be text that every supported database stores alike. The
 * raw-input guard (so `parsePlanEvent` and `checkStoredEvent`) and the fast rules (so `publish()`)
 * both ask `textProblem` / `stateKeyProblem`, so their verdicts and wording cannot drift apart.
 *
 * Two kinds of UTF-16 content are refused:
 * - U+0000. PostgreSQL's text cannot hold it (error 22021, an invalid byte sequence for UTF8)
 *   while SQLite and MariaDB store it: accepted by the contract, such an event would be
 *   stored on one database and dead-lettered on another, after its whole batch had failed and been
 *   split down to find it. Checkpoint state is stored as JSON text, where the escape `\u0000` does
 *   fit, but anything that unescapes it (jsonb, `->>`) fails the same way: refused too, so no
 *   string depends on its column.
 * - A lone surrogate: a high surrogate (U+D800-U+DBFF) not followed by a low one, or a low
 *   surrogate (U+DC00-U+DFFF) not preceded by a high one (Python's `surrogateescape` produces them
 *   for undecodable file names). It is not Unicode text and has no UTF-8 form: PostgreSQL and
 *   MariaDB store U+FFFD in its place, SQLite the raw bytes, SQL Server the unit itself, so one
 *   event would read back differently on each. A valid pair (an emoji) is text and passes.
 *
 * Keys outside checkpoint state are not asked: one that is not a field name is refused as unknown
 * anyway, and field names, the common keys, cost no scan.
 */
import { MESSAGES } from './messages';

export const NUL_CHARACTER = '\0';

/**
 * Keys refused anywhere in an event, checkpoint state included: those of Object.prototype
 * (`__proto__`, `constructor`, `toString`, ...) plus `prototype`. `__proto__` rewires prototypes
 * when assigned; the others are silently skipped by class-transformer, which would let them past the
 * unknown-field check.
 */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set([
  'prototype',
  ...Object.getOwnPropertyNames(Object.prototype),
]);

/**
 * What is wrong with a string of an event, as a predicate, or undefined when every database stores
 * it alike. Linear in the string and cheap on the common case: `includes` of one character is a
 * memchr on one-byte strings, and `isWellFormed` answers a one-byte string (no surrogate can be in
 * it) without reading it.
 */
export function textProblem(s: string): string | undefined {
  if (s.includes(NUL_CHARACTER)) return MESSAGES.containsNul;
  if (!s.isWellFormed()) return MESSAGES.containsLoneSurrogate;
  return undefined;
}

/** The same for a key of checkpoint state (data, stored as JSON text), worded as a key. */
export function stateKeyProblem(key: string): string | undefined {
  if (key.includes(NUL_CHARACTER)) return MESSAGES.keyContainsNul;
  if (!key.isWellFormed()) return MESSAGES.keyContainsLoneSurrogate;
  return undefined;
}
