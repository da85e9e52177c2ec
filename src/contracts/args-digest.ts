import { createHash } from 'node:crypto';

/**
 * The canonical JSON of a tool call's arguments, and its digest (`argsDigest` of
 * `approval.requested`). Canonical JSON here is RFC 8785 (JCS) for plain JSON values: object keys
 * sorted by UTF-16 code units, no whitespace, strings and numbers written as ECMAScript's
 * `JSON.stringify` writes them. The Python client computes the same (`plan_ledger.args_digest`);
 * both are tested against test/fixtures/args-digest/vectors.json.
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON has no ${value}: arguments must be plain JSON`);
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record)
        .filter((k) => record[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(',')}}`;
    }
    default:
      throw new TypeError(`canonical JSON has no ${typeof value}: arguments must be plain JSON`);
  }
}

/** SHA-256 of the UTF-8 canonical JSON of `args`, as 64 lower-case hex digits. */
export function argsDigest(args: unknown): string {
  return createHash('sha256').update(canonicalJson(args), 'utf8').digest('hex');
}

/** Whether `s` has the form of an argsDigest. */
export function isArgsDigest(s: unknown): s is string {
  return typeof s === 'string' && /^[0-9a-f]{64}$/.test(s);
}
