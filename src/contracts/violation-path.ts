/**
 * Paths of violations, in the dotted/bracket form people type: `payload.steps[2].agentId`.
 * The whole event is the empty path, shown as `(root)` in messages.
 */
import { ENVELOPE } from './declaration';
import type { Violation } from './invalid-event.error';
import { say } from './messages';

export const ROOT_LABEL = '(root)';

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** Unknown keys come from the sender; a long one must not swamp the message. */
const MAX_KEY_CHARS = 40;

/**
 * Appends a key or an array index to a path. Keys that are not plain identifiers are quoted with
 * JSON escapes, so an attacker-chosen key cannot inject a newline or a fake path into a log line.
 */
export function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  if (IDENTIFIER.test(key) && key.length <= MAX_KEY_CHARS) return parent === '' ? key : `${parent}.${key}`;
  const shown = key.length > MAX_KEY_CHARS ? `${key.slice(0, MAX_KEY_CHARS)}...` : key;
  const quoted = JSON.stringify(shown)
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
  return `${parent}[${quoted}]`;
}

/** A violation whose message is the full sentence: the path, then what is wrong with it. */
export function violationAt(path: string, predicate: string): Violation {
  return { path, message: `${path === '' ? ROOT_LABEL : path} ${predicate}` };
}

/** Enough to fix the sender; a hostile event with thousands of bad fields must not make a huge log line. */
const MAX_REPORTED_VIOLATIONS = 50;
const ENVELOPE_ORDER = Object.keys(ENVELOPE.fields);

/**
 * The contract's report: the first violation found of each field (one per path), envelope fields
 * in document order, then the payload, then unknown top-level fields and the event as a whole; at
 * most MAX_REPORTED_VIOLATIONS, then one line counting the rest.
 */
export function orderViolations(violations: readonly Violation[]): Violation[] {
  const seen = new Set<string>();
  const firstOfEach = violations.filter((v) => !seen.has(v.path) && seen.add(v.path) !== undefined);
  const sorted = firstOfEach.sort((a, b) => envelopeRank(a.path) - envelopeRank(b.path));
  if (sorted.length <= MAX_REPORTED_VIOLATIONS) return sorted;
  const listed = sorted.slice(0, MAX_REPORTED_VIOLATIONS);
  listed.push(violationAt('', say('moreViolations', { count: sorted.length - listed.length })));
  return listed;
}

function envelopeRank(path: string): number {
  const rank = ENVELOPE_ORDER.indexOf(/^[^.[]*/.exec(path)![0]);
  return rank === -1 ? ENVELOPE_ORDER.length : rank;
}
