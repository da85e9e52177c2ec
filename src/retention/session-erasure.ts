import type { DataSource, EntityManager } from 'typeorm';
import { idsIn } from '../store/sql/id-lists';
import type { DeadLetterService } from '../dead-letters/dead-letter.service';
import { NotFoundError } from '../queries/query-errors';
import { PlanLedgerError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import { ENTITY } from '../store/entities';
import { sqlDialectOf } from '../store/sql/dialects';
import { inTransaction, lockOrder } from './retention-batch';
import { DEFAULT_RETENTION_POLICY } from './retention-config';
import { BatchContext, changePlans, PlanChange, planSizes } from './row-batches';
import { affected, countRows, deleteRows, maxIdsPerStatement, PLAN_TABLES, PlanTable } from './retention-sql';
import { deleteSessions, lockSessions } from './empty-sessions';

/** Rounds of erasure while workers keep writing new plans of the session, before giving up. */
const MAX_ROUNDS = 5;

export interface EraseSessionOptions {
  /** Count what would be removed; change nothing, lock nothing. @defaultValue false */
  dryRun?: boolean;
  /** Where the session's dead letters are; without it Redis is not touched and `deadLetters` is null. */
  deadLetters?: DeadLetterService;
  /** Plans per transaction. @defaultValue 1000 (capped per database like retention's) */
  batchSize?: number;
  /**
   * Rows per transaction at most; a plan with more is erased in chunks of this many rows, one
   * transaction each (retention's RETENTION_MAX_ROWS). @defaultValue 5000
   */
  maxRowsPerTransaction?: number;
  /**
   * Seconds each statement may run on SQL Server, instead of the connection's request timeout
   * (retention's RETENTION_REQUEST_TIMEOUT); 0: no limit. @defaultValue 300
   */
  requestTimeoutSeconds?: number;
  logger?: Logger;
  /**
   * Also erase the forks and replays of the session's plans that are in other sessions, and their
   * forks, at any depth. Without it, a session with such forks is refused (ForksInOtherSessionsError):
   * they read the steps they inherit from its plans' rows. @defaultValue false
   */
  includeForks?: boolean;
}

/** Fork ids named in a refusal at most. */
const NAMED_FORKS = 5;

/**
 * Erasure refused: plans of the session have forks (at any depth) in other sessions, which read
 * their inherited steps from its rows. Nothing was erased.
 */
export class ForksInOtherSessionsError extends PlanLedgerError {
  override readonly name = 'ForksInOtherSessionsError';
  readonly kind = 'conflict';
  constructor(
    readonly sessionId: string,
    readonly forks: Array<{ planId: string; sessionId: string }>,
  ) {
    const sessions = [...new Set(forks.map((f) => f.sessionId))].sort();
    const ids = forks.slice(0, NAMED_FORKS).map((f) => f.planId);
    super(
      `session ${sessionId}: ${forks.length} fork(s) of its plans are in other sessions (${sessions.slice(0, NAMED_FORKS).join(', ')}${sessions.length > NAMED_FORKS ? `, ... ${sessions.length} sessions` : ''}): ${ids.join(', ')}${forks.length > ids.length ? ', ...' : ''}; add --include-forks to erase them too; nothing was erased`,
    );
  }
}

/** What `eraseSession` removed (dry run: would remove). JSON-ready. */
export interface SessionErasureReport {
  sessionId: string;
  dryRun: boolean;
  /** Plans of the session (plan rows, or heads of plans whose plan.created never arrived). */
  plans: number;
  /** Rows per table, soft-deleted ones included; `sessions` is the session's own row (0 or 1). */
  tables: Record<PlanTable | 'sessions', number>;
  /**
   * Dead letters removed from Redis (their event's sessionId is this session, or planId one of its plans); null =
   * Redis not asked.
   */
  deadLetters: number | null;
  /**
   * Forks and replays of its plans in other sessions (at any depth) erased with them (`includeForks`):
   * how many, and their sessions (whose rows stay). Their rows are counted in `plans` and `tables`.
   */
  forks: { plans: number; sessions: string[] };
  durationMs: number;
}

/**
 * Erasure: removes everything of one session for good, whatever its plans' status or retention
 * state: every row its plans own (PLAN_TABLES: steps, handoffs, decisions, checkpoints, DAGs,
 * events, plan rows, heads), the `sessions` row, and its dead letters. Each batch of plans is one
 * transaction of at most `maxRowsPerTransaction` rows under their head locks, as the store and
 * retention take them (a larger plan in chunks, its plan row and head with the last), so a worker
 * applying an event of one of these plans either finished before (and its rows are deleted) or
 * waits and then finds nothing to add to. Plans written for the session while this runs are found
 * under the session row's lock before it is deleted, and erased first. Forks and replays of its
 * plans in other sessions (at any depth) are erased with them with `includeForks`; without it such
 * a session is refused (ForksInOtherSessionsError) before anything is erased. Throws NotFoundError
 * when neither the database nor Redis knows the session.
 */
export async function eraseSession(
  ds: DataSource,
  sessionId: string,
  options: EraseSessionOptions = {},
): Promise<SessionErasureReport> {
  const timeoutS = options.requestTimeoutSeconds ?? DEFAULT_RETENTION_POLICY.requestTimeoutSeconds;
  return sqlDialectOf(ds).withRequestTimeout(timeoutS * 1000, () => erase(ds, sessionId, options));
}

async function erase(ds: DataSource, sessionId: string, options: EraseSessionOptions): Promise<SessionErasureReport> {
  const started = Date.now();
  const dryRun = options.dryRun ?? false;
  const batchSize = Math.min(options.batchSize ?? 1000, maxIdsPerStatement(sqlDialectOf(ds)));
  const tables = Object.fromEntries(
    [...PLAN_TABLES.map((t) => t.table), 'sessions'].map((t) => [t, 0]),
  ) as SessionErasureReport['tables'];
  const done = new Set<string>();
  const add = (counts: Partial<Record<PlanTable, number>>) => {
    for (const [t, n] of Object.entries(counts) as Array<[PlanTable, number]>) tables[t] += n;
  };
  const bc: BatchContext = {
    ds,
    dryRun,
    maxRows: options.maxRowsPerTransaction ?? DEFAULT_RETENTION_POLICY.maxRowsPerTransaction,
    batchSize,
    logger: options.logger,
    proceed: () => true,
    counted: () => undefined,
    // an erasure is asked for and waited on: it does not rest between its transactions
    rest: async () => undefined,
  };
  const change: PlanChange = {
    tables: PLAN_TABLES,
    tail: 2, // execution_plans, plan_heads
    dropsEmptySessions: false, // the session row goes last, below
    whole: (m, ids) => (dryRun ? countAll(m, ids) : deleteAll(m, ids)),
    stillDue: async () => true,
    add,
  };

  // forks of its plans in other sessions: refused before anything is erased, or erased with them
  const forks = new Map<string, string>();
  const withForks = async (own: string[]): Promise<string[]> => {
    const found = await forksElsewhere(ds.manager, sessionId, own, maxIdsPerStatement(sqlDialectOf(ds)));
    if (found.length === 0) return own;
    if (!options.includeForks) {
      if (forks.size === 0 && done.size === 0) throw new ForksInOtherSessionsError(sessionId, found);
      // plans written for the session during the erasure, with forks already: leave those forks
      options.logger?.warn(
        { sessionId, forks: found.map((f) => f.planId) },
        'forks of new plans of an erased session left',
      );
      return own;
    }
    for (const f of found) forks.set(f.planId, f.sessionId);
    return [...found.map((f) => f.planId), ...own];
  };

  // a plan written for the session meanwhile is found by the check under the session's lock, and
  // erased in one more round; a dry run looks once
  let ids = await withForks(await planIdsOf(ds.manager, sessionId));
  for (let round = 1; ; round++) {
    for (let i = 0; i < ids.length; i += batchSize) {
      const page = ids.slice(i, i + batchSize);
      await changePlans(bc, change, await planSizes(ds.manager, PLAN_TABLES, page, 'all'));
      for (const id of page) done.add(id);
    }
    if (dryRun) {
      tables.sessions = await countSession(ds.manager, sessionId);
      break;
    }
    const end = await inTransaction(ds, (m) => deleteSessionIfEmpty(m, sessionId), options.logger);
    if (end.left.length === 0) {
      tables.sessions = end.deleted;
      break;
    }
    if (round >= MAX_ROUNDS)
      throw new Error(
        `session ${sessionId}: plans still being written for it after ${MAX_ROUNDS} rounds of erasure (${end.left.length} left); stop its producers and erase it again`,
      );
    ids = await withForks(end.left);
  }

  let deadLetters: number | null = null;
  if (options.deadLetters) {
    const result = await options.deadLetters.purgeSession(sessionId, done, { dryRun });
    deadLetters = result.matched;
  }
  if (done.size === 0 && tables.sessions === 0 && !deadLetters)
    throw new NotFoundError('session', sessionId, ': no plan, session row or dead letter of it');
  const report: SessionErasureReport = {
    sessionId,
    dryRun,
    plans: done.size,
    tables,
    deadLetters,
    forks: { plans: forks.size, sessions: [...new Set(forks.values())].sort() },
    durationMs: Date.now() - started,
  };
  options.logger?.info(
    { sessionId, dryRun, plans: report.plans, deadLetters, durationMs: report.durationMs },
    dryRun ? 'session erasure dry run' : 'session erased',
  );
  return report;
}

/**
 * The forks and replays, at any depth, of these plans that are not plans of the session (rows
 * soft-deleted too): down `parent_plan_id` level by level through IX_execution_plans_parent, a
 * batch of ids per statement. A fork in the session is one of `own` already; a cycle ends there.
 */
async function forksElsewhere(
  m: EntityManager,
  sessionId: string,
  own: string[],
  perStatement: number,
): Promise<Array<{ planId: string; sessionId: string }>> {
  const seen = new Set(own);
  const found: Array<{ planId: string; sessionId: string }> = [];
  for (let level = own; level.length > 0;) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += perStatement) {
      const rows: Array<{ id: string; sessionId: string }> = await m
        .createQueryBuilder()
        .select('p.id', 'id')
        .addSelect('p.sessionId', 'sessionId')
        .from(ENTITY.plan, 'p')
        .withDeleted()
        .where(...idsIn(sqlDialectOf(m), 'p.parentPlanId', level.slice(i, i + perStatement)))
        .getRawMany();
      for (const r of rows) {
        if (seen.has(r.id)) continue;
        seen.add(r.id);
        next.push(r.id);
        if (r.sessionId !== sessionId) found.push({ planId: r.id, sessionId: r.sessionId });
      }
    }
    level = next;
  }
  return found.sort((a, b) => (a.planId < b.planId ? -1 : a.planId > b.planId ? 1 : 0));
}

/** Every plan id of the session: plan rows, and heads (orphans have no plan row), soft-deleted ones too. */
async function planIdsOf(m: EntityManager, sessionId: string): Promise<string[]> {
  const plans: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('p.id', 'id')
    .from(ENTITY.plan, 'p')
    .withDeleted()
    .where('p.sessionId = :sessionId', { sessionId })
    .getRawMany();
  const heads: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('h.planId', 'id')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .where('h.sessionId = :sessionId', { sessionId })
    .getRawMany();
  return lockOrder([...plans, ...heads].map((r) => r.id));
}

/**
 * The session's row goes only when no plan of it is left, checked under the row's lock: a worker
 * writing a plan of the session holds that lock from its upsert of the row until it commits (see
 * lockSessions), so its plan is seen here and erased in one more round instead of being taken by
 * the row's ON DELETE CASCADE, uncounted, its events and head left behind.
 */
async function deleteSessionIfEmpty(m: EntityManager, sessionId: string): Promise<{ left: string[]; deleted: number }> {
  const locked = await lockSessions(m, [sessionId]);
  const left = await planIdsOf(m, sessionId);
  if (left.length > 0) return { left, deleted: 0 };
  return { left, deleted: await deleteSessions(m, locked) };
}

async function deleteAll(m: EntityManager, ids: string[]): Promise<Partial<Record<PlanTable, number>>> {
  const counts: Partial<Record<PlanTable, number>> = {};
  for (const spec of PLAN_TABLES) counts[spec.table] = affected(await deleteRows(m, spec, ids).execute());
  return counts;
}

async function countAll(m: EntityManager, ids: string[]): Promise<Partial<Record<PlanTable, number>>> {
  const counts: Partial<Record<PlanTable, number>> = {};
  for (const spec of PLAN_TABLES) counts[spec.table] = await countRows(m, spec, ids, 'all');
  return counts;
}

async function countSession(m: EntityManager, sessionId: string): Promise<number> {
  const row = await m
    .createQueryBuilder()
    .select('COUNT(*)', 'n')
    .from(ENTITY.session, 's')
    .where('s.id = :sessionId', { sessionId })
    .getRawOne<{ n: unknown }>();
  return Number(row?.n ?? 0);
}

/** Report lines for people: one per table, then the totals. */
export function formatErasureReport(r: SessionErasureReport): string[] {
  const verb = r.dryRun ? 'would delete' : 'deleted';
  const lines = [`${'table'.padEnd(22)}${verb.padStart(14)}`];
  for (const [table, n] of Object.entries(r.tables)) lines.push(`${table.padEnd(22)}${String(n).padStart(14)}`);
  const dl =
    r.deadLetters === null
      ? 'dead letters not checked'
      : `${r.deadLetters} dead letter(s) ${r.dryRun ? 'would be removed' : 'removed'}`;
  const forks =
    r.forks.plans > 0
      ? `, ${r.forks.plans} of them fork(s) of its plans in other sessions (${r.forks.sessions.join(', ')})`
      : '';
  lines.push(
    `session ${r.sessionId}: ${r.plans} plan(s) ${verb}${forks}, ${dl}${r.dryRun ? '; dry run, nothing changed' : ''}`,
  );
  return lines;
}
