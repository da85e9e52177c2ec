import type { DataSource, DataSourceOptions, EntityManager, QueryRunner } from 'typeorm';
import type { DatabaseTarget, Dialect } from '../../config/database-url';
import type { PlanEventRow, PlanHeadRow, TableColumn } from '../entities';
import type { ColumnTypes } from './column-kinds';

export type { Dialect } from '../../config/database-url';

/**
 * On a duplicate `key` (a primary key): overwrite the `update` properties with the new row's, and
 * for `keep`, keep the smaller ('min') or larger ('max') of the stored and the new value, or store
 * their sum ('add': counters a row of deltas moves, analytics_rollups; money columns add exactly). Nothing
 * to update (both empty) still locks the stored row exclusively at once (`SET key = key`), so two
 * writers never hold a shared lock and then deadlock upgrading it (MySQL's INSERT IGNORE does).
 */
/** How an upsert merges a stored value with the new row's (Upsert.keep). */
export type KeepHow = 'min' | 'max' | 'add';

export interface Upsert {
  key: string;
  update: readonly string[];
  keep?: Readonly<Record<string, KeepHow>>;
  /**
   * Two transactions that do not share a plan's head lock may insert this key at once (plan
   * heads, sessions): the upsert must make the second wait for the first instead of failing on
   * the key (SQL Server: MERGE WITH (HOLDLOCK)). Rows of one plan are serialised by its head lock.
   */
  concurrentInserts?: boolean;
}

/**
 * Row reads and writes of one transaction, chunked to the database's limits (TypeORM does not
 * chunk). Each dialect writes rows its own fastest way (dialect files say which).
 */
export interface RowStore {
  /**
   * Insert new rows. `jsonText`: columns whose values are still JS values, sent as JSON text (PostgreSQL only;
   * elsewhere pass text).
   */
  insert(entity: string, rows: object[], jsonText?: readonly string[]): Promise<void>;
  /** Insert rows, or update (or just lock) the stored ones with the same key (see Upsert). */
  upsert(entity: string, rows: object[], upsert: Upsert): Promise<void>;
  /**
   * Insert the rows whose `key` (a primary key) is not stored, leaving stored rows as they are,
   * and return the keys inserted: one statement that skips stored keys and answers the inserted
   * ones, so no read before it. Absent where the database cannot say which rows it skipped
   * without a read (MySQL/MariaDB, SQL Server): there, read first.
   */
  insertNew?(entity: string, rows: object[], key: string): Promise<Set<string>>;
  /**
   * Overwrite the `update` properties of stored rows; `stored`: each row as read before, so a
   * database that writes only what changed can leave out the rest. Where a dialect upserts
   * instead, the rows must be complete.
   */
  update<T extends object>(
    entity: string,
    rows: T[],
    key: string,
    update: readonly string[],
    stored?: (row: T) => object | undefined,
  ): Promise<void>;
  /**
   * DELETE by a column (soft-deleted rows included: DELETE is not soft-delete scoped); with
   * `unless`, only the rows no row of `unless.entity` matches (see UnlessMatched).
   */
  deleteWhereIn(entity: string, property: string, ids: string[], unless?: UnlessMatched): Promise<void>;
  /** Rows whose `property` is one of `values`, soft-deleted ones included. */
  findIn<T>(entity: string, property: string, values: string[]): Promise<T[]>;
}

/**
 * A delete's exception: rows that a row of `entity` (soft-deleted or not) matches on every one of
 * the properties `on`, which both entities name alike; text compared byte for byte (sameText).
 */
export interface UnlessMatched {
  entity: string;
  on: readonly string[];
}

/** A plan head under this transaction's lock; `version` is already the one this transaction writes. */
export interface LockedHead extends PlanHeadRow {
  /** This transaction created the head: none of the plan's events was stored before. */
  isNew: boolean;
}

/** A text column as the schema has it (the collation lint's input, schema-lint.ts). */
export interface TextColumnFacts extends TableColumn {
  /** Its collation; null: the database's default (none named on the column). */
  collation: string | null;
  /** Whether that collation compares byte for byte, as ids need. */
  comparesBytes: boolean;
}

/** An event row to append to the log; `payload` is the event's payload, not yet JSON text. */
export type EventRowInput = Omit<PlanEventRow, 'payload'> & { payload: unknown };

/** The statements that take and release the migration lock. */
export interface MigrationLockSql {
  /**
   * Where the lock is held. `migrating-connection`: a session lock on the connection that runs the
   * migrations. `own-transaction`: a transaction-owned lock in a transaction of its own on another
   * connection, held (never idle in the pool, never reaped) until it is rolled back; for drivers
   * whose query runner sends each statement on whichever pooled connection is free.
   */
  holder: 'migrating-connection' | 'own-transaction';
  take: string;
  /** Ends the lock early; an `own-transaction` lock ends with its transaction's rollback instead. */
  release: string;
  /** Whether the rows `take` answered mean the lock is held. */
  ok(rows: Array<Record<string, unknown>>): boolean;
}

/** What one use of a database (a worker, `migrate`) asks of its connections beyond the URL. */
export interface ConnectionSettings {
  /**
   * Milliseconds a single request may run before the driver cancels it; 0: no limit (`migrate`,
   * whose lock waits its turn and whose DDL rewrites tables). Only drivers with a request timeout
   * (SQL Server's 15 s default) use it; it overrides the URL's `requestTimeout`.
   */
  requestTimeoutMs?: number;
}

/** Error codes of this database (or its driver) after which the same transaction may succeed. */
export interface TransientErrors {
  /** `code` strings (driver codes, SQLSTATEs). */
  codes: readonly string[];
  /** Numbered server errors (SQL Server's `number`), with what each means. */
  numbers?: ReadonlyMap<number, string>;
  /** MySQL `errno` values (counted only for errors that say MySQL or MariaDB). */
  errnos?: ReadonlySet<number>;
  /** Messages of errors that arrive with no code or number saying what they are. */
  messages?: readonly RegExp[];
  /**
   * Errors that say the transaction holds more locks than the server can keep (SQL Server's lock
   * memory, InnoDB's lock table): the same transaction fails again, a smaller one may not.
   */
  tooManyLocks?: { codes?: readonly string[]; numbers?: ReadonlySet<number>; errnos?: ReadonlySet<number> };
}

/** Who needs the database: `migrate` (DDL) or a process that reads and writes rows (the worker). */
export type CapabilityPurpose = 'migrate' | 'worker';

/**
 * What plan-ledger's SQL needs of a database that it can ask cheaply at start: one statement, and
 * what its rows say is missing (refused, one item each) or worth knowing (logged). See capabilities.ts.
 */
export interface CapabilityProbe {
  /** The statement; `tables`: the tables the entities name. */
  statement(purpose: CapabilityPurpose, tables: string[]): { sql: string; params: unknown[] };
  read(rows: Record<string, unknown>[], purpose: CapabilityPurpose): { missing: string[]; notes: string[] };
}

/** What a standing fault is about (see StandingFaults). */
export type StandingFaultKind = 'missing table, column or function' | 'permission denied' | 'collation conflict';

/**
 * Errors that cannot depend on the event being written: the database lacks a table, a column or a
 * function the statements use, the login lacks a permission, or two collations conflict. Every
 * event fails the same way until an operator repairs the database, so the worker pauses instead of
 * dead-lettering the stream (see database-gate.ts).
 */
export type StandingFaults = readonly {
  kind: StandingFaultKind;
  /** `code` strings (SQLSTATEs, driver codes). */
  codes?: readonly string[];
  /** Numbered server errors (SQL Server's `number`). */
  numbers?: ReadonlySet<number>;
  /** MySQL `errno` values (counted only for errors that say MySQL or MariaDB). */
  errnos?: ReadonlySet<number>;
  /** Messages of errors whose code is too broad to say (SQLite's `SQLITE_ERROR`). */
  messages?: readonly RegExp[];
}[];

/**
 * A change of at most `limit` rows of one plan in one table: a chunk of a plan too large for one
 * transaction (retention, erasure). Which rows is the database's choice.
 */
export interface LimitedChange {
  entity: string;
  /** The property that holds the plan id. */
  planKey: string;
  planId: string;
  limit: number;
  /** Soft delete: stamp `deleted_at` with this instant on rows not stamped yet. Absent: DELETE. */
  stamp?: Date;
}

/**
 * Everything plan-ledger does differently per database, behind one interface: one object per
 * database (sqlite.ts, postgres.ts, mysql.ts, mssql.ts). Code outside `sql/` asks the object of
 * its DataSource (`sqlDialectOf`) and never branches on the database's name; a fifth database is
 * one more file implementing this.
 */
export interface SqlDialect extends ColumnTypes {
  readonly name: Dialect;

  // --- schema: what migrations declare, beyond the column types (column-kinds.ts) ---
  /** SQL that yields "now" in UTC, for column defaults. */
  readonly nowExpression: string;
  /** Literal for a boolean default. */
  booleanLiteral(value: boolean): string;

  // --- limits ---
  /** Bound parameters per statement, with headroom. */
  readonly maxParams: number;
  /** Rows per multi-row statement. */
  readonly maxRows: number;
  /** Ids per IN list of a statement that binds ids and a few other values and inserts nothing (retention, erasure). */
  readonly maxIdsPerStatement: number;
  /**
   * How a list of ids travels as one parameter, so that a statement's text does not change with
   * the list's length (SQL Server caches one plan per text): the condition that `column` is one of
   * the list `param` names, and the parameter's value. Absent: lists go as `IN (:...param)`, one
   * parameter per id (see id-lists.ts).
   */
  readonly idList?: {
    condition(column: string, param: string): string;
    value(ids: readonly string[]): unknown;
  };

  // --- connections and transactions ---
  dataSourceOptions(
    target: DatabaseTarget,
    common: Omit<DataSourceOptions, 'type'>,
    poolSize: number,
    connection?: ConnectionSettings,
  ): DataSourceOptions;
  /** Driver set-up a new DataSource needs before it connects. */
  prepareDataSource(ds: DataSource): DataSource;
  /** What an opened database needs before first use (a schema to create...). */
  afterOpen(ds: DataSource, target: DatabaseTarget): Promise<void>;
  /** One writer at a time (in process): every write goes through one queue (serial-queue.ts). */
  readonly serializesWrites: boolean;
  /** A write transaction at the isolation every writer of plans uses. */
  transaction<T>(ds: DataSource, work: (m: EntityManager) => Promise<T>): Promise<T>;

  // --- values and expressions ---
  /** A timestamp parameter as this database should bind it. */
  instant(value: Date): unknown;
  /**
   * SQL for the UTC calendar day (`YYYY-MM-DD`) of a timestamp column (the PRD analytics'
   * `CAST(created_at AS DATE)`). Neither the session's time zone nor the process's may move a
   * plan to another day: text where the database allows it, so no driver shifts the day into a
   * local time zone.
   */
  utcDay(column: string): string;
  /** SQL summing an int column without overflowing 32 bits (token totals pass two billion). */
  sumInt(column: string): string;
  /**
   * SQL summing a money column (DECIMAL(24,12); SQLite text) exactly, and the pico-dollars of the
   * value it yields (0 for the NULL of no rows): `summedMoney(row.x)`.
   */
  sumMoney(column: string): string;
  summedMoney(value: unknown): bigint;
  /**
   * What to group a text column by so values that differ only in trailing spaces stay apart
   * (`'coder'` and `'coder '` are two agents). SQL Server and MySQL/MariaDB (PAD SPACE
   * collations) compare them equal: there the byte length is grouped by too, which, with a binary
   * collation, leaves byte-identical values in each group.
   */
  textGroupKeys(column: string): string[];
  /** SQL that a text column equals a parameter exactly, trailing spaces included. */
  sameText(column: string, param: string): string;

  // --- the store's rows ---
  rows(m: EntityManager): RowStore;
  /** An UPDATE names only the columns that changed (the store keeps rows as read to compare). */
  readonly updatesChangedColumnsOnly: boolean;
  /** Create the missing heads and lock them all, in key order (`sorted`), then read them. */
  lockHeads(m: EntityManager, sorted: PlanHeadRow[]): Promise<Map<string, LockedHead>>;
  /** Lock these stored heads (sorted ids) by bumping their version. */
  bumpHeads(m: EntityManager, ids: string[]): Promise<void>;
  /** The plan each of these (lower-case) event ids is stored for; ids not stored are absent. */
  eventPlans(m: EntityManager, ids: string[]): Promise<Map<string, string>>;
  /**
   * Append events to the log. With `skipStored` (only where `skipsStoredEvents`), ids already
   * stored are skipped and the inserted ones returned; otherwise every row is inserted. The rows
   * are given away (a dialect may turn their payloads into text in place).
   */
  appendEvents(m: EntityManager, rows: EventRowInput[], skipStored: boolean): Promise<Set<string>>;
  /**
   * A statement's error ends the transaction (SQL Server with XACT_ABORT on rolls it back; PostgreSQL
   * refuses every later statement): what is read after one is read outside it.
   */
  readonly errorsEndTransaction: boolean;
  /** Inserts can skip stored ids in the same statement (the store then looks nothing up first). */
  readonly skipsStoredEvents: boolean;
  /**
   * The stored events of several plans above their `aboveSeq` in one statement, ordered by plan,
   * seq, event id; absent where one read per plan is as cheap.
   */
  waitingEventRows?(
    m: EntityManager,
    plans: Array<{ planId: string; aboveSeq: number | null }>,
  ): Promise<PlanEventRow[]>;

  // --- the webhook outbox ---
  /** How a delivery round leases due outbox rows and reads them back (delivery-claims.ts). */
  readonly deliveryClaim: DeliveryClaimSql;

  // --- retention ---
  /**
   * DELETE (or stamp) at most `change.limit` rows of one plan in one table, in the transaction of
   * `m`; the number changed. SQL Server `TOP (n)`, MySQL `LIMIT n`; PostgreSQL and SQLite pick the
   * rows by their address (ctid, rowid) in a sub-select.
   */
  changeSome(m: EntityManager, change: LimitedChange): Promise<number>;
  /**
   * Runs `work` with every statement it sends given `timeoutMs` to run (0: no limit) instead of the
   * connection's request timeout, where the driver has one (SQL Server); elsewhere just runs it.
   */
  withRequestTimeout<T>(timeoutMs: number, work: () => Promise<T>): Promise<T>;

  // --- schema as migrated ---
  /** The collation ids compare in (named in the schema lint's messages). */
  readonly identifierCollation: string;
  /**
   * The text columns of the plan-ledger tables in the current database or schema, with their
   * collation and whether it compares byte for byte (schema-lint.ts).
   */
  textColumns(ds: DataSource): Promise<TextColumnFacts[]>;

  // --- migrations ---
  readonly migrations: {
    /** The lock two `migrate` runs take turns on; `exclusive-transaction`: one transaction around all (SQLite). */
    lock: MigrationLockSql | 'exclusive-transaction';
    /** TypeORM's transaction mode: `each` migration in its own, or `none` (the lock's transaction holds all). */
    transaction: 'none' | 'each';
    /** Changes to the migrating connection (MySQL: DDL that a killed run left done is skipped on the rerun). */
    prepareRunner?(runner: QueryRunner): void;
  };

  // --- errors ---
  readonly transient: TransientErrors;
  /** What the SQL needs of the database, asked at `migrate` and worker start; absent: nothing asked. */
  readonly capabilities?: CapabilityProbe;
  /** Errors that stay until the database is repaired, whatever the event (see StandingFaults). */
  readonly standingFaults: StandingFaults;
  /** A unique or primary key violation: for an idempotent insert, the row is already there. */
  isDuplicateKey(f: { code?: string; number?: number; errno?: number }): boolean;
}

/**
 * How a database leases due outbox rows (delivery-claims.ts):
 * - `returning`: one UPDATE whose sub-select picks the rows and whose RETURNING answers them;
 *   `lockClause` (PostgreSQL's FOR UPDATE SKIP LOCKED) keeps two claims from waiting on each other.
 * - `output`: one UPDATE of a TOP (n) common table expression read past locked rows, OUTPUT answering them (SQL Server).
 * - `steps`: the due ids read, leased by an UPDATE that takes only rows still due and free, and the
 *   rows leased under the token read back (MySQL/MariaDB: no UPDATE ... RETURNING).
 */
export type DeliveryClaimSql = { kind: 'returning'; lockClause: string } | { kind: 'output' } | { kind: 'steps' };
