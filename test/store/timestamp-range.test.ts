import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { run } from '../../src/cli/main';
import { toIso } from '../../src/queries/row-normalize';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb, TestDb } from '../support/databases';
import { PlanScript } from '../support/read-dataset';

/**
 * Issue 13 item 12: the contract admits only timestamps every database stores alike. Events at
 * both edges of that range are stored on SQLite, PostgreSQL and MariaDB and read back equal; one
 * millisecond before it is refused by the contract (before, year 0000 passed, PostgreSQL refused
 * it and the event was dead-lettered there, while SQLite stored it).
 */
const EARLIEST = '1000-01-01T00:00:00.000Z';
const LATEST = '9999-12-31T23:59:59.999Z';

function valid(events: PlanScript['events']): PlanEvent[] {
  return events.map((e) => {
    const r = parsePlanEvent(e);
    if (!r.ok) throw new Error(r.error.message);
    return r.event;
  });
}

function edgeEvents(): PlanEvent[] {
  const steps = [{ stepId: 'only', index: 0, agentId: 'clock', task: 'tick' }];
  // the first plan starts at the earliest instant, the second ends at the latest one
  const early = new PlanScript('plan-early', 'sess-edges', EARLIEST)
    .created({ query: 'earliest', steps })
    .ran('only', [1, 2], { outputContent: 'x' })
    .finalized({ status: 'completed' });
  const late = new PlanScript('plan-late', 'sess-edges', '9999-12-31T23:58:00.000Z')
    .created({ query: 'latest', steps })
    .ran('only', [3, 4]);
  const events = [...early.events, ...late.events];
  events.push({
    ...late.events[0],
    eventId: '6e0ba5f2-3f8e-4b6e-9a59-2d7f1f6c0a01',
    type: 'plan.finalized',
    seq: late.events.length,
    occurredAt: LATEST,
    payload: { status: 'completed' },
  } as never);
  return valid(events);
}

async function cli(url: string, ...args: string[]): Promise<unknown> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(['node', 'plan-ledger', ...args, '--json'], {
    env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  });
  if (code !== 0) throw new Error(`plan-ledger ${args.join(' ')} exited ${code}: ${err.join('\n')}`);
  return JSON.parse(out.join('\n'));
}

describe('timestamps at the edges of the contract range: stored and read back alike', () => {
  const seen = new Map<TestDb, unknown>();
  const events = edgeEvents();

  it.each(ALL_TEST_DBS)('on %s', async (kind) => {
    const { db, ds, close } = await createMigratedDb(kind, { poolSize: 2 });
    try {
      await new PlanEventStore(ds).persist(events);
      const rows: { event_id: string; occurred_at: unknown }[] = await ds.query(
        'SELECT event_id, occurred_at FROM plan_events',
      );
      const stored = new Map(rows.map((r) => [r.event_id, toIso(r.occurred_at)]));
      expect(stored).toEqual(new Map(events.map((e) => [e.eventId, e.occurredAt])));
      const [plan] = await ds.query(`SELECT created_at, completed_at FROM execution_plans WHERE id = 'plan-early'`);
      expect(toIso(plan.created_at)).toBe(EARLIEST);
      const [late] = await ds.query(`SELECT completed_at FROM execution_plans WHERE id = 'plan-late'`);
      expect(toIso(late.completed_at)).toBe(LATEST);
      await ds.destroy();

      const early = (await cli(db.url, 'plans', 'show', 'plan-early')) as { plan: { createdAt: string } };
      expect(early.plan.createdAt).toBe(EARLIEST);
      const daily = await cli(db.url, 'analytics', 'daily');
      expect(daily).toMatchObject({
        days: [
          { day: '9999-12-31', totalPlans: 1 },
          { day: '1000-01-01', totalPlans: 1 },
        ],
      });
      seen.set(kind, { early, late: await cli(db.url, 'plans', 'show', 'plan-late'), daily });
    } finally {
      await close();
    }
  });

  it('gives the same answers on every database', () => {
    expect(seen.size).toBe(ALL_TEST_DBS.length);
    for (const kind of ALL_TEST_DBS) expect(seen.get(kind)).toEqual(seen.get('sqlite'));
  });

  it.each(['0999-12-31T23:59:59.999Z', '0000-01-01T00:00:00Z'])(
    'refuses occurredAt %s, naming the field and the range',
    (occurredAt) => {
      const result = parsePlanEvent({ ...events[0], occurredAt });
      expect(!result.ok && result.error.violations).toEqual([
        {
          path: 'occurredAt',
          message:
            'occurredAt must be between 1000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z, the range every supported database stores alike',
        },
      ]);
    },
  );
});
