import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * `admin`: the state-changing actions (plan fork and replay, dead-letter replay and purge); an admin key reads too.
 * `approve`: a human's named key that decides approvals and reads them (docs/approvals.md).
 */
export type Scope = 'ingest' | 'read' | 'admin' | 'approve';

/** An approve key's name (HTTP_APPROVE_KEYS, `approvals decide --by`): who decided, in the audit (`decidedBy`). */
export const APPROVER_NAME = /^[A-Za-z0-9._@-]{1,64}$/;

/** An approve key and the name it decides under (HTTP_APPROVE_KEYS `name:key`). */
export interface NamedKey {
  name: string;
  key: string;
}

/** Who a key is: its scopes, and for an approve key its name. */
export interface KeyIdentity {
  scopes: ReadonlySet<Scope>;
  name?: string;
}

/**
 * Why a request was refused; `401` no or unknown key, `403` a known key without the scope. An
 * allowed approve key carries its name (the `decidedBy` of its decisions).
 */
export type KeyVerdict = { ok: true; name?: string } | { ok: false; status: 401 | 403; message: string };

/**
 * API keys with scopes. Keys are kept only as SHA-256 digests and compared with
 * `timingSafeEqual` on equal-length digests, against every known key (no early exit), so the
 * time an answer takes says nothing about how much of a key was right. Keys never reach a log:
 * the Authorization header is redacted and refusals name no key.
 */
export class ApiKeys {
  private readonly entries: Array<{ digest: Buffer; identity: KeyIdentity }> = [];

  constructor(
    ingestKeys: readonly string[],
    readKeys: readonly string[],
    adminKeys: readonly string[] = [],
    approveKeys: readonly NamedKey[] = [],
  ) {
    const byKey = new Map<string, Set<Scope>>();
    const names = new Map<string, string>();
    const add = (k: string, ...scopes: Scope[]) => {
      const set = byKey.get(k) ?? new Set<Scope>();
      for (const scope of scopes) set.add(scope);
      byKey.set(k, set);
    };
    for (const k of ingestKeys) add(k, 'ingest');
    for (const k of readKeys) add(k, 'read');
    for (const k of adminKeys) add(k, 'admin', 'read');
    for (const { name, key } of approveKeys) {
      add(key, 'approve');
      names.set(key, name);
    }
    for (const [key, scopes] of byKey)
      this.entries.push({ digest: digest(key), identity: { scopes, name: names.get(key) } });
  }

  /** `authorization` is the raw header: `Bearer <key>`. */
  check(authorization: string | undefined, scope: Scope): KeyVerdict {
    const key = bearer(authorization);
    if (key === null) return { ok: false, status: 401, message: 'missing API key: send "Authorization: Bearer <key>"' };
    return verdict(this.identify(key), scope);
  }

  /** The scopes of a key as typed (the console's sign-in), or null for an unknown key. */
  scopesOf(key: string): ReadonlySet<Scope> | null {
    return this.identify(key)?.scopes ?? null;
  }

  /** The scopes and name of a key as typed, or null for an unknown key. */
  identify(key: string): KeyIdentity | null {
    const presented = digest(key);
    let identity: KeyIdentity | null = null;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, presented)) identity = entry.identity;
    }
    return identity;
  }
}

/** Whether a key of `identity` (null: unknown key) may use a route needing `scope`. */
export function verdict(identity: KeyIdentity | null, scope: Scope): KeyVerdict {
  if (identity === null) return { ok: false, status: 401, message: 'unknown API key' };
  const { scopes, name } = identity;
  if (!scopes.has(scope)) return { ok: false, status: 403, message: `this API key lacks the ${scope} scope` };
  return name === undefined ? { ok: true } : { ok: true, name };
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

function bearer(header: string | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}
