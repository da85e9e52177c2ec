import * as fc from 'fast-check';
import { DataSource } from 'typeorm';
import type { PlanEvent } from '../../src/contracts';
import { argsDigest } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { canonicalOrder } from '../../src/store/projection/event-order';
import { instantMs } from '../../src/store/sql/delivery-claims';
import { approvalRequested } from '../support/approval-fixtures';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';
import { arrivalArb, schedule } from './plan-events.arbitrary';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 50);
const BASE = Date.parse('2026-06-01T10:00:00Z');

/** One approval of a case: its decision (null: undecided) and feedback. */
interface ApprovalCase {
  decision: string | null;
  feedback?: string;
}

/** Per approval: whether it is decided, and how (one decision each, under the request's seq). */
const approvalsArb = fc.array(
  fc.record({
    decision: fc.constantFrom('approve', 'edit', 'reject', null),
    feedback: fc.option(fc.constantFrom('ok', 'only v2', 'no'), { nil: undefined }),
  }),
  { minLength: 1, maxLength: 4 },
);

const caseArb = approvalsArb.chain((approvals) => {
  const events = 1 + approvals.length + approvals.filter((a) => a.decision !== null).length;
  return fc.tuple(fc.constant(approvals), arrivalArb(events));
});

function eventsOf(planId: string, approvals: ApprovalCase[]): PlanEvent[] {
  const ev = (seq: number, type: string, payload: object, at: number): PlanEvent =>
    parsedEvent({ planId, sessionId: `sess_${planId}`, seq, type, payload, occurredAt: new Date(BASE + at) });
  const events = [
    ev(0, 'plan.created', { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] }, 0),
  ];
  approvals.forEach((a, i) => {
    const approvalId = `${planId}_ap${i}`;
    const seq = i + 1;
    events.push(ev(seq, 'approval.requested', approvalRequested(approvalId, { now: new Date(BASE) }), seq * 1000));
    if (a.decision === null) return;
    const edit = a.decision === 'edit' ? { editedArgsDigest: argsDigest({ edited: i }) } : {};
    const feedback = a.feedback === undefined ? {} : { feedback: a.feedback };
    const payload = { approvalId, decision: a.decision, decidedBy: 'alice', ...edit, ...feedback };
    events.push(ev(seq, 'approval.decided', payload, seq * 1000 + 500));
  });
  return events;
}

async function approvalsOf(ds: DataSource, planId: string): Promise<Array<Record<string, unknown>>> {
  const rows: Array<Record<string, unknown>> = await ds.query(
    `SELECT approval_id, plan_id, request_seq, decision, decided_by, feedback, edited_args_digest, decided_at
       FROM approvals WHERE plan_id = '${planId}' ORDER BY approval_id`,
  );
  return rows.map((r) => ({
    ...r,
    request_seq: Number(r.request_seq),
    decided_at: r.decided_at === null ? null : instantMs(r.decided_at),
  }));
}

/**
 * An approval's row does not depend on how its two events arrive: with one decision per request
 * carrying the request's seq, any order (a decision before its request included), any batching and
 * redeliveries store the rows one batch in canonical order stores.
 */
describe.each(ALL_TEST_DBS)('approvals in any arrival order on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;
  let run = 0;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind, { poolSize: 4 }));
    store = new PlanEventStore(ds);
  });
  afterAll(async () => close?.());

  it(`any arrival order, batching and redelivery decides each approval as canonical order does (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ([approvals, arrival]) => {
        const reference = `apo_${kind}_${run}_ref`;
        const planId = `apo_${kind}_${run++}`;
        await store.persist([...eventsOf(reference, approvals)].sort(canonicalOrder));
        const expected = (await approvalsOf(ds, reference)).map((r): Record<string, unknown> => ({
          ...r,
          approval_id: String(r.approval_id).replace(reference, planId),
          plan_id: planId,
        }));
        const decided = expected.filter((r) => r.decision !== null);
        expect(decided).toHaveLength(approvals.filter((a) => a.decision !== null).length);
        for (const r of decided) expect(Number.isFinite(r.decided_at)).toBe(true);

        for (const batch of schedule(eventsOf(planId, approvals), arrival)) await store.persist(batch);
        expect(await approvalsOf(ds, planId)).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
  }, 600_000);
});
