import type { DataSource, DataSourceOptions, EntityManager } from 'typeorm';
import { ENTITY, PlanHeadRow } from '../entities';
import { appendEventRows, bumpHeadsByUpdate } from './ledger-rows';
import { limitedTarget, runLimited } from './limited-changes';
import { SqliteRowStore } from './row-stores';
import type { LockedHead, SqlDialect, TextColumnFacts } from './sql-dialect';
import { sumSqliteMoney, summedSqliteMoney } from './sqlite-money';
import { SqliteRows } from './sqlite-rows';

/** WAL pages that start a checkpoint in the COMMIT that writes them (SQLite's default: 1,000). */
const SQLITE_WAL_CHECKPOINT_PAGES = 10_000;
/** Size the WAL file is cut back to after a checkpoint (SQLite's default: never cut). */
const SQLITE_WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * SQLite through better-sqlite3: in process, one connection, one writer at a time.
 * - Writes go through one queue per database (serial-queue.ts): better-sqlite3 has one shared
 *   connection, and two overlapping `transaction()` calls collide and write outside any transaction.
 * - Rows are written by prepared single-row statements (sqlite-rows.ts): no round trip to save.
 * - An UPDATE names only the columns that changed: SQLite rewrites the index entries of every
 *   column an UPDATE names.
 * - Its integers are 64-bit; timestamps are TypeORM's UTC text `YYYY-MM-DD HH:MM:SS.SSS`.
 * - Parameters: 32,766 per statement in better-sqlite3's build (30,000 with headroom).
 */
export const sqlite: SqlDialect = {
  name: 'sqlite',
  columnKinds: {
    uuid: { type: 'varchar', length: '36' },
    externalId: { type: 'varchar', length: '64' },
    longText: { type: 'text' },
    timestamp: { type: 'datetime' },
    boolean: { type: 'boolean' },
    int: { type: 'integer' },
    bigint: { type: 'integer' }, // SQLite's integers are 64-bit
    // a DECIMAL column would have numeric affinity and turn '0.006000000000' into a binary float:
    // text keeps the exact 12-decimal form, and sums go through integers (sumMoney)
    money: { type: 'text' },
  },
  boundedText: 'varchar',
  entityBoolean: 'boolean',
  nowExpression: "(STRFTIME('%Y-%m-%d %H:%M:%f', 'NOW'))",
  booleanLiteral: (value) => (value ? '1' : '0'),
  maxParams: 30_000,
  maxRows: 5_000,
  maxIdsPerStatement: 30_000,

  dataSourceOptions(target, common): DataSourceOptions {
    return {
      ...common,
      type: 'better-sqlite3',
      database: target.file!,
      // WAL lets readers (CLI, demo) run while the worker writes; writers are serialised in code.
      enableWAL: true,
      timeout: 10_000,
      prepareDatabase: (db: { pragma(s: string): unknown }) => {
        db.pragma('foreign_keys = ON');
        db.pragma('synchronous = NORMAL');
        // 32 MiB of page cache (SQLite's default: 2 MiB): events of many plans at once touch
        // rows all over the tables (BENCHMARKS.md, "End to end", interleaved SQLite)
        db.pragma('cache_size = -32768');
        // SQLite checkpoints (copies the WAL into the database file and syncs both) in the COMMIT
        // that takes the WAL past this many pages; at its default of 1,000 the worker checkpointed
        // every few transactions, copying the same hot index pages each time. The WAL is synced only
        // at a checkpoint, so a power loss (not a process crash) can take more of the latest commits
        // (docs/store.md, "SQLite's WAL checkpoints").
        db.pragma(`wal_autocheckpoint = ${SQLITE_WAL_CHECKPOINT_PAGES}`);
        db.pragma(`journal_size_limit = ${SQLITE_WAL_SIZE_LIMIT_BYTES}`);
      },
    } as DataSourceOptions;
  },
  prepareDataSource: (ds) => ds,
  afterOpen: async () => undefined,
  serializesWrites: true,
  // SQLite transactions are serializable; writes are one at a time anyway
  transaction: <T>(ds: DataSource, work: (m: EntityManager) => Promise<T>) => ds.transaction(work),

  instant: (value) => value,
  utcDay: (column) => `substr(${column}, 1, 10)`, // TypeORM stores 'YYYY-MM-DD HH:MM:SS.SSS' in UTC
  sumInt: (column) => `SUM(${column})`,
  // the column holds text with 12 decimals: whole dollars and pico-dollars summed apart, as text
  sumMoney: sumSqliteMoney,
  summedMoney: summedSqliteMoney,
  textGroupKeys: (column) => [column],
  sameText: (column, param) => `${column} = ${param}`,

  /**
   * The rows are picked by rowid through a sub-select: a LIMIT on DELETE or UPDATE exists only in
   * SQLite builds compiled with SQLITE_ENABLE_UPDATE_DELETE_LIMIT.
   */
  deliveryClaim: { kind: 'returning', lockClause: '' },
  changeSome(m, c) {
    const t = limitedTarget(m, c);
    const live = c.stamp === undefined ? '' : ` AND ${t.deletedAt} IS NULL`;
    const rows = `rowid IN (SELECT rowid FROM ${t.table} WHERE ${t.key} = ?${live} LIMIT ?)`;
    return c.stamp === undefined
      ? runLimited(m, `DELETE FROM ${t.table} WHERE ${rows}`, [c.planId, c.limit])
      : runLimited(m, `UPDATE ${t.table} SET ${t.deletedAt} = ? WHERE ${rows}`, [t.stamp, c.planId, c.limit]);
  },
  withRequestTimeout: (_timeoutMs, work) => work(),

  rows: (m) => new SqliteRowStore(m, sqlite),
  updatesChangedColumnsOnly: true,
  lockHeads: async (m, sorted) => sqliteHeads(m, sorted),
  bumpHeads: (m, ids) => bumpHeadsByUpdate(m, sqlite, ids),
  async eventPlans(m, ids) {
    const found = new Map<string, string>();
    for (const [id, planId] of new SqliteRows(m).pluck(ENTITY.event, 'eventId', 'planId', ids))
      found.set(id.toLowerCase(), planId as string);
    return found;
  },
  appendEvents: (m, rows) => appendEventRows(m, sqlite, rows),
  errorsEndTransaction: false,
  skipsStoredEvents: false,

  identifierCollation: 'BINARY',
  async textColumns(ds) {
    const tables: Array<{ name: string; sql: string }> = await ds.query(
      `SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
    );
    const out: TextColumnFacts[] = [];
    for (const t of tables) {
      const columns: Array<{ name: string; type: string }> = await ds.query(
        `SELECT name, type FROM pragma_table_info(?)`,
        [t.name],
      );
      for (const c of columns) {
        if (!/char|text|clob/i.test(c.type)) continue;
        // a column's collation is only in its definition: `"name" type ... COLLATE NOCASE`
        const def = new RegExp(`"${c.name}"[^,]*?\\bCOLLATE\\s+"?(\\w+)`, 'i').exec(t.sql);
        const collation = def ? def[1].toUpperCase() : null;
        out.push({
          table: t.name,
          column: c.name,
          collation,
          comparesBytes: collation === null || collation === 'BINARY',
        });
      }
    }
    return out;
  },

  migrations: { lock: 'exclusive-transaction', transaction: 'none' },

  transient: { codes: ['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY'] },
  // SQLite says SQLITE_ERROR for these and for much else: its message says which
  standingFaults: [{ kind: 'missing table, column or function', messages: [/no such (?:table|column|function):/] }],
  isDuplicateKey: (f) => f.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || f.code === 'SQLITE_CONSTRAINT_UNIQUE',
};

/**
 * One writer at a time (in process, the store's queue; across processes, the database lock, taken
 * at the first write: a reader whose snapshot another process outdated meanwhile fails that write
 * with SQLITE_BUSY_SNAPSHOT, which the worker retries). So read the heads, and insert the missing ones.
 */
function sqliteHeads(m: EntityManager, sorted: PlanHeadRow[]): Map<string, LockedHead> {
  const rows = new SqliteRows(m);
  const heads = new Map<string, LockedHead>();
  for (const r of rows.findIn<PlanHeadRow>(
    ENTITY.head,
    'planId',
    sorted.map((h) => h.planId),
  ))
    heads.set(r.planId, { ...r, version: r.version + 1, isNew: false });
  const missing = sorted.filter((h) => !heads.has(h.planId)).map((h) => ({ ...h, version: 1 }));
  rows.insert(ENTITY.head, missing);
  for (const h of missing) heads.set(h.planId, { ...h, isNew: true });
  return heads;
}
