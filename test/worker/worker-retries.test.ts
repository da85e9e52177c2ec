import type IORedis from 'ioredis';
import { Queue } from 'bullmq';
import type { PlanEvent } from '../../src/contracts';
import { loadConfig } from '../../src/config/config';
import { EVENTS_QUEUE } from '../../src/queue/queue-names';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { startWorker, WorkerConfig, WorkerHandle } from '../../src/worker';
import type { EventPersister } from '../../src/worker/batch-writer';
import { createMigratedDb, TestDb, withMssql } from '../support/databases';
import { planRun, toJobData } from '../support/event-factory';
import {
  countRows,
  dropPrefix,
  openRedis,
  publish,
  readDeadLetters,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
  waitFor,
} from './helpers/queue-harness';

const transient = (code: string) => Object.assign(new Error(`simulated ${code}`), { code });

describe.each<TestDb>(withMssql(['sqlite', 'postgres']))(
  'worker on %s: retries, ack after commit, refused events',
  (kind) => {
    let redis: IORedis;
    let db: Awaited<ReturnType<typeof createMigratedDb>>;
    let prefix: string;
    let worker: WorkerHandle | undefined;
    let queue: Queue;

    beforeAll(async () => {
      redis = openRedis();
      db = await createMigratedDb(kind);
    });
    beforeEach(() => {
      prefix = uniquePrefix('retry');
      queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
    });
    afterEach(async () => {
      await worker?.close();
      worker = undefined;
      await queue.close();
      await dropPrefix(redis, prefix);
      await db.ds.query('DELETE FROM plan_events');
    });
    afterAll(async () => {
      await redis.quit();
      await db.close();
    });

    const voidedSeqs = async (planId: string) =>
      (
        await db.ds.query(`SELECT seq, payload FROM plan_events WHERE plan_id = '${planId}' AND type = 'seq.voided'`)
      ).map((r: { seq: unknown; payload: unknown }) => ({
        seq: Number(r.seq),
        payload: typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload,
      }));
    const appliedSeq = async (planId: string) =>
      Number((await db.ds.query(`SELECT applied_seq FROM plan_heads WHERE plan_id = '${planId}'`))[0].applied_seq);

    const start = async (store: EventPersister, settings: Partial<WorkerConfig> = {}) => {
      worker = await startWorker({
        config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
        dataSource: db.ds,
        logger: silentLogger(),
        store,
        retryBackoff: { baseMs: 20, maxMs: 100 },
        settings: { healthPort: null, concurrency: 8, ...settings },
      });
      return worker;
    };

    it('retries a transient failure without spending attempts, and acknowledges the job only after its commit', async () => {
      const real = new PlanEventStore(db.ds);
      const statesSeen: string[] = [];
      const deliveries: number[] = [];
      let calls = 0;
      const store: EventPersister = {
        async persist(events) {
          calls++;
          statesSeen.push(await queue.getJobState('ack-0'));
          deliveries.push((await queue.getJob('ack-0'))!.attemptsStarted);
          if (calls <= 2) throw transient(calls === 1 ? 'ECONNRESET' : '40P01');
          const outcome = await real.persist(events);
          // Committed, and the job is still not acknowledged: the ack follows the commit.
          statesSeen.push(await queue.getJobState('ack-0'));
          return outcome;
        },
      };
      await start(store);
      const events = planRun({ seed: 21 });
      await publish(redis, prefix, [{ v: 1, events }], 'ack');
      expect(await worker!.idle(30_000)).toBe(true);
      expect(statesSeen).toEqual(['active', 'active', 'active', 'active']);
      expect(deliveries).toEqual([1, 1, 1]); // retried inside the job: no redelivery, no attempt spent
      const job = await queue.getJob('ack-0');
      expect(job).toBeUndefined(); // removeOnComplete: it completed
      expect(await countRows(db.ds, 'plan_events')).toBe(events.length);
      expect(await readDeadLetters(redis, prefix)).toEqual([]);
      const metrics = await worker!.metrics.text();
      expect(metrics).toMatch(/plan_ledger_write_retries_total\{code="ECONNRESET"\} 1/);
    });

    it('dead-letters as retries-exhausted, with provenance, when failures outlast the retry budget', async () => {
      const store: EventPersister = { persist: async () => Promise.reject(transient('40001')) };
      await start(store, { retryBudgetMs: 400 });
      const events = planRun({ seed: 22, steps: 2 });
      const [jobId] = await publish(redis, prefix, [{ v: 1, events }], 'exhaust');
      expect(await worker!.idle(30_000)).toBe(true);
      const letters = await readDeadLetters(redis, prefix);
      expect(letters).toHaveLength(events.length);
      expect(new Set(letters.map((l) => l.eventId))).toEqual(new Set(events.map((e) => e.eventId)));
      for (const letter of letters) {
        expect(letter).toMatchObject({
          kind: 'retries-exhausted',
          source: { queue: EVENTS_QUEUE, jobId },
          error: { code: '40001' },
        });
        expect(letter.attempts).toBeGreaterThan(1);
        expect(Date.parse(letter.lastFailedAt) - Date.parse(letter.firstFailedAt)).toBeGreaterThanOrEqual(400);
      }
      expect(await countRows(db.ds, 'plan_events')).toBe(0);
    });

    it('on close during retries, hands the job back to the queue (no dead letter, no failure) for the next worker', async () => {
      let calls = 0;
      const failing: EventPersister = { persist: async () => (calls++, Promise.reject(transient('ECONNRESET'))) };
      await start(failing);
      const events = planRun({ seed: 23 });
      await publish(redis, prefix, [{ v: 1, events }], 'handback');
      await waitFor('a few failed tries', () => calls >= 2, 10_000, 10);
      expect(await worker!.close(5_000)).toEqual({ clean: true, unfinishedJobs: 0 });
      worker = undefined;
      const job = await queue.getJob('handback-0');
      expect(await job!.getState()).toBe('delayed');
      expect(job!.data.failingSince).toEqual(expect.any(String)); // the budget keeps running across workers
      expect(await readDeadLetters(redis, prefix)).toEqual([]);

      await start(new PlanEventStore(db.ds));
      expect(await worker!.idle(30_000)).toBe(true);
      expect(await countRows(db.ds, 'plan_events')).toBe(events.length);
    });

    it('an event id already stored under another plan is dead-lettered as conflict, naming both plans; the rest commits', async () => {
      const stored = planRun({ seed: 40, steps: 2 });
      await new PlanEventStore(db.ds).persist(stored);
      const run = planRun({ seed: 41, steps: 2 });
      const reused = run.find((e) => e.type === 'step.completed')!;
      reused.eventId = stored[0].eventId;
      await publish(redis, prefix, toJobData(run, run.length), 'reuse');
      await start(new PlanEventStore(db.ds));
      expect(await worker!.idle(30_000)).toBe(true);
      // the run but the reused id, and the voided seq standing for it (the run's later events are applied)
      expect(await countRows(db.ds, 'plan_events')).toBe(stored.length + run.length);
      const letters = await readDeadLetters(redis, prefix);
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({
        kind: 'conflict',
        eventId: reused.eventId,
        planId: reused.planId,
        error: { code: 'EVENT_ID_CONFLICT' },
      });
      expect(await voidedSeqs(reused.planId)).toEqual([
        { seq: reused.seq, payload: { eventId: reused.eventId, kind: 'conflict', deadLetterId: letters[0].id } },
      ]);
      expect(await appliedSeq(reused.planId)).toBe(Math.max(...run.map((e) => e.seq)));
      expect(letters[0].error.message).toBe(
        `event ${reused.eventId} of plan ${reused.planId}: its id is already stored for an event of plan ${stored[0].planId} (${stored[0].type} seq ${stored[0].seq} of plan ${stored[0].planId}); event ids must be unique`,
      );
      expect(await worker!.metrics.text()).toMatch(/^plan_ledger_event_id_conflicts_total 1$/m);
    });

    it('the same event id with other content, across jobs or twice in one job, is dead-lettered as conflict naming the stored event', async () => {
      const run = planRun({ seed: 42, steps: 2 });
      const at = run.findIndex((e) => e.type === 'step.completed');
      const original = run[at] as Extract<PlanEvent, { type: 'step.completed' }>;
      const changed = {
        ...original,
        payload: { ...original.payload, outputTokens: original.payload.outputTokens + 1 },
      };
      // one job: the event and, later in the same job, its altered copy; then a second job with another altered copy
      await publish(redis, prefix, [{ v: 1, events: [...run, changed] }], 'twin-a');
      await start(new PlanEventStore(db.ds));
      expect(await worker!.idle(30_000)).toBe(true);
      await publish(
        redis,
        prefix,
        [{ v: 1, events: [{ ...changed, payload: { ...changed.payload, model: 'other' } }] }],
        'twin-b',
      );
      expect(await worker!.idle(30_000)).toBe(true);
      // one voided seq for the refused copies of the id (its seq is applied already: it changes nothing)
      expect(await countRows(db.ds, 'plan_events')).toBe(run.length + 1);
      const [row] = await db.ds.query(`SELECT payload FROM plan_events WHERE event_id = '${original.eventId}'`);
      expect(typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload).toMatchObject({
        outputTokens: original.payload.outputTokens,
      });
      const letters = await readDeadLetters(redis, prefix);
      expect(letters.map((l) => [l.kind, l.source.jobId]).sort()).toEqual([
        ['conflict', 'twin-a-0'],
        ['conflict', 'twin-b-0'],
      ]);
      for (const l of letters) {
        expect(l.eventId).toBe(original.eventId);
        expect(l.error.message).toContain(
          `differs from the event stored under the same id (step.completed seq ${original.seq} of plan ${original.planId})`,
        );
      }
      expect(await worker!.metrics.text()).toMatch(/^plan_ledger_event_id_conflicts_total 2$/m);
    });

    it('two copies of a stored event id in one job (lower- and upper-case), each with other content, become two conflict dead letters', async () => {
      const run = planRun({ seed: 43, steps: 2 });
      await new PlanEventStore(db.ds).persist(run);
      const original = run.find((e) => e.type === 'step.completed') as Extract<PlanEvent, { type: 'step.completed' }>;
      const lower = { ...original, payload: { ...original.payload, outputTokens: original.payload.outputTokens + 1 } };
      const upper = {
        ...original,
        eventId: original.eventId.toUpperCase(),
        payload: { ...original.payload, model: 'another-model' },
      };
      await publish(redis, prefix, [{ v: 1, events: [lower, upper] }], 'copies');
      await start(new PlanEventStore(db.ds));
      expect(await worker!.idle(30_000)).toBe(true);
      expect(await countRows(db.ds, 'plan_events')).toBe(run.length + 1);
      const letters = await readDeadLetters(redis, prefix);
      expect(letters.map((l) => l.kind)).toEqual(['conflict', 'conflict']);
      // each letter keeps its own copy, as sent
      expect(letters.map((l) => l.event).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(
        [lower, upper].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      );
      expect(await worker!.metrics.text()).toMatch(/^plan_ledger_event_id_conflicts_total 2$/m);
    });

    it('isolates a job the database refuses: other jobs of the batch commit, the refused event is dead-lettered as unprocessable', async () => {
      const real = new PlanEventStore(db.ds);
      const runs = [1, 2, 3, 4].map((n) => planRun({ seed: 30 + n, steps: 2 }));
      const poisoned = runs[2].find((e) => e.type === 'step.completed') as PlanEvent & { type: 'step.completed' };
      const refuse = (events: PlanEvent[]) => events.some((e) => e.eventId === poisoned.eventId);
      const store: EventPersister = {
        async persist(events) {
          // Stands in for a database refusing a valid event, the same way on every database.
          if (refuse(events)) throw Object.assign(new Error('value refused'), { code: '22021' });
          return real.persist(events);
        },
      };
      // Published before the worker starts so that one batch holds all four jobs.
      const ids = await publish(redis, prefix, toJobData(runs.flat(), runs[0].length), 'iso');
      await start(store, { batchWaitMs: 200 });
      expect(await worker!.idle(30_000)).toBe(true);
      const total = runs.flat().length;
      // every event but the refused one, whose seq is voided: its plan's later events are applied
      expect(await countRows(db.ds, 'plan_events')).toBe(total);
      const letters = await readDeadLetters(redis, prefix);
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({ kind: 'unprocessable', eventId: poisoned.eventId, source: { jobId: ids[2] } });
      expect(letters[0].error.code).toBe('22021');
      expect(await voidedSeqs(poisoned.planId)).toEqual([
        {
          seq: poisoned.seq,
          payload: { eventId: poisoned.eventId, kind: 'unprocessable', deadLetterId: letters[0].id },
        },
      ]);
      expect(await appliedSeq(poisoned.planId)).toBe(Math.max(...runs[2].map((e) => e.seq)));
      expect(worker!.stats()).toMatchObject({ inserted: total - 1, deadLettered: 1 });
    });
  },
);
