import { randomBytes } from 'node:crypto';
import type { Scope } from '../shared/api-keys';

/** The console's cookie: an opaque session token, HttpOnly, SameSite=Strict. */
export const SESSION_COOKIE = 'pl_console';
/** The header a state-changing console request carries its session's CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';
/** How long a console sign-in lasts. @defaultValue 12 h */
export const SESSION_TTL_MS = 12 * 3600_000;
const MAX_SESSIONS = 10_000;

export interface ConsoleSession {
  scopes: ReadonlySet<Scope>;
  /** The name of the approve key signed in with (its decisions' `decidedBy`). */
  name?: string;
  /** Sent back by the page on every state-changing request (double submit, checked here). */
  csrf: string;
  expiresAt: number;
}

/**
 * Console sign-ins, in this process's memory: an API key typed once becomes a random session
 * token in an HttpOnly cookie, so the key is never stored by the browser nor readable by a script.
 * A restart signs everybody out; the oldest session goes when the table is full.
 */
export class ConsoleSessions {
  private readonly sessions = new Map<string, ConsoleSession>();

  constructor(private readonly now: () => number = Date.now) {}

  create(scopes: ReadonlySet<Scope>, name?: string): { token: string; session: ConsoleSession } {
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    const token = randomBytes(32).toString('base64url');
    const session = {
      scopes,
      name,
      csrf: randomBytes(24).toString('base64url'),
      expiresAt: this.now() + SESSION_TTL_MS,
    };
    this.sessions.set(token, session);
    return { token, session };
  }

  /** The live session of a Cookie header, if any. */
  fromCookie(cookieHeader: string | undefined): { token: string; session: ConsoleSession } | undefined {
    const token = readCookie(cookieHeader, SESSION_COOKIE);
    if (token === undefined) return undefined;
    const session = this.sessions.get(token);
    if (!session) return undefined;
    if (session.expiresAt <= this.now()) {
      this.sessions.delete(token);
      return undefined;
    }
    return { token, session };
  }

  end(token: string): void {
    this.sessions.delete(token);
  }
}

/** The cookie's Set-Cookie value; `maxAgeSeconds` 0 clears it; `secure` when the console is served over HTTPS. */
export function sessionCookie(token: string, maxAgeSeconds: number, secure = false): string {
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}

function readCookie(header: string | undefined, name: string): string | undefined {
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
