/**
 * `plan-ledger approvals repair`, as a process of its own, on stores an earlier version left
 * broken: an `approval.decided` stored before its `approval.requested`, the request's row inserted
 * pending (what versions before the worker decided such rows on insert did). The repair decides
 * those rows with the decision's values (the same columns as the worker deciding a request by a
 * decision stored before it), the first decision in the order stored; a dry run writes nothing; a
 * second run decides nothing; a decision under another seq or another plan, and an approval decided
 * the usual way, are left as they are. On SQLite, PostgreSQL and MariaDB (and SQL Server with
 * TEST_MSSQL_URL).
 */
import IORedis from 'ioredis';
import type { DataSource } from 'typeorm';
import { argsDigest, type PlanEvent, type PlanEventOf } from '../../src/contracts';
import { pushAll } from '../../src/shared/arrays';
import { requestRow } from '../../src/store/approvals/approval-apply';
import { ApprovalLedger } from '../../src/store/approvals/approval-ledger';
import { ENTITY, type ApprovalRow } from '../../src/store/entities';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { APPROVAL_DIGEST, approvalRequested } from '../support/approval-fixtures';
import { runCli } from '../support/cli';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';
import { REDIS_URL, uniquePrefix } from '../worker/helpers/queue-harness';

jest.setTimeout(300_000);

const PLAN = 'rp_plan';
const SESSION = 'rp_sess';
const HOUR = 3_600_000;
const EDITED = argsDigest({ to: 'ops@example.com', subject: 'Deploy 4.3?' });
/** Columns a decision writes. */
const DECISION_COLUMNS = ['decision', 'decidedBy', 'feedback', 'editedArgsDigest', 'decidedAt'] as const;

const ev = (planId: string, seq: number, type: string, payload: object, more: { eventId?: string; at?: Date } = {}) =>
  parsedEvent({
    planId,
    sessionId: SESSION,
    seq,
    type,
    payload,
    occurredAt: more.at ?? new Date(),
    eventId: more.eventId,
  });
const request = (approvalId: string, seq: number, expiresInMs = HOUR) =>
  ev(
    PLAN,
    seq,
    'approval.requested',
    approvalRequested(approvalId, { expiresInMs }),
  ) as PlanEventOf<'approval.requested'>;
const decision = (
  planId: string,
  seq: number,
  approvalId: string,
  fields: object,
  more: { eventId?: string; at?: Date } = {},
) => ev(planId, seq, 'approval.decided', { approvalId, ...fields }, more);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(ALL_TEST_DBS)('plan-ledger approvals repair on %s', (kind) => {
  let ds: DataSource;
  let url: string;
  let close: () => Promise<void>;
  const prefix = uniquePrefix('rp');
  const cli = (...args: string[]) =>
    runCli(['approvals', 'repair', ...args], { DATABASE_URL: url, REDIS_URL, QUEUE_PREFIX: prefix }, 120_000);

  const row = async (approvalId: string) =>
    (await ds.getRepository<ApprovalRow>(ENTITY.approval).findOneByOrFail({ approvalId })) as ApprovalRow;
  const allRows = async () => ds.getRepository<ApprovalRow>(ENTITY.approval).find({ order: { approvalId: 'ASC' } });
  const decidedColumns = (r: ApprovalRow) => ({
    decision: r.decision,
    decidedBy: r.decidedBy,
    feedback: r.feedback,
    editedArgsDigest: r.editedArgsDigest,
    decidedAt: r.decidedAt === null ? null : new Date(r.decidedAt).getTime(),
  });

  /** What an earlier version left: the decisions in the log, the request's row inserted undecided. */
  async function storedBroken(store: PlanEventStore, req: PlanEventOf<'approval.requested'>, decisions: PlanEvent[]) {
    for (const d of decisions) {
      expect((await store.persist([d])).approvals).toEqual([]); // it decides nothing: no request stored
      await pause(20); // distinct recorded_at
    }
    await ds.getRepository<ApprovalRow>(ENTITY.approval).insert(requestRow(req));
  }

  const early = new Date('2026-04-01T10:00:00.000Z');

  beforeAll(async () => {
    const made = await createMigratedDb(kind);
    ({ ds, close } = made);
    url = made.db.url;
    const store = new PlanEventStore(ds);
    await store.persist([
      ev(PLAN, 0, 'plan.created', { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] }),
    ]);
    const edit = { decision: 'edit', decidedBy: 'alice', feedback: 'shorter subject', editedArgsDigest: EDITED };
    // decided by a decision stored before its request
    await storedBroken(store, request('ap_early', 1), [decision(PLAN, 1, 'ap_early', edit, { at: early })]);
    // two decisions stored before the request: the first stored decides, though its event id sorts last
    await storedBroken(store, request('ap_first', 2), [
      decision(
        PLAN,
        2,
        'ap_first',
        { decision: 'reject', decidedBy: 'bob' },
        { eventId: 'ffffffff-0000-4000-8000-000000000002' },
      ),
      decision(
        PLAN,
        2,
        'ap_first',
        { decision: 'approve', decidedBy: 'carol' },
        { eventId: '00000000-0000-4000-8000-000000000002' },
      ),
    ]);
    // a decision under another seq than the request's decides nothing
    await storedBroken(store, request('ap_seq', 3), [
      decision(PLAN, 4, 'ap_seq', { decision: 'approve', decidedBy: 'dave' }),
    ]);
    // a decision of another plan under the request's seq decides nothing
    await storedBroken(store, request('ap_plan', 8), [
      decision('rp_other', 8, 'ap_plan', { decision: 'approve', decidedBy: 'erin' }),
    ]);
    // expired since: decided too, as the worker decides a request by an earlier decision whatever its expiry
    await storedBroken(store, request('ap_expired', 7, -HOUR), [
      decision(PLAN, 7, 'ap_expired', { decision: 'approve', decidedBy: 'frank' }),
    ]);
    // no decision at all
    await storedBroken(store, request('ap_plain', 6), []);
    // decided the usual way: request, then its decision
    await store.persist([request('ap_normal', 5)]);
    await store.persist([decision(PLAN, 5, 'ap_normal', { decision: 'approve', decidedBy: 'gina' })]);
    // what the worker does now with a decision that came first: the repair must write the same
    await store.persist([decision(PLAN, 9, 'ap_twin', edit, { at: early })]);
    expect((await store.persist([request('ap_twin', 9)])).approvals.map((c) => c.change)).toEqual([
      'requested',
      'decided',
    ]);
  });
  afterAll(async () => close?.());

  it('a dry run counts and lists what it would decide, and writes nothing', async () => {
    const before = await allRows();
    expect(before.filter((r) => r.decision === null).map((r) => r.approvalId)).toEqual([
      'ap_early',
      'ap_expired',
      'ap_first',
      'ap_plain',
      'ap_plan',
      'ap_seq',
    ]);
    const json = await cli('--dry-run', '--json');
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({ dryRun: true, scanned: 6, repaired: 3 });
    expect(report.approvals.map((a: { approvalId: string }) => a.approvalId)).toEqual([
      'ap_early',
      'ap_expired',
      'ap_first',
    ]);
    expect(report.approvals[0]).toEqual({
      approvalId: 'ap_early',
      planId: PLAN,
      decision: 'edit',
      decidedBy: 'alice',
      decisionEventId: expect.any(String),
      decidedAt: early.toISOString(),
    });
    expect(report.approvals[2]).toMatchObject({ decision: 'reject', decidedBy: 'bob' });

    const text = await cli('--dry-run', '--page-size', '2');
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^would decide approval ap_early of plan rp_plan: edit by alice \(event [0-9a-f-]{36}\)$/);
    expect(lines.slice(1, 3).map((l) => l.split(' ')[3])).toEqual(['ap_expired', 'ap_first']);
    expect(lines[3]).toBe(
      'dry run: 3 of 6 undecided approval(s) would be decided by a decision stored before their request; nothing written',
    );
    expect(await allRows()).toEqual(before);
  });

  it('decides them with the values of the first decision stored, as the worker would have; a second run decides nothing', async () => {
    const before = await allRows();
    const subscriber = new IORedis(REDIS_URL);
    const announced: string[] = [];
    try {
      subscriber.on('message', (_channel: string, message: string) => pushAll(announced, message.split(' ')));
      await subscriber.subscribe(`${prefix}:approvals:changed`);
      const run = await cli('--json', '--page-size', '2');
      expect(run.code).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report).toMatchObject({ dryRun: false, scanned: 6, repaired: 3 });
      expect(report.approvals.map((a: { approvalId: string }) => a.approvalId)).toEqual([
        'ap_early',
        'ap_expired',
        'ap_first',
      ]);
      // the waiters of GET /v1/approvals/{id}?waitMs= are woken as by the worker
      for (let i = 0; i < 50 && announced.length < 3; i++) await pause(100);
      expect(announced.sort()).toEqual(['ap_early', 'ap_expired', 'ap_first']);
    } finally {
      subscriber.disconnect();
    }

    // the decision's values, in the columns the worker writes: those of the twin the worker decided
    const repaired = await row('ap_early');
    expect(decidedColumns(repaired)).toEqual({
      decision: 'edit',
      decidedBy: 'alice',
      feedback: 'shorter subject',
      editedArgsDigest: EDITED,
      decidedAt: early.getTime(),
    });
    expect(decidedColumns(repaired)).toEqual(decidedColumns(await row('ap_twin')));
    expect(decidedColumns(await row('ap_first'))).toMatchObject({ decision: 'reject', decidedBy: 'bob' });
    expect(decidedColumns(await row('ap_expired'))).toMatchObject({ decision: 'approve', decidedBy: 'frank' });
    // nothing else of the rows changed
    const after = await allRows();
    const without = (r: ApprovalRow) => ({ ...r, ...Object.fromEntries(DECISION_COLUMNS.map((c) => [c, null])) });
    expect(after.map(without)).toEqual(before.map(without));
    // left alone: another seq, another plan, no decision, decided the usual way
    for (const id of ['ap_seq', 'ap_plan', 'ap_plain']) expect((await row(id)).decision).toBeNull();
    for (const id of ['ap_normal', 'ap_twin'])
      expect(after.find((r) => r.approvalId === id)).toEqual(before.find((r) => r.approvalId === id));
    // the ledger answers them as decided: a consume of the edited arguments passes
    const ledger = new ApprovalLedger(ds);
    expect((await ledger.get('ap_early'))?.status).toBe('decided');
    expect(await ledger.consume('ap_early', EDITED, 'executor')).toMatchObject({ ok: true });
    expect(await ledger.consume('ap_first', APPROVAL_DIGEST, 'executor')).toMatchObject({
      ok: false,
      reason: 'rejected',
    });

    const again = await cli();
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe(
      'repaired 0 of 3 undecided approval(s): decided by a decision stored before their request',
    );
    const againJson = JSON.parse((await cli('--json')).stdout);
    expect(againJson).toEqual({ dryRun: false, scanned: 3, repaired: 0, approvals: [] });
  });

  it('refuses a bad --page-size in one line, exit 2, nothing done', async () => {
    const before = await allRows();
    const bad = await cli('--page-size', '0');
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual([
      expect.stringContaining('--page-size: "0" must be a whole number from 1 to 1000'),
    ]);
    expect(await allRows()).toEqual(before);
  });
});
