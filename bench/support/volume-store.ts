/**
 * What `npm run bench:volume` reads of the database itself: its size per table, the WAL it wrote
 * (PostgreSQL), the ids the reads use, and VACUUM ANALYZE after each load (as autovacuum would
 * have run on tables that grew this much).
 */
import type { DataSource } from 'typeorm';
import type { TestDb } from '../../test/support/databases';
import type { ReadTargets } from './volume-reads';

export interface Storage {
  /** Bytes of every table with its indexes (and TOAST on PostgreSQL). */
  totalBytes: number;
  byTable: Record<string, { bytes: number; rows: number }>;
}

/** The database's own measure of its size, per table. */
export async function storage(ds: DataSource, kind: TestDb): Promise<Storage> {
  const rows: Array<{ name: string; bytes: unknown; rows: unknown }> =
    kind === 'postgres'
      ? await ds.query(
          `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes, c.reltuples AS rows
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = current_schema() AND c.relkind = 'r'`,
        )
      : kind === 'mariadb'
        ? await ds.query(
            `SELECT table_name AS name, data_length + index_length AS bytes, table_rows AS \`rows\`
             FROM information_schema.tables WHERE table_schema = DATABASE()`,
          )
        : await ds.query(`SELECT name, SUM(pgsize) AS bytes, 0 AS rows FROM dbstat GROUP BY name`).catch(() => []);
  const byTable: Storage['byTable'] = {};
  let totalBytes = 0;
  for (const r of rows) {
    const bytes = Number(r.bytes);
    byTable[r.name] = { bytes, rows: Math.round(Number(r.rows)) };
    totalBytes += bytes;
  }
  if (kind === 'sqlite' && totalBytes === 0) {
    const [{ n }] = (await ds.query(`SELECT page_count * page_size AS n FROM pragma_page_count, pragma_page_size`)) as [
      { n: number },
    ];
    totalBytes = Number(n);
  }
  return { totalBytes, byTable };
}

/** PostgreSQL's WAL position as a byte count (server-wide: other sessions on a shared server add to it). */
export async function walBytes(ds: DataSource, kind: TestDb): Promise<number | null> {
  if (kind !== 'postgres') return null;
  const [{ b }] = (await ds.query(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') AS b`)) as [{ b: string }];
  return Number(b);
}

/** Statistics (and visibility maps) up to date, as autovacuum keeps them on a live store. */
export async function analyze(ds: DataSource, kind: TestDb): Promise<void> {
  if (kind === 'postgres') await ds.query('VACUUM ANALYZE');
  else if (kind === 'mariadb') {
    const tables: Array<{ name: string }> = await ds.query(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()`,
    );
    for (const { name } of tables) await ds.query(`ANALYZE TABLE \`${name}\``);
  } else await ds.query('ANALYZE');
}

/** Events stored (the log's rows). */
export async function eventCount(ds: DataSource): Promise<number> {
  const [{ n }] = (await ds.query(`SELECT COUNT(*) AS n FROM plan_events`)) as [{ n: unknown }];
  return Number(n);
}

/** Ids of the first size's traffic (`tag` prefix) for the keyed reads. */
export async function findTargets(
  ds: DataSource,
  tag: string,
  window: { from: Date; to: Date },
  agentId: string,
): Promise<ReadTargets> {
  const like = `${tag}-%`;
  const one = async (sql: string, what: string): Promise<Record<string, string>> => {
    const rows: Record<string, string>[] = await ds.query(sql, [like]);
    if (rows.length === 0) throw new Error(`bench:volume found no ${what} in the store`);
    return rows[0];
  };
  const p = ds.driver.options.type === 'postgres' ? '$1' : '?';
  const limit1 = (sql: string) => `${sql} LIMIT 1`;
  const history = await one(
    limit1(
      `SELECT session_id AS id FROM execution_plans WHERE id LIKE ${p} AND status = 'completed' GROUP BY session_id HAVING COUNT(*) >= 3 ORDER BY session_id`,
    ),
    'session with 3 finished plans',
  );
  const running = await one(
    limit1(
      `SELECT id, session_id AS session FROM execution_plans WHERE id LIKE ${p} AND status = 'executing' ORDER BY id`,
    ),
    'running plan',
  );
  const output = await one(
    limit1(
      `SELECT plan_id AS plan, payload FROM plan_events WHERE plan_id LIKE ${p} AND type = 'step.completed' AND payload LIKE '%"outputContent"%' ORDER BY event_id`,
    ),
    'step with an output',
  );
  const plans = Number(((await ds.query(`SELECT COUNT(*) AS n FROM execution_plans`)) as [{ n: unknown }])[0].n);
  const agentPlans = Number(
    (
      (await ds.query(`SELECT COUNT(DISTINCT plan_id) AS n FROM plan_steps WHERE agent_id = ${p}`, [agentId])) as [
        { n: unknown },
      ]
    )[0].n,
  );
  const dayFrom = new Date(Math.floor((window.from.getTime() + window.to.getTime()) / 2 / 86_400_000) * 86_400_000);
  return {
    sessionId: history.id,
    runningSessionId: running.session,
    runningPlanId: running.id,
    planId: output.plan,
    stepId: (JSON.parse(output.payload) as { stepId: string }).stepId,
    agentId,
    page: Math.max(1, Math.min(100, Math.floor(plans / 20))),
    agentPage: Math.max(1, Math.min(100, Math.floor(agentPlans / 20))),
    month: { from: window.from.toISOString(), to: window.to.toISOString() },
    day: { from: dayFrom.toISOString(), to: new Date(dayFrom.getTime() + 86_400_000).toISOString() },
  };
}
