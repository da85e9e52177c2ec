import { hash as digest } from 'node:crypto';
import { uuidOf } from '../../shared/uuid';

/** RFC 4122 namespace for plan-ledger's derived ids (a fixed random UUID). */
const NAMESPACE = Buffer.from('6f1c2a8e4b7d4e0f9a3c5d2e1b0f7a9c', 'hex');

/**
 * A UUID v5 derived from a plan id (for `rollup`, a day), a kind and the executor's local key. Rows built from events
 * get the same id however often and in whatever order the events are applied, which is what
 * makes rebuilding a plan's rows idempotent.
 */
export function derivedId(
  planId: string,
  kind: 'step' | 'handoff' | 'checkpoint' | 'void' | 'agent' | 'rollup',
  key: string,
): string {
  const name = `${planId}\u0000${kind}\u0000${key}`;
  const input = Buffer.allocUnsafe(NAMESPACE.length + Buffer.byteLength(name));
  NAMESPACE.copy(input, 0);
  input.write(name, NAMESPACE.length);
  // one-shot hash: no Hash object per id (a third of its cost)
  return uuidOf(digest('sha1', input, 'buffer'), 5);
}
