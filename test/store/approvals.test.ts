import { DataSource } from 'typeorm';
import { argsDigest, type PlanEvent } from '../../src/contracts';
import { ApprovalLedger } from '../../src/store/approvals/approval-ledger';
import { openDataSource } from '../../src/store/data-source';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { approvalRequested } from '../support/approval-fixtures';
import { parsedEvent } from '../support/parsed-event';
import { ALL_TEST_DBS, createMigratedDb, ThrowawayDb } from '../support/databases';

const ARGS = { to: 'ops@example.com', subject: 'Deploy?' };
const DIGEST = argsDigest(ARGS);
const HOUR = 3_600_000;

const ev = (planId: string, seq: number, type: string, payload: object): PlanEvent =>
  parsedEvent({ planId, sessionId: 'sess_appr', seq, type, payload, occurredAt: new Date() });

const created = (planId: string) =>
  ev(planId, 0, 'plan.created', { query: 'mail ops', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] });
const requested = (planId: string, approvalId: string, expiresInMs = HOUR) =>
  ev(
    planId,
    1,
    'approval.requested',
    approvalRequested(approvalId, { argsDigest: DIGEST, expiresInMs, assignee: 'ops' }),
  );
const decided = (planId: string, approvalId: string, decision: 'approve' | 'reject' | 'edit', more: object = {}) =>
  ev(planId, 1, 'approval.decided', { approvalId, decision, decidedBy: 'alice', ...more });

describe.each(ALL_TEST_DBS)('approvals on %s', (kind) => {
  let db: ThrowawayDb;
  let ds: DataSource;
  let other: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;
  let ledger: ApprovalLedger;

  beforeAll(async () => {
    ({ db, ds, close } = await createMigratedDb(kind));
    other = await openDataSource(db.workerTarget); // a second server: its own connections
    store = new PlanEventStore(ds);
    ledger = new ApprovalLedger(ds);
  });
  afterAll(async () => {
    await other?.destroy();
    await close?.();
  });

  it('stores a request and its first decision; a redelivery and a second decision change nothing', async () => {
    await store.persist([created('p_ref')]);
    const request = requested('p_basic', 'ap_basic');
    const outcome = await store.persist([created('p_basic'), request]);
    expect(outcome.approvals).toEqual([{ change: 'requested', approvalId: 'ap_basic', planId: 'p_basic' }]);
    expect((await store.persist([request])).approvals).toEqual([]);
    expect((await ledger.get('ap_basic'))?.status).toBe('pending');
    const first = await store.persist([decided('p_basic', 'ap_basic', 'approve')]);
    expect(first.approvals).toEqual([
      { change: 'decided', approvalId: 'ap_basic', planId: 'p_basic', decision: 'approve' },
    ]);
    expect((await store.persist([decided('p_basic', 'ap_basic', 'reject')])).approvals).toEqual([]);
    expect(await ledger.get('ap_basic')).toMatchObject({ status: 'decided', decision: 'approve', decidedBy: 'alice' });
    // the plan's rows are unchanged by approvals
    const plans = await ds.query(
      `SELECT id, status, total_steps FROM execution_plans WHERE id IN ('p_basic', 'p_ref')`,
    );
    expect(
      new Set(plans.map((p: { status: string; total_steps: unknown }) => `${p.status} ${Number(p.total_steps)}`)).size,
    ).toBe(1);
  });

  it("applies a batch's requests and decisions against the rows stored before and the ones it inserts", async () => {
    const first = await store.persist([
      created('p_mix'),
      created('p_mix_other'),
      requested('p_mix', 'ap_mix_prev'),
      requested('p_mix_other', 'ap_mix_taken'),
    ]);
    expect(first.approvals.map((c) => `${c.change} ${c.approvalId}`)).toEqual([
      'requested ap_mix_prev',
      'requested ap_mix_taken',
    ]);
    const dupFirst = ev('p_mix', 1, 'approval.requested', approvalRequested('ap_mix_dup', { assignee: 'first' }));
    const dupSecond = ev('p_mix', 1, 'approval.requested', approvalRequested('ap_mix_dup', { assignee: 'second' }));
    const edited = argsDigest({ ...ARGS, subject: 'Deploy v3?' });
    const outcome = await store.persist([
      requested('p_mix', 'ap_mix_prev'), // stored by the first batch: a redelivery
      decided('p_mix', 'ap_mix_prev', 'approve'),
      requested('p_mix', 'ap_mix_new'),
      decided('p_mix', 'ap_mix_new', 'reject'),
      decided('p_mix', 'ap_mix_new', 'approve'), // a second decision: nothing
      requested('p_mix', 'ap_mix_taken'), // the id another plan holds: nothing
      decided('p_mix', 'ap_mix_taken', 'approve'), // not this plan's approval: nothing
      decided('p_mix_other', 'ap_mix_taken', 'edit', { editedArgsDigest: edited }),
      dupFirst,
      dupSecond,
    ]);
    expect(outcome.approvals).toEqual([
      { change: 'requested', approvalId: 'ap_mix_new', planId: 'p_mix' },
      { change: 'requested', approvalId: 'ap_mix_dup', planId: 'p_mix' },
      { change: 'decided', approvalId: 'ap_mix_prev', planId: 'p_mix', decision: 'approve' },
      { change: 'decided', approvalId: 'ap_mix_new', planId: 'p_mix', decision: 'reject' },
      { change: 'decided', approvalId: 'ap_mix_taken', planId: 'p_mix_other', decision: 'edit' },
    ]);
    expect(await ledger.get('ap_mix_prev')).toMatchObject({ planId: 'p_mix', status: 'decided', decision: 'approve' });
    expect(await ledger.get('ap_mix_new')).toMatchObject({ planId: 'p_mix', status: 'decided', decision: 'reject' });
    expect(await ledger.get('ap_mix_taken')).toMatchObject({
      planId: 'p_mix_other',
      decision: 'edit',
      editedArgsDigest: edited,
    });
    expect(await ledger.get('ap_mix_dup')).toMatchObject({ status: 'pending', assignee: 'first' });
    // a later batch's decision, beside a redelivered request, decides the stored row; one after it, nothing
    expect((await store.persist([decided('p_mix', 'ap_mix_dup', 'approve'), dupFirst])).approvals).toEqual([
      { change: 'decided', approvalId: 'ap_mix_dup', planId: 'p_mix', decision: 'approve' },
    ]);
    expect((await store.persist([dupFirst, decided('p_mix', 'ap_mix_dup', 'reject')])).approvals).toEqual([]);
  });

  it('decides a request by a decision stored before it (it arrived first) once the request is stored', async () => {
    await store.persist([created('p_early')]);
    const edited = argsDigest({ ...ARGS, subject: 'Deploy v4?' });
    const early = decided('p_early', 'ap_early', 'edit', { editedArgsDigest: edited, feedback: 'v4 only' });
    // nothing to decide yet: stored in the log, no row
    expect((await store.persist([early])).approvals).toEqual([]);
    expect(await ledger.consume('ap_early', edited, 'x')).toEqual({ ok: false, reason: 'not_found' });
    // the request arrives with a later decision of its own and the early one redelivered: the early one decides
    const outcome = await store.persist([
      requested('p_early', 'ap_early'),
      decided('p_early', 'ap_early', 'reject'),
      early,
    ]);
    expect(outcome.approvals).toEqual([
      { change: 'requested', approvalId: 'ap_early', planId: 'p_early' },
      { change: 'decided', approvalId: 'ap_early', planId: 'p_early', decision: 'edit' },
    ]);
    expect(await ledger.get('ap_early')).toMatchObject({
      status: 'decided',
      decision: 'edit',
      decidedBy: 'alice',
      feedback: 'v4 only',
      editedArgsDigest: edited,
    });
    expect((await store.persist([early])).approvals).toEqual([]);
    expect(await ledger.consume('ap_early', edited, 'exec')).toMatchObject({ ok: true });

    // another plan's decision of the same id, and one under another seq than the request's, decide nothing
    await store.persist([created('p_early_b')]);
    await store.persist([
      decided('p_early', 'ap_early_b', 'approve'),
      ev('p_early_b', 0, 'approval.decided', { approvalId: 'ap_early_b', decision: 'approve', decidedBy: 'bob' }),
    ]);
    expect((await store.persist([requested('p_early_b', 'ap_early_b')])).approvals).toEqual([
      { change: 'requested', approvalId: 'ap_early_b', planId: 'p_early_b' },
    ]);
    expect((await ledger.get('ap_early_b'))?.status).toBe('pending');
  });

  it('answers a consume once; then already_consumed', async () => {
    await store.persist([created('p_once'), requested('p_once', 'ap_once'), decided('p_once', 'ap_once', 'approve')]);
    const ok = await ledger.consume('ap_once', DIGEST, 'executor-1');
    expect(ok).toMatchObject({
      ok: true,
      approval: { decision: 'approve', status: 'consumed', consumedBy: 'executor-1' },
    });
    expect(await ledger.consume('ap_once', DIGEST, 'executor-1')).toMatchObject({
      ok: false,
      reason: 'already_consumed',
    });
  });

  it('gives one of two racing consumes (two servers) the decision, the other already_consumed', async () => {
    for (let i = 0; i < 5; i++) {
      const id = `ap_race_${i}`;
      await store.persist([
        created(`p_race_${i}`),
        requested(`p_race_${i}`, id),
        decided(`p_race_${i}`, id, 'approve'),
      ]);
      const answers = await Promise.all([
        ledger.consume(id, DIGEST, 'a'),
        new ApprovalLedger(other).consume(id, DIGEST, 'b'),
      ]);
      expect(answers.map((a) => (a.ok ? 'ok' : a.reason)).sort()).toEqual(['already_consumed', 'ok']);
    }
  });

  it('refuses undecided, args_mismatch, rejected, expired and never-requested approvals', async () => {
    await store.persist([created('p_no'), requested('p_no', 'ap_undecided')]);
    expect(await ledger.consume('ap_undecided', DIGEST, 'x')).toMatchObject({ ok: false, reason: 'undecided' });

    await store.persist([requested('p_no', 'ap_args'), decided('p_no', 'ap_args', 'approve')]);
    expect(await ledger.consume('ap_args', argsDigest({ ...ARGS, to: 'all@example.com' }), 'x')).toMatchObject({
      ok: false,
      reason: 'args_mismatch',
    });
    expect((await ledger.consume('ap_args', DIGEST, 'x')).ok).toBe(true); // the refusal consumed nothing

    await store.persist([requested('p_no', 'ap_rejected'), decided('p_no', 'ap_rejected', 'reject')]);
    expect(await ledger.consume('ap_rejected', DIGEST, 'x')).toMatchObject({ ok: false, reason: 'rejected' });

    await store.persist([requested('p_no', 'ap_expired', 50), decided('p_no', 'ap_expired', 'approve')]);
    await new Promise((r) => setTimeout(r, 100));
    expect(await ledger.consume('ap_expired', DIGEST, 'x')).toMatchObject({ ok: false, reason: 'expired' });

    // a decision of an approval never requested decides nothing
    expect((await store.persist([decided('p_no', 'ap_ghost', 'approve')])).approvals).toEqual([]);
    expect(await ledger.consume('ap_ghost', DIGEST, 'x')).toEqual({ ok: false, reason: 'not_found' });
  });

  it('consumes an edit with the edited arguments’ digest only', async () => {
    const edited = argsDigest({ ...ARGS, subject: 'Deploy v2?' });
    await store.persist([
      created('p_edit'),
      requested('p_edit', 'ap_edit'),
      decided('p_edit', 'ap_edit', 'edit', { editedArgsDigest: edited }),
    ]);
    expect(await ledger.consume('ap_edit', DIGEST, 'x')).toMatchObject({ ok: false, reason: 'args_mismatch' });
    expect(await ledger.consume('ap_edit', edited, 'x')).toMatchObject({ ok: true, approval: { decision: 'edit' } });
  });

  it('counts pending approvals by age bucket (plan_ledger_approvals_pending): decided and expired ones not', async () => {
    const now = new Date();
    const before = await ledger.pendingByAge(now);
    expect([...before.keys()]).toEqual(['<1m', '1m-10m', '10m-1h', '1h-1d', '>1d']);
    const at = (agoMs: number, seq: number, type: string, payload: object) =>
      parsedEvent({
        planId: 'p_ages',
        sessionId: 'sess_appr',
        seq,
        type,
        payload,
        occurredAt: new Date(now.getTime() - agoMs),
      });
    const request = (id: string, agoMs: number, expiresInMs = HOUR) =>
      at(agoMs, 1, 'approval.requested', approvalRequested(id, { argsDigest: DIGEST, expiresInMs, now }));
    await store.persist([
      created('p_ages'),
      request('ap_age_30s', 30_000),
      request('ap_age_5m', 5 * 60_000),
      request('ap_age_2h', 2 * HOUR),
      request('ap_age_3d_a', 72 * HOUR),
      request('ap_age_3d_b', 72 * HOUR),
      request('ap_age_decided', 20 * 60_000),
      request('ap_age_expired', 20 * 60_000, -1_000),
      at(0, 1, 'approval.decided', { approvalId: 'ap_age_decided', decision: 'approve', decidedBy: 'alice' }),
    ]);
    const after = await ledger.pendingByAge(now);
    const added = Object.fromEntries([...after].map(([age, n]) => [age, n - (before.get(age) ?? 0)]));
    expect(added).toEqual({ '<1m': 1, '1m-10m': 1, '10m-1h': 0, '1h-1d': 1, '>1d': 2 });
  });
});
