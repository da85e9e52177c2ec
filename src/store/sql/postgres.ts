import type { DataSource, DataSourceOptions, EntityManager } from 'typeorm';
import { ENTITY, PlanEventRow } from '../entities';
import { chunk } from './batch-limits';
import { pgArrayLiteral } from './postgres-array';
import { unnestInsertStatement } from './postgres-statements';
import { bumpHeadsByUpdate } from './ledger-rows';
import { limitedTarget, runLimited } from './limited-changes';
import { UnnestRows } from './row-stores';
import type { LockedHead, SqlDialect } from './sql-dialect';
import { moneyFromColumn } from '../../pricing';
import { isGranted, missingRowPrivileges, ROW_PRIVILEGES } from './table-privileges';

/** PostgreSQL advisory locks take (int, int): a fixed first key for "plan-ledger migrate". */
const PG_LOCK_CLASS = 0x504c_4d47; // "PLMG"

/** Below any seq the contract allows (seqs start at 0). */
const MIN_SEQ = -1;

/** Events per INSERT of the log (no parameter cap applies: this bounds one statement's size). */
const EVENTS_PER_INSERT = 5_000;

/**
 * PostgreSQL (pg).
 * - Rows go as one array per column (unnest): one statement text whatever the batch size, and
 *   the event log's inserts skip stored ids in the same statement (ON CONFLICT DO NOTHING).
 * - `timestamptz(3)`; `uuid` event ids, validated by the server.
 * - The migration lock is a session advisory lock keyed by the current schema (two schemas do
 *   not wait on each other).
 * - Parameters: 65,535 per statement (60,000 with headroom).
 */
export const postgres: SqlDialect = {
  name: 'postgres',
  columnKinds: {
    uuid: { type: 'uuid' },
    externalId: { type: 'varchar', length: '64' },
    longText: { type: 'text' },
    timestamp: { type: 'timestamptz', precision: 3 },
    boolean: { type: 'boolean' },
    int: { type: 'int' },
    bigint: { type: 'bigint' },
    money: { type: 'numeric', precision: 24, scale: 12 },
  },
  boundedText: 'varchar',
  entityBoolean: 'boolean',
  nowExpression: 'CURRENT_TIMESTAMP',
  booleanLiteral: (value) => (value ? 'true' : 'false'),
  maxParams: 60_000,
  maxRows: 5_000,
  maxIdsPerStatement: 50_000, // far above any useful batch

  dataSourceOptions(target, common, poolSize): DataSourceOptions {
    const url = new URL(target.url);
    url.searchParams.delete('schema');
    return {
      ...common,
      type: 'postgres',
      url: url.toString(),
      ...(target.schema ? { schema: target.schema } : {}),
      poolSize,
      // raw SQL (the PRD's analytics queries) must see the same schema as TypeORM does; JIT off:
      // compiling a plan takes longer than any of the store's statements or reads runs. Parallel
      // query off: the store's statements and reads are keyed or read rollups, and a parallel plan
      // (workers scanning a whole table, e.g. execution_plans for a range's end day) was chosen
      // over the index walk that reads only the rows in range (docs/store.md)
      extra: {
        options: `${target.schema ? `-c search_path=${target.schema} ` : ''}-c jit=off -c max_parallel_workers_per_gather=0`,
      },
    } as DataSourceOptions;
  },
  prepareDataSource: (ds) => ds,
  async afterOpen(ds, target) {
    if (!target.schema) return;
    // only when missing: CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the
    // schema exists, which a worker's login that reads and writes rows only does not have
    const [found] = await ds.query('SELECT 1 AS ok FROM pg_namespace WHERE nspname = $1', [target.schema]);
    if (!found) await ds.query(`CREATE SCHEMA IF NOT EXISTS "${target.schema.replace(/"/g, '""')}"`);
  },
  serializesWrites: false,
  // READ COMMITTED: after a plan_heads lock is granted, the next statement sees what the previous holder committed
  transaction: <T>(ds: DataSource, work: (m: EntityManager) => Promise<T>) => ds.transaction('READ COMMITTED', work),

  instant: (value) => value,
  // `timestamptz` renders and casts in the session's TimeZone (a database or role default), so
  // a plain cast would group by local day; `AT TIME ZONE 'UTC'` gives the UTC wall time
  utcDay: (column) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  sumInt: (column) => `SUM(${column})`,
  sumMoney: (column) => `SUM(${column})`,
  summedMoney: (value) => moneyFromColumn(value) ?? 0n,
  textGroupKeys: (column) => [column],
  sameText: (column, param) => `${column} = ${param}`,

  /**
   * ON CONFLICT DO UPDATE ... WHERE false locks the stored rows without writing them (a write
   * here would only be overwritten when the heads are written); RETURNING names the rows it
   * inserted. A new head takes its other columns' defaults.
   */
  async lockHeads(m, sorted) {
    const ids = sorted.map((r) => r.planId);
    const inserted: { plan_id: string }[] = await m.query(
      'INSERT INTO plan_heads (plan_id, session_id, version) SELECT p, s, 1 FROM unnest($1::varchar[], $2::varchar[]) AS u(p, s) ON CONFLICT (plan_id) DO UPDATE SET version = plan_heads.version WHERE false RETURNING plan_id',
      [pgArrayLiteral(ids), pgArrayLiteral(sorted.map((r) => r.sessionId))],
    );
    const created = new Set(inserted.map((r) => r.plan_id));
    const heads = new Map<string, LockedHead>();
    for (const r of await m.query(`SELECT * FROM plan_heads WHERE plan_id = ANY($1::varchar[])`, [
      pgArrayLiteral(ids),
    ])) {
      // the version this transaction writes, as the bump gives it elsewhere
      heads.set(r.plan_id, lockedFromRaw(r, created.has(r.plan_id)));
    }
    return heads;
  },
  bumpHeads: (m, ids) => bumpHeadsByUpdate(m, postgres, ids),
  async eventPlans(m, ids) {
    // one array parameter: the same short statement whatever the batch size
    const rows: { event_id: string; plan_id: string }[] = await m.query(
      'SELECT event_id, plan_id FROM plan_events WHERE event_id = ANY($1::uuid[])',
      [pgArrayLiteral(ids)],
    );
    const found = new Map<string, string>();
    for (const r of rows) found.set(r.event_id.toLowerCase(), r.plan_id);
    return found;
  },
  /** Payloads go as one JSON array (see unnestInsertStatement's jsonText). */
  async appendEvents(m, rows, skipStored) {
    const inserted = new Set<string>();
    for (const part of chunk(rows, EVENTS_PER_INSERT)) {
      const { sql, params } = unnestInsertStatement(m, ENTITY.event, part, { jsonText: ['payload'] });
      const returned: { event_id: string }[] = await m.query(
        skipStored ? `${sql} ON CONFLICT (event_id) DO NOTHING RETURNING event_id` : sql,
        params,
      );
      if (skipStored) for (const r of returned) inserted.add(r.event_id);
      else for (const e of part) inserted.add(e.eventId);
    }
    return inserted;
  },
  errorsEndTransaction: true,
  skipsStoredEvents: true,
  async waitingEventRows(m, plans) {
    const rows: Record<string, unknown>[] = await m.query(
      `SELECT e.* FROM plan_events e JOIN unnest($1::varchar[], $2::int[]) AS w(plan_id, above) ON e.plan_id = w.plan_id AND e.seq > w.above
         WHERE e.plan_id = ANY($1::varchar[]) ORDER BY e.plan_id, e.seq, e.event_id`,
      [pgArrayLiteral(plans.map((p) => p.planId)), pgArrayLiteral(plans.map((p) => p.aboveSeq ?? MIN_SEQ))],
    );
    return rows.map(renamed);
  },

  /** No LIMIT on DELETE or UPDATE: the rows are picked by their address (ctid), read by a sub-select. */
  deliveryClaim: { kind: 'returning', lockClause: 'FOR UPDATE SKIP LOCKED' },
  changeSome(m, c) {
    const t = limitedTarget(m, c);
    const live = c.stamp === undefined ? '' : ` AND ${t.deletedAt} IS NULL`;
    const rows = `ctid = ANY (ARRAY(SELECT ctid FROM ${t.table} WHERE ${t.key} = $1${live} LIMIT $2))`;
    return c.stamp === undefined
      ? runLimited(m, `DELETE FROM ${t.table} WHERE ${rows}`, [c.planId, c.limit])
      : runLimited(m, `UPDATE ${t.table} SET ${t.deletedAt} = $3 WHERE ${rows}`, [c.planId, c.limit, t.stamp]);
  },
  withRequestTimeout: (_timeoutMs, work) => work(),

  rows: (m) => new UnnestRows(m, postgres),
  updatesChangedColumnsOnly: false,

  // equality under a deterministic collation is byte equality (ties are broken by the bytes); only a
  // nondeterministic (ICU, case- or accent-insensitive) collation finds `Plan_A` for `plan_a`
  identifierCollation: 'a deterministic collation',
  async textColumns(ds) {
    const rows: Array<{ table: string; column: string; collation: string | null; deterministic: boolean }> =
      await ds.query(
        `SELECT c.table_name AS "table", c.column_name AS "column", c.collation_name AS "collation", COALESCE(co.collisdeterministic, true) AS "deterministic" FROM information_schema.columns c LEFT JOIN pg_catalog.pg_collation co ON co.collname = c.collation_name WHERE c.table_schema = current_schema() AND c.data_type IN ('character varying', 'character', 'text')`,
      );
    return rows.map(({ deterministic, ...r }) => ({ ...r, comparesBytes: deterministic }));
  },

  migrations: {
    lock: {
      holder: 'migrating-connection',
      take: `SELECT pg_advisory_lock(${PG_LOCK_CLASS}, hashtext(current_schema())) AS ok`,
      release: `SELECT pg_advisory_unlock(${PG_LOCK_CLASS}, hashtext(current_schema())) AS ok`,
      ok: () => true,
    },
    transaction: 'each',
  },

  /**
   * SQLSTATEs: 40001 serialization_failure, 40P01 deadlock_detected, 55P03 lock_not_available,
   * 57P01/57P02/57P03 admin shutdown, crash shutdown, cannot connect now (starting up), 08xxx
   * connection exceptions, 53300 too_many_connections.
   */
  transient: {
    codes: ['40001', '40P01', '55P03', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', '53300'],
  },
  capabilities: {
    statement: (purpose, tables) =>
      purpose === 'migrate'
        ? {
            sql: `SELECT current_schema() AS schema_name, has_schema_privilege(current_schema(), 'CREATE') AS can_create`,
            params: [],
          }
        : {
            sql: `SELECT c.relname AS table_name, ${ROW_PRIVILEGES.map((p) => `has_table_privilege(c.oid, '${p}') AS can_${p.toLowerCase()}`).join(', ')} FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname = ANY($1)`,
            params: [tables],
          },
    read: (rows, purpose) => {
      if (purpose === 'worker') return { missing: missingRowPrivileges(rows), notes: [] };
      const [r] = rows;
      const missing =
        r?.schema_name == null
          ? ['no schema of the search_path exists (set ?schema= or create it)']
          : isGranted(r.can_create)
            ? []
            : [
                `the login has no CREATE on schema ${String(r.schema_name)} (GRANT CREATE ON SCHEMA ... TO it, or migrate as its owner)`,
              ];
      return { missing, notes: [] };
    },
  },
  standingFaults: [
    // undefined_table, undefined_column, undefined_function
    { kind: 'missing table, column or function', codes: ['42P01', '42703', '42883'] },
    { kind: 'permission denied', codes: ['42501'] }, // insufficient_privilege
  ],
  isDuplicateKey: (f) => f.code === '23505', // unique_violation
};

function lockedFromRaw(r: Record<string, unknown>, isNew: boolean): LockedHead {
  return {
    planId: r.plan_id as string,
    sessionId: r.session_id as string,
    version: isNew ? 1 : (r.version as number) + 1,
    eventCount: r.event_count as number,
    lastSeq: r.last_seq as number,
    appliedSeq: r.applied_seq as number | null,
    pendingEvents: r.pending_events as number,
    gapSince: r.gap_since as Date | null,
    updatedAt: r.updated_at as Date,
    restoredAt: (r.restored_at ?? null) as Date | null,
    deadlineMs: (r.deadline_ms ?? null) as number | null,
    stallDueAt: (r.stall_due_at ?? null) as Date | null,
    stallCheckAt: (r.stall_check_at ?? null) as Date | null,
    stalledAt: (r.stalled_at ?? null) as Date | null,
    deletedAt: r.deleted_at as Date | null,
    isNew,
  };
}

/** A raw plan_events row (snake_case, as pg returns it) as the entity's properties. */
function renamed(r: Record<string, unknown>): PlanEventRow {
  return {
    eventId: r.event_id,
    planId: r.plan_id,
    sessionId: r.session_id,
    type: r.type,
    seq: r.seq,
    specVersion: r.spec_version,
    occurredAt: r.occurred_at,
    recordedAt: r.recorded_at,
    payload: r.payload,
    deletedAt: r.deleted_at,
  } as PlanEventRow;
}
