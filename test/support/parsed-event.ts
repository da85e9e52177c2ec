import { randomUUID } from 'node:crypto';
import { parsePlanEvent, type PlanEvent } from '../../src/contracts';
import { run } from '../../src/cli/main';

/** An event as the contract parses it (a fresh eventId unless given); throws on an invalid one. */
export function parsedEvent(e: {
  planId: string;
  sessionId: string;
  seq: number;
  type: string;
  payload: object;
  occurredAt: string | Date;
  eventId?: string;
}): PlanEvent {
  const parsed = parsePlanEvent({
    specVersion: 1,
    eventId: e.eventId ?? randomUUID(),
    type: e.type,
    planId: e.planId,
    sessionId: e.sessionId,
    seq: e.seq,
    occurredAt: e.occurredAt instanceof Date ? e.occurredAt.toISOString() : e.occurredAt,
    payload: e.payload,
  });
  if (!parsed.ok) throw parsed.error;
  return parsed.event;
}

/** The CLI run in this process (`run`, as bin/plan-ledger.js calls it) against a database URL. */
export async function cliIn(
  databaseUrl: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(['node', 'plan-ledger', ...args], {
    env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}
