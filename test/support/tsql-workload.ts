import type { PlanEvent } from '../../src/contracts';
import { parseDatabaseUrl } from '../../src/config/database-url';
import * as queries from '../../src/queries';
import { awaitEventStatuses, eventStatuses } from '../../src/queries/event-status.query';
import { eraseSession } from '../../src/retention/session-erasure';
import { restorePlan } from '../../src/retention/plan-restore';
import { retentionPolicy } from '../../src/retention/retention-config';
import { runRetention } from '../../src/retention/retention.service';
import { assertCapabilities } from '../../src/store/capabilities';
import { assertSchema } from '../../src/store/data-source';
import { knownMigrations, migrationStatus } from '../../src/store/migration-status';
import { migrationSql, revertAllMigrations, runMigrations } from '../../src/store/migrator';
import { forkPlan } from '../../src/fork/fork-plan';
import { expireApprovals } from '../../src/stalled/approval-expiry';
import { countStalledPlans, markStalledPlans, watchUnwatchedPlans } from '../../src/stalled/stall-check';
import { approvalsSummary } from '../../src/console/console-approvals';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { APPROVAL_STATUSES, ApprovalLedger } from '../../src/store/approvals/approval-ledger';
import { countUndecidedApprovals, repairApprovals } from '../../src/store/approvals/approval-repair';
import { addPriceOverride, getPriceOverride, listPriceOverrides } from '../../src/store/price-overrides';
import { repriceSteps } from '../../src/store/price-reprice';
import { voidedSeqEvent } from '../../src/store/projection/voided-seq';
import { countRebuildPlans, rebuildRollups } from '../../src/store/rollups/rollup-rebuild';
import { sqlDialectOf } from '../../src/store/sql/dialects';
import { encodeTokenCursor } from '../../src/queries/token-pages';
import { manyPlanRuns, planRun, shuffled, stableUuid } from './event-factory';
import { createLogger } from '../../src/shared/logger';
import { DEFAULT_WEBHOOK_CONFIG } from '../../src/webhooks/webhook-config';
import { WebhookDeliveryLoop } from '../../src/webhooks/webhook-delivery';
import {
  addSubscription,
  listDeliveries,
  listSubscriptions,
  removeSubscription,
  replayDeliveries,
  setSubscriptionEnabled,
} from '../../src/webhooks/webhook-subscriptions';
import { MssqlTables, type Row } from './mssql-tables';
import { type Answer, paramValue, paramValues, type Recorded, recordingMssql } from './recording-mssql';

const TARGET = parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none');
const DAY = 86_400_000;

/** What one part of the workload sent, in order. */
export interface Section {
  name: string;
  statements: Recorded[];
  /** The functions it called, where it calls a list of them. */
  calls?: string[];
}

type Check = (what: string, ok: boolean) => void;

/** Recording DataSources for one section: what each records becomes the section's, in order. */
class SectionRecorder {
  private readonly parts: Recorded[][] = [];
  calls?: string[];

  async open(answer: Answer) {
    const recording = await recordingMssql(answer);
    this.parts.push(recording.statements);
    return recording.ds;
  }

  add(statements: Recorded[]): void {
    this.parts.push(statements);
  }

  get statements(): Recorded[] {
    return this.parts.flat();
  }
}

/**
 * Every kind of statement plan-ledger sends to SQL Server, recorded on DataSources that never
 * connect: the store's writes and reads under a realistic event stream (with the dead-letter
 * paths' SQL: a refused event's voided seq is persisted, a replay asks which events are stored),
 * the gap sweeper's, every read-side query,
 * retention (a dry run and a run in which every phase acts), session erasure, plan restore, price
 * overrides and a reprice, and
 * the migrations (their DDL as `migrate --print-sql` prints it, then a run and a revert with
 * TypeORM's own bookkeeping statements). `check` is told what each part did, so a workload that
 * stopped taking a path fails where it stopped; a part that throws is reported through `check`
 * too, and what it sent until then is kept.
 */
export async function recordWorkload(check: Check): Promise<Section[]> {
  const sections: Section[] = [];
  const run = async (name: string, body: (rec: SectionRecorder) => Promise<void>) => {
    const rec = new SectionRecorder();
    try {
      await body(rec);
    } catch (err) {
      check(`${name} ran to its end (it threw ${(err as Error).message})`, false);
    }
    sections.push({ name, statements: rec.statements, ...(rec.calls ? { calls: rec.calls } : {}) });
  };
  const tables = new MssqlTables();
  // a plan with an approval edit, handoffs and checkpoints, still executing: the reads' plan
  const edited = planRun({ seed: 21, steps: 3, requiresApproval: true, edit: true, finalize: false });
  await run('store', (rec) => recordStore(rec, tables, edited, check));
  await run('reads', (rec) => recordReads(rec, tables, edited[0], check));
  await run('retention', (rec) => recordRetention(rec, check));
  // the operator's writes: erasure, restore, and price overrides with a reprice
  await run('erasure, restore and prices', async (rec) => {
    await recordErasureAndRestore(rec, check);
    await recordPrices(rec, check);
  });
  await run('webhooks', (rec) => recordWebhooks(rec, check));
  await run('migrate', (rec) => recordMigrations(rec, check));
  return sections;
}

/** The store under a stream of events as the worker sees it, `edited` among them. */
async function recordStore(
  rec: SectionRecorder,
  tables: MssqlTables,
  edited: PlanEvent[],
  check: Check,
): Promise<void> {
  const ds = await rec.open(tables.answer);
  tables.bind(ds);
  // no row cache: every stored plan's rows are read back, as after a worker restart
  const store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0 });
  const totals = { inserted: 0, duplicates: 0, rebuilt: 0, gapWaits: 0, voided: 0, applied: 0 };
  const persist = async (events: PlanEvent[]) => {
    const o = await store.persist(events);
    for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += o[k];
    return o;
  };

  // many plans, their events out of order across batches: plans wait on gaps and resume from the log
  const stream = shuffled(manyPlanRuns(400, { seed: 11, steps: 5 }), 3);
  for (let i = 0; i < stream.length; i += 40) await persist(stream.slice(i, i + 40));
  check('the shuffled stream left plans waiting on gaps and applied them later', totals.gapWaits > 0);

  // an edit after the plan was stored replaces its steps
  await persist(edited.slice(0, 1));
  await persist(edited.slice(1));

  // a step started by another agent than the plan's, its agent's only step: that agent's plan row goes
  const moved = planRun({ seed: 26, steps: 2, agents: ['planner', 'coder'] });
  await persist(moved.slice(0, 1));
  await persist(
    moved
      .slice(1)
      .map((e) =>
        e.type === 'step.started' && e.payload.stepId === 's1'
          ? { ...e, payload: { ...e.payload, agentId: 'tester' } }
          : e,
      ),
  );
  check(
    "a step started by another agent moved its plan's plan_agents row: planner's went, tester's came",
    tables
      .rows('plan_agents')
      .filter((r) => r.plan_id === moved[0].planId)
      .map((r) => String(r.agent_id))
      .sort()
      .join() === 'coder,tester',
  );

  // redelivery of stored events, with a copy repeated in the batch
  const o = await persist([...stream.slice(0, 5), stream[0]]);
  check('a redelivered batch is all duplicates', o.duplicates === 6 && o.inserted === 0);

  // a copy that differs from the stored event, and an id stored for another plan: conflicts
  const changed = { ...stream[1], payload: { ...(stream[1].payload as object), feedback: 'changed' } };
  check('a changed copy of a stored event is refused', await refused(persist([changed as PlanEvent])));
  const other = planRun({ seed: 22, steps: 2 });
  const reused = { ...other[0], eventId: edited[0].eventId };
  check('an event id stored for another plan is refused', await refused(persist([reused])));

  // a gap skipped after the timeout, then its late event: the plan is rebuilt from its log
  const late = planRun({ seed: 23, steps: 3 });
  await persist(late.filter((e) => e.seq !== 4));
  check('one plan waits on its gap', (await store.waitingPlans()) === 1);
  const swept = await store.applyOverdueGaps(new Date(Date.now() + DAY));
  check('the overdue gap is skipped', swept.plans === 1);
  await persist(late.filter((e) => e.seq === 4));
  check('the late event rebuilt its plan', totals.rebuilt === 1);

  // approvals: a request decided in its own batch (read, then inserted decided), a request decided
  // by a later batch (read, then the decided row upserted), a decision of an approval not requested
  // yet (it decides nothing until its request is stored)
  const approvalEvent = (seq: number, type: string, payload: object) =>
    ({ ...late[0], eventId: stableUuid(`appr#${type}#${seq}`), planId: 'appr-1', seq, type, payload }) as PlanEvent;
  const asked = (approvalId: string) => ({
    approvalId,
    stepId: 's1',
    tool: 'send_mail',
    argsDigest: 'a'.repeat(64),
    expiresAt: new Date(Date.now() + DAY).toISOString(),
  });
  const decision = (approvalId: string) => ({ approvalId, decision: 'approve', decidedBy: 'alice' });
  const inOne = await persist([
    approvalEvent(0, 'plan.created', { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] }),
    approvalEvent(1, 'approval.requested', asked('ap-1')),
    approvalEvent(1, 'approval.decided', decision('ap-1')),
    approvalEvent(2, 'approval.requested', asked('ap-2')),
  ]);
  const later = await persist([approvalEvent(2, 'approval.decided', decision('ap-2'))]);
  const ghost = await persist([approvalEvent(3, 'approval.decided', decision('ap-never'))]);
  // the request of that decision arrives after it: the decision stored before decides it
  const early = await persist([approvalEvent(3, 'approval.requested', asked('ap-never'))]);
  check(
    "approvals: a batch's request and decision, a later batch's decision, a decision before its request",
    inOne.approvals.length === 3 &&
      later.approvals.length === 1 &&
      ghost.approvals.length === 0 &&
      early.approvals.map((c) => c.change).join() === 'requested,decided' &&
      tables.rows('approvals').filter((r) => r.decision === 'approve').length === 3,
  );
  // `approvals repair`: that row as a version before that decided it left it, pending with its
  // decision in the log; a dry run finds it, a run decides it (page by page, under the head locks)
  const left = tables.rows('approvals').find((r) => r.approval_id === 'ap-never')!;
  Object.assign(left, { decision: null, decided_by: null, feedback: null, edited_args_digest: null, decided_at: null });
  const undecided = await countUndecidedApprovals(ds.manager);
  const dryRun = await repairApprovals(ds, { dryRun: true, pageSize: 2 });
  const undecidedAfterDryRun = left.decision === null;
  const repaired = await repairApprovals(ds, { pageSize: 2 });
  check(
    'approvals repair: a dry run finds the pending approval its log decides, a run decides it, a second run nothing',
    undecided === 1 &&
      undecidedAfterDryRun &&
      dryRun.repaired.map((a) => a.approvalId).join() === 'ap-never' &&
      repaired.repaired.map((a) => a.approvalId).join() === 'ap-never' &&
      left.decision === 'approve' &&
      (await repairApprovals(ds)).repaired.length === 0,
  );

  // forks of a stored plan: a step each runs is looked up among its ancestors' rows (a fork's
  // parent's, then the grandparent's), and inserted as the fork's own row
  const forkEvent = (planId: string, seq: number, type: string, payload: object) =>
    ({ ...late[0], eventId: stableUuid(`${planId}#${seq}`), planId, seq, type, payload }) as PlanEvent;
  const forkOf = (planId: string, layer: number) => ({
    query: 'again',
    steps: [],
    forkOf: { planId, kind: 'fork', layer },
  });
  await persist([forkEvent('fork-1', 0, 'plan.created', forkOf(late[0].planId, 1))]);
  await persist([forkEvent('fork-1', 1, 'step.completed', { stepId: 's3', inputTokens: 1, outputTokens: 1 })]);
  await persist([forkEvent('fork-2', 0, 'plan.created', forkOf('fork-1', 0))]);
  await persist([forkEvent('fork-2', 1, 'step.completed', { stepId: 's1', inputTokens: 1, outputTokens: 1 })]);
  // `plans fork` itself: the parent's row, its DAG's layers, the new id's head, then the store
  const outcome = await forkPlan(
    ds,
    { parentPlanId: late[0].planId, kind: 'fork', from: { layer: 1 }, planId: 'fork-3' },
    store,
  );
  check(
    'plans fork created a fork of a stored plan',
    outcome.inheritedSteps === 2 && outcome.nextSteps.join() === 's3',
  );
  check(
    "forks got rows of the steps they ran, from their ancestors' definitions",
    ['fork-1:s3', 'fork-2:s1'].every((k) =>
      tables
        .rows('plan_steps')
        .some((r) => `${String(r.plan_id)}:${String(r.step_key)}` === k && r.status === 'completed'),
    ),
  );

  // voided seqs: one fills a gap; one past the plan's last event is dropped when its gap is skipped
  const voidedRun = planRun({ seed: 24, steps: 3 });
  const hole = voidedRun[3];
  await persist(voidedRun.filter((e) => e !== hole));
  const refusal = (seq: number) =>
    voidedSeqEvent(
      { planId: hole.planId, sessionId: hole.sessionId, seq, eventId: null },
      'invalid',
      'dl-1',
      new Date(),
    );
  await persist([refusal(hole.seq)]);
  await persist([refusal(voidedRun.length + 2)]);
  check('voided seqs were recorded', totals.voided === 2);
  const dropped = await store.applyOverdueGaps(new Date(Date.now() + DAY));
  check('the gap a voided seq opened is skipped', dropped.plans === 1 && (await store.waitingPlans()) === 0);

  // a plan whose plan.created comes last, behind more waiting events than one log page holds
  const long = planRun({ seed: 25, steps: 420 });
  await persist(long.slice(1));
  const applied = totals.applied;
  await persist(long.slice(0, 1));
  check('a plan behind a long wait applied from its log page by page', totals.applied - applied === long.length);

  check('an operator rebuild rebuilt both plans', (await store.rebuildPlans([late[0].planId, long[0].planId])) === 2);
  check(
    'stored event ids are found',
    (await store.storedEventIds(edited.map((e) => e.eventId))).size === edited.length,
  );
  check(
    `the in-memory tables model every statement the store sent: ${tables.unknown.join(' | ')}`,
    tables.unknown.length === 0,
  );
}

async function refused(p: Promise<unknown>): Promise<boolean> {
  return p.then(
    () => false,
    (err: Error) => /Conflict/.test(err.name),
  );
}

/**
 * Rows for any SELECT, made up from stored rows: each `"alias"."column" AS "name"` item takes the
 * column's value in the row `rowOf` gives for the alias's table, COUNT and SUM (also cast to text) are small numbers.
 * Enough for every read to go on to its next statement; `none` makes a statement find nothing.
 */
function madeUpRows(rowOf: (table: string) => Row | undefined, none: (sql: string) => boolean = () => false): Answer {
  return (sql) => {
    if (!/^SELECT /.test(sql) || none(sql)) return [];
    const aliases = new Map([...sql.matchAll(/(?:FROM|JOIN) "(\w+)" "(\w+)"/g)].map((m) => [m[2], m[1]]));
    const list = sql.slice('SELECT '.length, sql.indexOf(' FROM '));
    const row: Row = {};
    for (const [, expr, name] of list.matchAll(/((?:[^,(]|\([^()]*(?:\([^()]*\)[^()]*)*\))+?) AS "(\w+)"/g)) {
      const ref = expr.match(/"(\w+)"\."(\w+)"/);
      if (/^\s*(CAST\(|CONVERT\(varchar\(\d+\), )?(COUNT|SUM)\(/.test(expr)) row[name] = 2;
      else if (ref) row[name] = rowOf(aliases.get(ref[1]) ?? '')?.[ref[2]] ?? null;
      else row[name] = 1;
    }
    return [row];
  };
}

/**
 * Every read-side query (every async function `src/queries` exports, and the event statuses), on
 * rows the store wrote for `plan`'s plan.
 */
async function recordReads(rec: SectionRecorder, tables: MssqlTables, plan: PlanEvent, check: Check): Promise<void> {
  const { planId, sessionId, eventId } = plan;
  const rowOf = (table: string) => {
    const rows = tables.rows(table);
    return rows.find((row) => [row.id, row.plan_id, row.workflow_id].includes(planId)) ?? rows[0];
  };
  const on = (none?: (sql: string) => boolean) => rec.open(madeUpRows(rowOf, none));
  const ds = await on();
  // rows of the store's fork 'fork-1' (its plan row names its parent)
  const forkReads = () =>
    rec.open(
      madeUpRows((table) =>
        tables.rows(table).find((row) => [row.id, row.plan_id, row.workflow_id].includes('fork-1')),
      ),
    );
  const range = { from: new Date('2026-01-01T00:00:00Z'), to: new Date('2026-02-01T00:00:00Z') };
  // whole days (read from the rollups) and parts of days at both ends (read from the rows)
  const ranges = [{}, range, { from: new Date('2026-01-01T06:30:00Z'), to: new Date('2026-02-01T18:00:00Z') }];
  const reads: Record<string, () => Promise<unknown>> = {
    listPlans: async () => {
      await queries.listPlans(ds, { limit: 20 });
      const filters = { sessionId, statuses: ['completed', 'failed'] as const, created: range, agentId: 'coder' };
      await queries.listPlans(ds, { ...filters, statuses: [...filters.statuses], limit: 20, offset: 40 });
      const cursor = { createdAt: new Date('2026-01-15T00:00:00Z'), planId: 'plan-7' };
      await queries.listPlans(ds, { ...filters, statuses: [...filters.statuses], limit: 20, cursor });
      // plans list --status stalled
      await queries.listPlans(ds, { ...queries.planStatusFilter('stalled'), sessionId, limit: 20 });
    },
    getPlanView: async () => {
      const view = await queries.getPlanView(ds, planId);
      check(
        'the plan view compared an edit with the created steps',
        view.decisions.some((d) => d.stepChanges),
      );
      // a fork's view reads its ancestors' steps and checkpoints too
      const fork = await forkReads();
      check(
        'a fork shows its parent among its origin',
        (await queries.getPlanView(fork, 'fork-1')).plan.forkOf !== null,
      );
      await queries.getResumePoint(fork, 'fork-1');
      await queries.getStepOutput(fork, 'fork-1', 'not-its-own');
    },
    getActivePlan: async () =>
      check('the session has an active plan', (await queries.getActivePlan(ds, sessionId)).activePlan !== null),
    getPlanHistory: () => queries.getPlanHistory(ds, sessionId, 5),
    getResumePoint: async () => {
      check('an executing workflow resumes', (await queries.getResumePoint(ds, planId)).resumable);
      // a plan retention deleted: only the fact that it existed is read
      const deleted = await on((sql) => /FROM "execution_plans"/.test(sql) && /"deleted_at" IS NULL/.test(sql));
      check('a deleted plan does not resume', !(await queries.getResumePoint(deleted, planId)).resumable);
    },
    getNextSeq: () => queries.getNextSeq(ds, planId),
    getStepOutput: async () => {
      await queries.getStepOutput(ds, planId, 's1');
      // a step given by its index, after no step has that stepId
      await queries.getStepOutput(await on((sql) => /"step_key" = @/.test(sql)), planId, '0');
    },
    exportPlanTemplate: () => queries.exportPlanTemplate(ds, planId),
    getPlanLineage: async () =>
      check(
        'a plan with no parent is the root of its lineage',
        (await queries.getPlanLineage(ds, planId)).rootId === planId,
      ),
    plansPerDay: async () => {
      for (const range of ranges) await queries.plansPerDay(ds, range);
    },
    agentUsage: async () => {
      for (const range of ranges) await queries.agentUsage(ds, range);
    },
    plansPerDayScan: () => queries.plansPerDayScan(ds, range),
    agentUsageScan: () => queries.agentUsageScan(ds, range),
    tokenUsageScan: () => queries.tokenUsageScan(ds, range),
    handoffPatternsScan: () => queries.handoffPatternsScan(ds, range),
    costUsageScan: async () => {
      for (const by of queries.COST_DIMENSIONS) await queries.costUsageScan(ds, range, by);
    },
    handoffPatterns: async () => {
      for (const range of ranges) await queries.handoffPatterns(ds, range);
    },
    tokenUsage: async () => {
      for (const range of ranges) await queries.tokenUsage(ds, range);
      // the next page of each list: the plans after a position (their total, then the id)
      const cursor = encodeTokenCursor({ session: [10, sessionId], plan: [10, planId] });
      await queries.tokenUsage(ds, ranges[2], queries.TOKEN_DIMENSIONS, { limit: 5, cursor });
    },
    costUsage: async () => {
      for (const range of ranges) for (const by of queries.COST_DIMENSIONS) await queries.costUsage(ds, range, by);
    },
    reconcile: async () => {
      const bill = [{ day: '2026-11-01', model: 'gpt-4o-2024-08-06', cost: 1_000_000_000n }];
      for (const range of ranges) await queries.reconcile(ds, 'openai', bill, range);
    },
    reconcileReport: () =>
      queries.reconcileReport(ds, 'anthropic', [{ day: '2026-11-01', model: 'claude-sonnet-4', cost: 1n }], {}, 5),
    eventStatuses: async () =>
      check('an applied event is reported applied', (await eventStatuses(ds, [eventId])).applied.length === 1),
    awaitEventStatuses: () => awaitEventStatuses(ds, [eventId], 0),
  };
  rec.calls = Object.keys(reads);
  for (const read of Object.values(reads)) await read();
  await recordStallCheck(rec, check);
  await recordApprovals(rec);
  await recordConsoleApprovalsSummary(rec, check);
}

/** The approvals' reads: the inbox by each status, one approval, and the pending-by-age gauge's count. */
async function recordApprovals(rec: SectionRecorder): Promise<void> {
  const ledger = new ApprovalLedger(await rec.open(() => undefined));
  for (const status of APPROVAL_STATUSES) await ledger.list({ status, assignee: 'ops', olderThanMs: 60_000 }, NOW);
  await ledger.get('appr-1', NOW);
  await ledger.pendingByAge(NOW);
}

/** The console's approvals summary: the pending count, the count a filter matches, the change marker. */
async function recordConsoleApprovalsSummary(rec: SectionRecorder, check: Check): Promise<void> {
  const ds = await rec.open((sql) => {
    if (/^SELECT COUNT\(1\) AS "cnt" FROM "approvals" "a"/.test(sql)) return [{ cnt: 2 }];
    if (/^SELECT COUNT\(\*\) AS "total"/.test(sql)) return [{ total: 3, requested: NOW, decided: NOW, consumed: null }];
    return undefined;
  });
  const summary = await approvalsSummary(ds, { status: 'all', assignee: 'ops' }, NOW);
  check('the console summary counts pending approvals', summary.pending === 2 && summary.matching === 2);
}

/**
 * The stall check's tick: running plans without a due time given one, two due plans marked stalled
 * (their plan.stalled deliveries written), two expired approvals found (their approval.expired
 * deliveries written), and the stalled-plans gauge.
 */
async function recordStallCheck(rec: SectionRecorder, check: Check): Promise<void> {
  const due = new Date(NOW.getTime() - DAY);
  let stallDueAt: Date | null = null;
  const ds = await rec.open((sql) => {
    if (/^SELECT "h"\."plan_id" AS "planId"/.test(sql)) return [{ planId: 'plan-1' }, { planId: 'plan-2' }];
    if (/^SELECT .* FROM "plan_heads" "r"/.test(sql))
      return ['plan-1', 'plan-2'].map((id) => ({
        r_plan_id: id,
        r_session_id: 'sess-1',
        r_version: 2,
        r_updated_at: due,
        r_stall_due_at: stallDueAt,
        r_stall_check_at: stallDueAt,
        r_stalled_at: null,
        r_deleted_at: null,
      }));
    if (/^SELECT "a"\."approval_id" AS "approvalId"/.test(sql))
      return ['ap-1', 'ap-2'].map((approvalId) => ({ approvalId, planId: 'plan-1' }));
    if (/^SELECT .* FROM "approvals" "r"/.test(sql))
      return ['ap-1', 'ap-2'].map((id) => ({
        r_approval_id: id,
        r_plan_id: 'plan-1',
        r_session_id: 'sess-1',
        r_step_id: 'a',
        r_args_digest: 'd'.repeat(64),
        r_expires_at: due,
        r_requested_at: due,
        r_request_seq: 1,
        r_decision: null,
        r_consumed_at: null,
        r_expired_at: null,
      }));
    return undefined;
  });
  const subscriptions = async () => [{ id: 'sub-1', eventTypes: '*' }];
  check(
    'the stall check watched both running plans without a due time',
    (await watchUnwatchedPlans(ds, 60_000)).planIds.length === 2,
  );
  stallDueAt = due;
  check(
    'the stall check marked both due plans',
    (await markStalledPlans(ds, { now: NOW, subscriptions })).planIds.length === 2,
  );
  check(
    'the stall check found both approvals expired',
    (await expireApprovals(ds, { now: NOW, subscriptions })).approvalIds.length === 2,
  );
  await countStalledPlans(ds);
}

/**
 * `prices set|list|show|reprice`: an override stored and read back, and a reprice (a dry run, then
 * one applied) over one stored gpt-4o step priced by the table, which the override reprices.
 */
async function recordPrices(rec: SectionRecorder, check: Check): Promise<void> {
  const at = new Date('2030-01-02T00:00:00.000Z');
  const overrides: Row[] = [];
  const stepId = '00000000-0000-5000-8000-000000000001';
  const ds = await rec.open((sql) => {
    if (/^SELECT .* FROM "price_overrides"/.test(sql)) return overrides;
    // a reprice's keyset pages: one step, then nothing after it
    if (/^SELECT "s"\."plan_id" AS "planId", "s"\."id" AS "id" FROM "plan_steps" "s" INNER JOIN/.test(sql))
      return /"s"\."plan_id" > @/.test(sql) ? [] : [{ planId: 'plan-p', id: stepId }];
    if (/^SELECT .* FROM "plan_steps" "s" INNER JOIN "execution_plans" "p"/.test(sql)) {
      const step: Record<string, unknown> = {
        id: stepId,
        plan_id: 'plan-p',
        model: 'gpt-4o',
        provider: null,
        input_tokens: 1200,
        output_tokens: 300,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        reported_cost: null,
        cost: 0.006,
        cost_source: 'table',
        price_ref: 'genai-prices:openai/gpt-4o',
        completed_at: at,
      };
      return [Object.fromEntries(Object.entries(step).map(([k, v]) => [`s_${k}`, v]))];
    }
    // the totals of the page's plans, read again under their locks
    if (/^SELECT .* FROM "plan_steps" "s" WHERE "s"\."plan_id" IN/.test(sql))
      return [{ s_id: stepId, s_plan_id: 'plan-p', s_cost: 0.0048, s_cost_source: 'override' }];
    return undefined;
  });
  const row = await addPriceOverride(ds, {
    modelPattern: 'gpt-4o*',
    provider: null,
    effectiveFrom: new Date('2030-01-01T00:00:00.000Z'),
    inputPerMtok: '2',
    outputPerMtok: '8',
    cacheReadPerMtok: null,
    cacheWritePerMtok: null,
    currency: 'USD',
  });
  overrides.push({
    PriceOverride_id: row.id,
    PriceOverride_model_pattern: 'gpt-4o*',
    PriceOverride_provider: null,
    PriceOverride_effective_from: row.effectiveFrom,
    PriceOverride_input_per_mtok: 2,
    PriceOverride_output_per_mtok: 8,
    PriceOverride_cache_read_per_mtok: null,
    PriceOverride_cache_write_per_mtok: null,
    PriceOverride_currency: 'USD',
    PriceOverride_created_at: row.createdAt,
  });
  check('prices list reads the override back', (await listPriceOverrides(ds)).length === 1);
  await getPriceOverride(ds, row.id);
  const range = { from: new Date('2030-01-01T00:00:00.000Z'), to: new Date('2030-02-01T00:00:00.000Z') };
  const dry = await repriceSteps(ds, { ...range, model: 'gpt-4o', apply: false });
  check('a dry-run reprice finds the step the override changes', dry.changedSteps === 1);
  const applied = await repriceSteps(ds, { ...range, apply: true });
  check('an applied reprice writes its audit row', applied.applied && applied.auditId !== null);
}

const NOW = new Date('2030-06-01T00:00:00.000Z');
const PLANS = ['plan-a', 'plan-b', 'plan-c', 'plan-d'];

/**
 * What retention's reads find, so that every phase acts: a scan's first page is full (two plans
 * at a batch size of two), the page after it too, then nothing; a re-check under the head locks
 * (the ids as an IN list) finds every id it was given. Each DAG page has a workflow to stamp and
 * expire (no live fork keeps it) and one to purge; each heads page has orphans. UPDATE and DELETE
 * report one row.
 */
function retentionAnswer(plans: readonly string[] = PLANS): Answer {
  const pages = new Map<string, number>();
  const half = Math.ceil(plans.length / 2);
  const old = new Date(NOW.getTime() - 400 * DAY);
  return (sql, params) => {
    if (/^(UPDATE|DELETE) /.test(sql)) return [{}];
    if (!sql.startsWith('SELECT ')) return [];
    if (/AS "n"/.test(sql)) return [{ n: 3 }];
    // the session rows a purge or an erasure locks before it checks them: they exist
    if (/FROM "sessions" "s" WITH \(UPDLOCK, ROWLOCK\)/.test(sql)) return paramValues(params).map((id) => ({ id }));
    const given = paramValues(params).filter((v): v is string => plans.includes(v as string));
    // the DAG expiry's plans with a live fork: none, so every due DAG expires
    if (/^SELECT DISTINCT "f"\."parent_plan_id" AS "id" FROM "execution_plans" "f"/.test(sql)) return [];
    const recheck = / IN \((@|SELECT v FROM OPENJSON\(@)/.test(sql);
    const page = pages.get(sql) ?? 0;
    pages.set(sql, page + 1);
    if (!recheck && page > 0) return [];
    // a keyset page (after plan-b) finds the next two plans
    const ids = recheck ? given : given.length > 0 ? plans.slice(half) : plans.slice(0, half);
    if (/AS "dagDeletedAt"/.test(sql))
      return ids.map((id, i) => ({
        id,
        dagDeletedAt: i % 2 === 0 ? null : old,
        expiresAt: null,
        status: 'completed',
        completedAt: old,
        planDeletedAt: null,
      }));
    if (/AS "planRow"/.test(sql)) return ids.map((id) => ({ id, deletedAt: null, updatedAt: old, planRow: null }));
    return ids.map((id) => ({ id, endedAt: old, createdAt: old }));
  };
}

/** A dry run, then a run in which every phase acts. */
async function recordRetention(rec: SectionRecorder, check: Check): Promise<void> {
  const policy = retentionPolicy({ batchSize: 2, dagTtlMinutes: 60, orphanDays: 30 });
  const wouldDo = await runRetention(await rec.open(retentionAnswer()), policy, { now: NOW, dryRun: true });
  check('a dry run counts what it would do', wouldDo.plans.softDeleted > 0 && wouldDo.plans.purged > 0);
  const r = await runRetention(await rec.open(retentionAnswer()), policy, { now: NOW });
  const acted = {
    'plans soft-deleted': r.plans.softDeleted,
    'plans purged': r.plans.purged,
    'orphans soft-deleted': r.orphans.softDeleted,
    'orphans purged': r.orphans.purged,
    'DAGs stamped': r.dags.stamped,
    'DAGs expired': r.dags.expired,
    'DAGs purged': r.dags.purged,
    'sessions purged': r.sessions.purged,
  };
  for (const [what, n] of Object.entries(acted)) check(`retention: ${what}`, n > 0);
}

/**
 * The distinct statement texts of retention, a session's erasure and the reads that take lists
 * (event statuses, plans by status) when every list holds `n` values (2 to 7, so that every run
 * takes the same paths): retention's pages find `n` plans (fewer than its batch of 8, so each scan
 * reads one page; among them DAGs to expire and to purge), the erasure's `n` plans, the reads `n`
 * event ids and up to `n` statuses.
 */
export async function recordListsOf(n: number): Promise<string[]> {
  const plans = Array.from({ length: 2 * n }, (_, i) => `plan-${String.fromCharCode(97 + i)}`);
  const rec = new SectionRecorder();
  const policy = retentionPolicy({ batchSize: 8, dagTtlMinutes: 60, orphanDays: 30 });
  await runRetention(await rec.open(retentionAnswer(plans)), policy, { now: NOW });
  await eraseSession(await rec.open(retentionAnswer(plans)), 'sess-1', { batchSize: 8 });
  const reads = await rec.open(() => undefined);
  await eventStatuses(
    reads,
    plans.slice(0, n).map((p) => stableUuid(p)),
  );
  const statuses = (['planning', 'executing', 'completed', 'failed', 'cancelled'] as const).slice(0, Math.min(n, 5));
  await queries.listPlans(reads, { statuses: [...statuses], limit: 20 });
  return [...new Set(rec.statements.map((r) => r.sql))].sort();
}

/** Erasure of a session (dry run, then for real) and the restore of a soft-deleted plan. */
async function recordErasureAndRestore(rec: SectionRecorder, check: Check): Promise<void> {
  const dry = await rec.open(retentionAnswer());
  check('an erasure dry run finds plans', (await eraseSession(dry, 'sess-1', { dryRun: true })).plans > 0);
  const erased = await eraseSession(await rec.open(retentionAnswer()), 'sess-1', { batchSize: 2 });
  check('an erasure deletes its plans and the session row', erased.plans > 0 && erased.tables.sessions > 0);
  const deletedAt = new Date(NOW.getTime() - DAY);
  // plan-a is a fork of plan-b, soft-deleted too: restored with it
  const restore = await rec.open((sql, params) =>
    /^UPDATE /.test(sql)
      ? [{}]
      : /AS "parentId"/.test(sql)
        ? [{ parentId: paramValue(params[0]) === 'plan-a' ? 'plan-b' : null }]
        : /AS "deletedAt"/.test(sql)
          ? [{ deletedAt }]
          : [],
  );
  const outcome = await restorePlan(restore, 'plan-a', { graceDays: 7 }, { now: NOW });
  check(
    'a soft-deleted fork is restored with its soft-deleted parent',
    outcome.status === 'restored' && outcome.ancestors.length === 1,
  );
}

/**
 * The migrations table as TypeORM and the migrator read and write it, so that a run applies every
 * migration and a revert undoes them all, on one connection holding the migration lock.
 */
function migrationsAnswer(): Answer {
  const applied: Array<{ id: number; timestamp: number; name: string }> = [];
  let created = false;
  return (sql, params) => {
    const p = (i: number) => paramValue(params[i]);
    if (sql.includes('sp_getapplock')) return [{ ok: 0 }];
    if (/^SELECT SCHEMA_NAME\(\)/.test(sql)) return [{ schema_name: 'dbo' }];
    if (/^SELECT DB_NAME\(\)/.test(sql)) return [{ db_name: 'none' }];
    if (/FROM sys\.databases d/.test(sql)) return [CAPABLE_DATABASE];
    if (/INFORMATION_SCHEMA"\."TABLES"/.test(sql)) return created ? [{ TABLE_NAME: 'migrations' }] : [];
    if (/^CREATE TABLE .*"migrations"/.test(sql)) created = true;
    if (/^INSERT INTO .*"migrations"/.test(sql))
      applied.push({ id: applied.length + 1, timestamp: Number(p(0)), name: String(p(1)) });
    if (/^DELETE FROM .*"migrations"/.test(sql))
      applied.splice(
        applied.findIndex((m) => m.name === p(1)),
        1,
      );
    if (/^SELECT .* FROM .*"migrations"/.test(sql))
      return [...applied].reverse().map((m) => ({ ...m, ts: m.timestamp }));
    return [];
  };
}

/** The capability probe's row of a database plan-ledger can use: level 160, every permission. */
const CAPABLE_DATABASE = {
  compatibility_level: 160,
  containment: 'NONE',
  collation_name: 'SQL_Latin1_General_CP1_CI_AS',
  rcsi: true,
  can_create_table: 1,
  can_alter_schema: 1,
  table_name: null,
};

/** `migrate --print-sql`'s DDL, a `migrate` and a `migrate --revert-all`, the schema checks of a starting process. */
async function recordMigrations(rec: SectionRecorder, check: Check): Promise<void> {
  const printed = (await migrationSql(TARGET)).flatMap((m) => m.statements);
  check('migrate --print-sql prints DDL', printed.length > 50);
  rec.add(printed.map((sql) => ({ sql, params: [], runner: 0 })));
  const ds = await rec.open(migrationsAnswer());
  await assertCapabilities(ds, TARGET, 'migrate'); // what migrate asks first
  const { applied } = await runMigrations(ds);
  check('a migrate applies every migration', applied.length === knownMigrations().length);
  check('the schema is up to date after it', (await migrationStatus(ds)).pending.length === 0);
  await assertSchema(ds, TARGET, 'the worker');
  await assertCapabilities(ds, TARGET, 'worker');
  await ds.query('SELECT 1'); // the worker's database probe
  // `analytics rebuild-rollups --from --to`: the days' rows deleted and summed again
  const days = { from: '2026-01-01', to: '2026-02-01' };
  check('a rebuild of some days counts its plans', (await countRebuildPlans(ds.manager, days)) >= 0);
  await sqlDialectOf(ds).transaction(ds, (m) => rebuildRollups(m, days));
  const { reverted } = await revertAllMigrations(ds);
  check('a revert undoes every migration', reverted.length === applied.length);
}

/** Values the webhook section's reads answer with, by property (`Entity_property` aliases) or column. */
const WEBHOOK_ROW: Record<string, unknown> = {
  id: 'wh-000000000001',
  url: 'https://192.0.2.1/plan-ledger',
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  eventTypes: '*',
  event_types: '*',
  enabled: true,
  createdAt: new Date('2026-01-05T09:00:00Z'),
  subscriptionId: 'wh-000000000001',
  eventType: 'plan.finalized',
  eventId: '0190c0de-0000-7000-8000-000000000001',
  planId: 'plan-1',
  payload: '{}',
  status: 'pending',
  attempts: 0,
  nextAttemptAt: new Date('2026-01-05T09:00:00Z'),
  leaseOwner: null,
  leaseUntil: null,
  lastError: null,
  deliveredAt: null,
  n: 1,
  oldest: new Date('2026-01-05T09:00:00Z'),
};

/** A row for a SELECT on the webhook tables, or a claim's OUTPUT: each `AS "name"` item from WEBHOOK_ROW. */
const webhookAnswer = (sql: string): Row[] | undefined => {
  if (!/^(SELECT|WITH) /.test(sql) || !/"webhook_(subscriptions|deliveries)"/.test(sql)) return undefined;
  const row: Row = {};
  for (const [, name] of sql.matchAll(/ AS "(\w+)"/g)) {
    const key = name.includes('_') && !(name in WEBHOOK_ROW) ? name.slice(name.indexOf('_') + 1) : name;
    row[name] = WEBHOOK_ROW[key] ?? null;
  }
  return [row];
};

/**
 * Webhooks: a subscription added, listed, disabled and removed; events stored with their outbox
 * rows; a delivery round (claim, lease, the failure recorded: the URL does not resolve here);
 * the deliveries listed and replayed.
 */
async function recordWebhooks(rec: SectionRecorder, check: Check): Promise<void> {
  const tables = new MssqlTables();
  const ds = await rec.open((sql, params, runner) => webhookAnswer(sql) ?? tables.answer(sql, params, runner));
  tables.bind(ds);
  const sub = await addSubscription(ds, { url: 'https://192.0.2.1/plan-ledger', eventTypes: '*' });
  check('the subscriptions are read back', (await listSubscriptions(ds)).length === 1);
  const store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0, subscriptionsRefreshMs: 0 });
  const outcome = await store.persist(planRun({ seed: 31, steps: 2, failAt: 0 }));
  check('a finalized failed plan writes its outbox rows with its events', outcome.webhooks === 3);
  const loop = new WebhookDeliveryLoop(
    ds,
    { ...DEFAULT_WEBHOOK_CONFIG, timeoutMs: 100 },
    createLogger({ level: 'silent' }),
  );
  const round = await loop.round();
  check('a delivery round claims and records a failed attempt', round.claimed === 1 && round.failed === 1);
  await loop.pending();
  await listDeliveries(ds, { subscriptionId: sub.id, status: 'dead', limit: 50 });
  await replayDeliveries(ds, { subscriptionId: sub.id });
  await replayDeliveries(ds, { ids: [WEBHOOK_ROW.eventId as string] });
  await setSubscriptionEnabled(ds, sub.id, false);
  await removeSubscription(ds, sub.id);
}
