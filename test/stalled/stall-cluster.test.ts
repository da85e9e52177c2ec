import { randomUUID } from 'node:crypto';
import type IORedis from 'ioredis';
import { retentionPolicy, runRetention } from '../../src/retention';
import { markStalledPlans, StallCheckResult } from '../../src/stalled/stall-check';
import { startStallScheduler, StallScheduler } from '../../src/stalled/stall-scheduler';
import { ENTITY, ExecutionPlanRow, PlanHeadRow } from '../../src/store/entities';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { dropPrefix, openRedis, silentLogger, uniquePrefix, waitFor } from '../worker/helpers/queue-harness';
import { ev } from './support/stall-events';

const steps = [{ stepId: 'a', index: 0, agentId: 'coder', task: 'a' }];

describe('the stall check with two workers', () => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let redis: IORedis;
  let prefix: string;
  const schedulers: StallScheduler[] = [];

  beforeAll(async () => {
    db = await createMigratedDb('postgres');
    redis = openRedis();
    prefix = uniquePrefix('stallx2');
  });
  afterAll(async () => {
    for (const s of schedulers) await s.close();
    await dropPrefix(redis, prefix);
    await redis.quit();
    await db.close();
  });

  it('runs each tick once per cluster and marks a due plan once', async () => {
    const planId = `due-${randomUUID()}`;
    await new PlanEventStore(db.ds, undefined, { stallAfterMs: 1_000 }).persist([
      ev(planId, 0, 'plan.created', { query: 'q', steps }),
    ]);
    const checks: Array<{ worker: number; jobId: string | undefined; result: StallCheckResult }> = [];
    for (const worker of [0, 1]) {
      const connection = openRedis();
      const scheduler = await startStallScheduler({
        connection,
        prefix,
        dataSource: db.ds,
        everyMs: 200,
        logger: silentLogger(),
        onChecked: (result, jobId) => checks.push({ worker, jobId, result }),
      });
      schedulers.push({ ...scheduler, close: async () => (await scheduler.close(), void (await connection.quit())) });
    }
    await waitFor('ten ticks', async () => checks.length >= 10, 60_000, 50);
    const jobIds = checks.map((c) => c.jobId);
    expect(new Set(jobIds).size).toBe(jobIds.length);
    await waitFor(
      'the plan to be marked',
      async () => checks.some((c) => c.result.planIds.includes(planId)),
      30_000,
      50,
    );
    expect(checks.flatMap((c) => c.result.planIds).filter((id) => id === planId)).toHaveLength(1);
  });
});

describe.each(ALL_TEST_DBS)('retention and stalled plans on %s', (kind) => {
  it('never retires or purges a stalled plan as finished', async () => {
    const { ds, close } = await createMigratedDb(kind);
    try {
      const planId = `stalled-${randomUUID()}`;
      await new PlanEventStore(ds, undefined, { stallAfterMs: 1_000 }).persist([
        ev(planId, 0, 'plan.created', { query: 'q', steps }),
        ev(planId, 1, 'step.started', { stepId: 'a' }),
      ]);
      const later = new Date(Date.now() + 3_650 * 86_400_000);
      expect((await markStalledPlans(ds, { now: later })).planIds).toEqual([planId]);
      // ten years on, two runs (a retire, then a purge past the grace period): the plan stays
      await runRetention(ds, retentionPolicy(), { now: later });
      await runRetention(ds, retentionPolicy(), { now: new Date(later.getTime() + 3_650 * 86_400_000) });
      const h = (await ds.getRepository<PlanHeadRow>(ENTITY.head).findOneByOrFail({ planId })) as PlanHeadRow;
      expect({ deletedAt: h.deletedAt, stalled: h.stalledAt !== null }).toEqual({ deletedAt: null, stalled: true });
      const plan = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOneByOrFail({ id: planId });
      expect({ status: plan.status, deletedAt: plan.deletedAt }).toEqual({ status: 'executing', deletedAt: null });
    } finally {
      await close();
    }
  });
});
