import { hash as digest } from 'node:crypto';

/** RFC 4122 namespace for plan-ledger's derived ids (a fixed random UUID). */
const NAMESPACE = Buffer.from('6f1c2a8e4b7d4e0f9a3c5d2e1b0f7a9c', 'hex');

/**
 * A UUID v5 derived from a plan id, a kind and the executor's local key. Rows built from events
 * get the same id however often and in whatever order the events are applied, which is what
 * makes rebuilding a plan's rows idempotent.
 */
export function derivedId(
  planId: string,
  kind: 'step' | 'handoff' | 'checkpoint' | 'void' | 'agent',
  key: string,
): string {
  const name = `${planId}\u0000${kind}\u0000${key}`;
  const input = Buffer.allocUnsafe(NAMESPACE.length + Buffer.byteLength(name));
  NAMESPACE.copy(input, 0);
  input.write(name, NAMESPACE.length);
  // one-shot hash: no Hash object per id (a third of its cost)
  const hash = digest('sha1', input, 'buffer');
  hash[6] = (hash[6] & 0x0f) | 0x50; // version 5
  hash[8] = (hash[8] & 0x3f) | 0x80; // RFC 4122 variant
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
