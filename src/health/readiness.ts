import { withTimeout } from '../shared/backoff';
import type { Readiness } from './health-server';

export interface ReadinessProbes {
  /** A Redis command the worker depends on (not a bare PING): ready means commands succeed. */
  pingRedis(): Promise<unknown>;
  pingDatabase(): Promise<unknown>;
  /** False while the worker has paused itself because the database is unreachable. */
  databaseGateUp(): boolean;
  /** Why a standing database fault paused the worker (a missing table, a permission); absent: none. */
  databaseFault?(): string | undefined;
  /** Jobs waiting to be fetched (the backlog). */
  waitingJobs(): Promise<number>;
  /** Last time the worker made progress or had nothing to do: a commit, an empty queue, its start. */
  lastProgressAt(): number;
  /** The schema check (see schema-readiness.ts); absent: not checked. */
  schema?: () => { ok: boolean; detail?: string };
  /** Longest tolerated time without progress while a backlog exists. */
  stallMs: number;
  /** Each ping fails past this. @defaultValue 2000 ms */
  timeoutMs?: number;
  now?: () => number;
}

/**
 * Ready = Redis answers, the database answers, its schema has no pending migration, and the worker is not stuck: when
 * jobs wait and
 * nothing was committed for `stallMs` (nor was the queue seen empty), it is not ready even if both
 * servers answer, so an orchestrator can restart a wedged process.
 */
export async function checkReadiness(p: ReadinessProbes): Promise<Readiness> {
  const timeout = p.timeoutMs ?? 2_000;
  const now = p.now ?? Date.now;
  const attempt = async (fn: () => Promise<unknown>, what: string) => {
    try {
      await withTimeout(fn(), timeout, `${what} did not answer within ${timeout} ms`);
      return { ok: true };
    } catch (err) {
      return { ok: false, detail: (err as Error).message };
    }
  };
  const fault = p.databaseFault?.();
  const [redis, database] = await Promise.all([
    attempt(p.pingRedis, 'Redis'),
    !p.databaseGateUp()
      ? Promise.resolve({ ok: false, detail: 'database unreachable: worker paused, probing with backoff' })
      : fault
        ? Promise.resolve({ ok: false, detail: `worker ${fault}` })
        : attempt(p.pingDatabase, 'database'),
  ]);
  const schema = p.schema?.() ?? { ok: true };
  let progress: { ok: boolean; detail?: string } = { ok: true };
  // a worker waiting for migrations commits nothing on purpose: its backlog is no stall
  if (redis.ok && schema.ok) {
    try {
      const waiting = await withTimeout(p.waitingJobs(), timeout, 'queue depth unavailable');
      const idleMs = now() - p.lastProgressAt();
      if (waiting > 0 && idleMs > p.stallMs) {
        progress = {
          ok: false,
          detail: `${waiting} jobs waiting and nothing committed for ${Math.round(idleMs / 1000)} s`,
        };
      }
    } catch (err) {
      progress = { ok: false, detail: (err as Error).message };
    }
  }
  return { ready: redis.ok && database.ok && schema.ok && progress.ok, checks: { redis, database, schema, progress } };
}
