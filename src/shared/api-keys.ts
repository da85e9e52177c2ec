import { createHash, timingSafeEqual } from 'node:crypto';

/** `admin`: the state-changing actions (plan fork and replay, dead-letter replay and purge); an admin key reads too. */
export type Scope = 'ingest' | 'read' | 'admin';

/** Why a request was refused; `401` no or unknown key, `403` a known key without the scope. */
export type KeyVerdict = { ok: true } | { ok: false; status: 401 | 403; message: string };

/**
 * API keys with scopes. Keys are kept only as SHA-256 digests and compared with
 * `timingSafeEqual` on equal-length digests, against every known key (no early exit), so the
 * time an answer takes says nothing about how much of a key was right. Keys never reach a log:
 * the Authorization header is redacted and refusals name no key.
 */
export class ApiKeys {
  private readonly entries: Array<{ digest: Buffer; scopes: Set<Scope> }> = [];

  constructor(ingestKeys: readonly string[], readKeys: readonly string[], adminKeys: readonly string[] = []) {
    const byKey = new Map<string, Set<Scope>>();
    const add = (k: string, ...scopes: Scope[]) => {
      const set = byKey.get(k) ?? new Set<Scope>();
      for (const scope of scopes) set.add(scope);
      byKey.set(k, set);
    };
    for (const k of ingestKeys) add(k, 'ingest');
    for (const k of readKeys) add(k, 'read');
    for (const k of adminKeys) add(k, 'admin', 'read');
    for (const [key, scopes] of byKey) this.entries.push({ digest: digest(key), scopes });
  }

  /** `authorization` is the raw header: `Bearer <key>`. */
  check(authorization: string | undefined, scope: Scope): KeyVerdict {
    const key = bearer(authorization);
    if (key === null) return { ok: false, status: 401, message: 'missing API key: send "Authorization: Bearer <key>"' };
    return verdict(this.scopesOf(key), scope);
  }

  /** The scopes of a key as typed (the console's sign-in), or null for an unknown key. */
  scopesOf(key: string): ReadonlySet<Scope> | null {
    const presented = digest(key);
    let scopes: Set<Scope> | null = null;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, presented)) scopes = entry.scopes;
    }
    return scopes;
  }
}

/** Whether a key with `scopes` (null: unknown key) may use a route needing `scope`. */
export function verdict(scopes: ReadonlySet<Scope> | null, scope: Scope): KeyVerdict {
  if (scopes === null) return { ok: false, status: 401, message: 'unknown API key' };
  if (!scopes.has(scope)) return { ok: false, status: 403, message: `this API key lacks the ${scope} scope` };
  return { ok: true };
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

function bearer(header: string | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}
