import type { MigrationInterface, QueryRunner } from 'typeorm';
import { Query } from 'typeorm/driver/Query';
import { columnTypeFor, ColumnKind, Dialect } from '../src/store/sql/dialects';
import { dialectOf } from '../src/store/sql/dialects';

/**
 * Every database the same (docs/schema.md#the-same-on-every-database, docs/sql-server.md):
 *
 * - **Ids compare byte for byte.** SQL Server's default collation and MariaDB's utf8mb4_unicode_ci
 *   ignore case, so `plan_a` found `Plan_A` (an event dead-lettered, sessions `S1` and `s1`
 *   merged), while PostgreSQL and SQLite tell them apart. Id columns, and the agent and model
 *   names the analytics group by, get a binary collation: `Latin1_General_100_BIN2` (whose order
 *   is also the JS sort the lock order assumes) and `utf8mb4_bin`.
 * - **Token totals are 64-bit**: a plan's steps may each report up to 2^31-1 tokens.
 * - **MariaDB/MySQL tables are utf8mb4** whatever the database's default (a latin1 database
 *   refused every emoji), and get the CHECK constraints the other databases have.
 * - **SQL Server**: `plan_events` is clustered on `(plan_id, seq)` with a nonclustered primary key
 *   (random event ids made every insert a page split in the hot append table), and the plan tables
 *   never escalate row locks to a table lock (a 1,000-plan retention batch or a worker's
 *   `DELETE ... IN (...)` would otherwise lock out every other worker and reader).
 *
 * SQL Server cannot change the collation of a column under a key, index or foreign key, and
 * MariaDB cannot convert a column a foreign key uses: both drop those first and recreate them.
 * On MariaDB every step can run again after an interruption (DDL there is not transactional):
 * foreign keys are dropped `IF EXISTS`, the conversions and type changes are idempotent, checks
 * are dropped and added in one statement. SQL Server and PostgreSQL run it in one transaction.
 */
export class DatabasesAlike1795219500000 implements MigrationInterface {
  name = 'DatabasesAlike1795219500000';

  up(queryRunner: QueryRunner): Promise<void> {
    return run(queryRunner, 'up');
  }

  down(queryRunner: QueryRunner): Promise<void> {
    return run(queryRunner, 'down');
  }
}

type Kind = ColumnKind | { varchar: number };
export interface IdColumn {
  table: string;
  column: string;
  kind: Kind;
  nullable?: boolean;
}

/** Columns compared as identifiers: keys, references, and the names analytics group by. */
export const BINARY_COLUMNS: IdColumn[] = [
  { table: 'sessions', column: 'id', kind: 'externalId' },
  { table: 'execution_plans', column: 'id', kind: 'externalId' },
  { table: 'execution_plans', column: 'session_id', kind: 'externalId' },
  { table: 'plan_steps', column: 'id', kind: 'uuid' },
  { table: 'plan_steps', column: 'plan_id', kind: 'externalId' },
  { table: 'plan_steps', column: 'step_key', kind: 'externalId' },
  { table: 'plan_steps', column: 'agent_id', kind: { varchar: 100 } },
  { table: 'plan_steps', column: 'model', kind: { varchar: 100 }, nullable: true },
  { table: 'plan_handoffs', column: 'id', kind: 'uuid' },
  { table: 'plan_handoffs', column: 'plan_id', kind: 'externalId' },
  { table: 'plan_handoffs', column: 'step_id', kind: 'uuid', nullable: true },
  { table: 'plan_handoffs', column: 'handoff_key', kind: 'externalId' },
  { table: 'plan_handoffs', column: 'step_key', kind: 'externalId', nullable: true },
  { table: 'plan_handoffs', column: 'from_agent_id', kind: { varchar: 100 } },
  { table: 'plan_handoffs', column: 'to_agent_id', kind: { varchar: 100 } },
  { table: 'plan_decisions', column: 'id', kind: 'uuid' },
  { table: 'plan_decisions', column: 'plan_id', kind: 'externalId' },
  { table: 'plan_decisions', column: 'session_id', kind: 'externalId' },
  { table: 'workflow_dags', column: 'workflow_id', kind: 'externalId' },
  { table: 'workflow_checkpoints', column: 'id', kind: 'uuid' },
  { table: 'workflow_checkpoints', column: 'workflow_id', kind: 'externalId' },
  { table: 'workflow_checkpoints', column: 'checkpoint_key', kind: 'externalId' },
  { table: 'plan_heads', column: 'plan_id', kind: 'externalId' },
  { table: 'plan_heads', column: 'session_id', kind: 'externalId' },
  { table: 'plan_events', column: 'event_id', kind: 'uuid' },
  { table: 'plan_events', column: 'plan_id', kind: 'externalId' },
  { table: 'plan_events', column: 'session_id', kind: 'externalId' },
];

export const BINARY_COLLATION: Partial<Record<Dialect, string>> = {
  mssql: 'Latin1_General_100_BIN2',
  mysql: 'utf8mb4_bin',
};

const TABLES = [
  'sessions',
  'execution_plans',
  'plan_steps',
  'plan_handoffs',
  'plan_decisions',
  'workflow_dags',
  'workflow_checkpoints',
  'plan_heads',
  'plan_events',
];
const TOKEN_TOTALS = ['total_input_tokens', 'total_output_tokens'];

interface ForeignKey {
  name: string;
  table: string;
  column: string;
  references: string;
  column2: string;
  onDelete: 'CASCADE' | 'NO ACTION';
}
const FOREIGN_KEYS: ForeignKey[] = [
  {
    name: 'FK_execution_plans_sessions',
    table: 'execution_plans',
    column: 'session_id',
    references: 'sessions',
    column2: 'id',
    onDelete: 'CASCADE',
  },
  {
    name: 'FK_plan_steps_plans',
    table: 'plan_steps',
    column: 'plan_id',
    references: 'execution_plans',
    column2: 'id',
    onDelete: 'CASCADE',
  },
  {
    name: 'FK_plan_handoffs_plans',
    table: 'plan_handoffs',
    column: 'plan_id',
    references: 'execution_plans',
    column2: 'id',
    onDelete: 'CASCADE',
  },
  {
    name: 'FK_plan_handoffs_steps',
    table: 'plan_handoffs',
    column: 'step_id',
    references: 'plan_steps',
    column2: 'id',
    onDelete: 'NO ACTION',
  },
  {
    name: 'FK_plan_decisions_plans',
    table: 'plan_decisions',
    column: 'plan_id',
    references: 'execution_plans',
    column2: 'id',
    onDelete: 'CASCADE',
  },
  {
    name: 'FK_workflow_dags_plans',
    table: 'workflow_dags',
    column: 'workflow_id',
    references: 'execution_plans',
    column2: 'id',
    onDelete: 'CASCADE',
  },
  {
    name: 'FK_workflow_checkpoints_plans',
    table: 'workflow_checkpoints',
    column: 'workflow_id',
    references: 'execution_plans',
    column2: 'id',
    onDelete: 'CASCADE',
  },
];

/** SQL Server: keys and indexes over the columns whose collation changes (they must go first). */
const PRIMARY_KEYS: Array<[table: string, name: string, column: string]> = [
  ['sessions', 'PK_sessions', 'id'],
  ['execution_plans', 'PK_execution_plans', 'id'],
  ['plan_steps', 'PK_plan_steps', 'id'],
  ['plan_handoffs', 'PK_plan_handoffs', 'id'],
  ['plan_decisions', 'PK_plan_decisions', 'id'],
  ['workflow_dags', 'PK_workflow_dags', 'workflow_id'],
  ['workflow_checkpoints', 'PK_workflow_checkpoints', 'id'],
  ['plan_heads', 'PK_plan_heads', 'plan_id'],
  ['plan_events', 'PK_plan_events', 'event_id'],
];
const INDEXES: Array<[table: string, name: string, columns: string[]]> = [
  ['execution_plans', 'IX_execution_plans_session', ['session_id', 'created_at']],
  ['plan_steps', 'IX_plan_steps_agent', ['agent_id']],
  ['plan_handoffs', 'IX_plan_handoffs_plan', ['plan_id']],
  ['plan_handoffs', 'IX_plan_handoffs_step', ['step_id']],
  ['plan_decisions', 'IX_plan_decisions_plan', ['plan_id', 'decided_at']],
  ['workflow_checkpoints', 'IX_workflow_checkpoints_workflow', ['workflow_id', 'layer']],
];

/** CHECK constraints of the initial schema, which it left out on MySQL/MariaDB. */
const CHECKS: Array<[table: string, name: string, column: string, values: string[]]> = [
  [
    'execution_plans',
    'CK_execution_plans_status',
    'status',
    ['planning', 'executing', 'completed', 'failed', 'cancelled'],
  ],
  ['plan_steps', 'CK_plan_steps_status', 'status', ['pending', 'in_progress', 'completed', 'failed', 'skipped']],
  ['plan_decisions', 'CK_plan_decisions_decision', 'decision', ['approve', 'edit', 'reject']],
];

const q = (d: Dialect, name: string) => (d === 'mysql' ? `\`${name}\`` : `"${name}"`);

function typeOf(d: Dialect, kind: Kind): string {
  const t = columnTypeFor(d, kind);
  const size = t.length ?? (t.precision !== undefined ? String(t.precision) : undefined);
  return size === undefined ? String(t.type) : `${t.type}(${size})`;
}

type Direction = 'up' | 'down';

function statements(d: Dialect, mariadb: boolean, direction: Direction): string[] {
  switch (d) {
    case 'postgres':
      return [
        `ALTER TABLE "execution_plans" ${TOKEN_TOTALS.map((c) => `ALTER COLUMN "${c}" TYPE ${direction === 'up' ? 'bigint' : 'int'}`).join(', ')}`,
      ];
    case 'sqlite':
      return []; // integers are 64-bit and text compares byte for byte already
    case 'mysql':
      return mysqlStatements(mariadb, direction);
    case 'mssql':
      return mssqlStatements(direction);
  }
}

function mysqlStatements(mariadb: boolean, direction: Direction): string[] {
  const m = (name: string) => q('mysql', name);
  const ifExists = mariadb ? 'IF EXISTS ' : '';
  const out: string[] = [];
  for (const fk of FOREIGN_KEYS) out.push(`ALTER TABLE ${m(fk.table)} DROP FOREIGN KEY ${ifExists}${m(fk.name)}`);
  const collation = direction === 'up' ? BINARY_COLLATION.mysql! : 'utf8mb4_unicode_ci';
  for (const table of TABLES) {
    if (direction === 'up')
      out.push(`ALTER TABLE ${m(table)} CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
    const columns = BINARY_COLUMNS.filter((c) => c.table === table);
    const modify = columns.map(
      (c) =>
        `MODIFY ${m(c.column)} ${typeOf('mysql', c.kind)} CHARACTER SET utf8mb4 COLLATE ${collation} ${c.nullable ? 'NULL' : 'NOT NULL'}`,
    );
    if (table === 'execution_plans')
      for (const t of TOKEN_TOTALS)
        modify.push(`MODIFY ${m(t)} ${direction === 'up' ? 'bigint' : 'int'} NOT NULL DEFAULT 0`);
    // a separate statement: CONVERT TO in the same ALTER would override the columns' collation
    out.push(`ALTER TABLE ${m(table)} ${modify.join(', ')}`);
  }
  for (const fk of FOREIGN_KEYS) {
    out.push(
      `ALTER TABLE ${m(fk.table)} ADD CONSTRAINT ${m(fk.name)} FOREIGN KEY (${m(fk.column)}) REFERENCES ${m(fk.references)} (${m(fk.column2)}) ON DELETE ${fk.onDelete}`,
    );
  }
  for (const [table, name, column, values] of CHECKS) {
    // MySQL before 8.0.16 parses CHECK and ignores it; MySQL has no DROP ... IF EXISTS for it
    const drop = mariadb ? `DROP CONSTRAINT IF EXISTS ${m(name)}` : '';
    if (direction === 'down') {
      out.push(`ALTER TABLE ${m(table)} ${mariadb ? drop : `DROP CHECK ${m(name)}`}`);
      continue;
    }
    const add = `ADD CONSTRAINT ${m(name)} CHECK (${m(column)} IN (${values.map((v) => `'${v}'`).join(', ')}))`;
    out.push(`ALTER TABLE ${m(table)} ${drop ? `${drop}, ` : ''}${add}`);
  }
  return out;
}

/**
 * SQL Server: drops the column statistics (not an index's) on these columns, which block a
 * change of collation as an index would (Msg 5074). A database on which queries ran has them:
 * with AUTO_CREATE_STATISTICS on (the default) the optimizer creates `_WA_Sys_...` statistics on
 * unindexed columns a query filters or groups by (the agent and model names the analytics group
 * by). Their names are the server's, so they are found in `sys.stats` and dropped by dynamic SQL;
 * the optimizer creates them again, with the new collation, when a query next needs them.
 */
export function dropColumnStatistics(columns: readonly IdColumn[]): string {
  const byColumn = columns
    .map((c) => `(sc.object_id = OBJECT_ID(N'${c.table}') AND c.name = N'${c.column}')`)
    .join(' OR ');
  return [
    'DECLARE @drop nvarchar(MAX)',
    `SELECT @drop = STRING_AGG(CAST(N'DROP STATISTICS ' + QUOTENAME(OBJECT_SCHEMA_NAME(x.object_id)) + N'.' + QUOTENAME(OBJECT_NAME(x.object_id)) + N'.' + QUOTENAME(x.name) AS nvarchar(MAX)), N'; ') FROM (SELECT DISTINCT st.object_id, st.name FROM sys.stats st JOIN sys.stats_columns sc ON sc.object_id = st.object_id AND sc.stats_id = st.stats_id JOIN sys.columns c ON c.object_id = sc.object_id AND c.column_id = sc.column_id WHERE (st.auto_created = 1 OR st.user_created = 1) AND (${byColumn})) x`,
    'IF @drop IS NOT NULL EXEC sp_executesql @drop',
  ].join('; ');
}

function mssqlStatements(direction: Direction): string[] {
  const s = (name: string) => q('mssql', name);
  const out: string[] = [];
  for (const fk of FOREIGN_KEYS) out.push(`ALTER TABLE ${s(fk.table)} DROP CONSTRAINT ${s(fk.name)}`);
  for (const [table, name] of INDEXES) out.push(`DROP INDEX ${s(name)} ON ${s(table)}`);
  out.push(`ALTER TABLE ${s('plan_steps')} DROP CONSTRAINT ${s('UQ_plan_step_index')}`);
  out.push(`DROP INDEX ${s('IX_plan_events_plan')} ON ${s('plan_events')}`);
  for (const [table, name] of PRIMARY_KEYS) out.push(`ALTER TABLE ${s(table)} DROP CONSTRAINT ${s(name)}`);

  out.push(dropColumnStatistics(BINARY_COLUMNS));
  const collation = direction === 'up' ? BINARY_COLLATION.mssql! : 'DATABASE_DEFAULT';
  for (const c of BINARY_COLUMNS) {
    out.push(
      `ALTER TABLE ${s(c.table)} ALTER COLUMN ${s(c.column)} ${typeOf('mssql', c.kind)} COLLATE ${collation} ${c.nullable ? 'NULL' : 'NOT NULL'}`,
    );
  }
  for (const c of TOKEN_TOTALS) {
    // a column's type cannot change under its default constraint
    const df = s(`DF_execution_plans_${c}`);
    out.push(`ALTER TABLE ${s('execution_plans')} DROP CONSTRAINT ${df}`);
    out.push(
      `ALTER TABLE ${s('execution_plans')} ALTER COLUMN ${s(c)} ${direction === 'up' ? 'bigint' : 'int'} NOT NULL`,
    );
    out.push(`ALTER TABLE ${s('execution_plans')} ADD CONSTRAINT ${df} DEFAULT 0 FOR ${s(c)}`);
  }

  for (const [table, name, column] of PRIMARY_KEYS) {
    const clustering = table === 'plan_events' && direction === 'up' ? ' NONCLUSTERED' : '';
    out.push(`ALTER TABLE ${s(table)} ADD CONSTRAINT ${s(name)} PRIMARY KEY${clustering} (${s(column)})`);
  }
  // the hot append table: rows in (plan_id, seq) order, so inserts land at a plan's end and a
  // plan's log is read in one range
  out.push(
    `CREATE ${direction === 'up' ? 'CLUSTERED ' : ''}INDEX ${s('IX_plan_events_plan')} ON ${s('plan_events')} (${s('plan_id')}, ${s('seq')})`,
  );
  out.push(
    `ALTER TABLE ${s('plan_steps')} ADD CONSTRAINT ${s('UQ_plan_step_index')} UNIQUE (${s('plan_id')}, ${s('step_index')})`,
  );
  for (const [table, name, columns] of INDEXES)
    out.push(`CREATE INDEX ${s(name)} ON ${s(table)} (${columns.map(s).join(', ')})`);
  for (const fk of FOREIGN_KEYS) {
    out.push(
      `ALTER TABLE ${s(fk.table)} ADD CONSTRAINT ${s(fk.name)} FOREIGN KEY (${s(fk.column)}) REFERENCES ${s(fk.references)} (${s(fk.column2)}) ON DELETE ${fk.onDelete}`,
    );
  }
  // row locks stay row locks past 5,000 of them: no statement of one worker blocks the others
  for (const table of TABLES)
    out.push(`ALTER TABLE ${s(table)} SET (LOCK_ESCALATION = ${direction === 'up' ? 'DISABLE' : 'TABLE'})`);
  return out;
}

async function run(queryRunner: QueryRunner, direction: Direction): Promise<void> {
  const mariadb = queryRunner.connection.options.type === 'mariadb';
  for (const statement of statements(dialectOf(queryRunner), mariadb, direction)) await sql(queryRunner, statement);
}

/** Run one statement, or record it in SQL memory mode (queryRunner.query would run it regardless). */
function sql(queryRunner: QueryRunner, statement: string): Promise<void> {
  return (queryRunner as unknown as { executeQueries(up: Query[], down: Query[]): Promise<void> }).executeQueries(
    [new Query(statement)],
    [],
  );
}
