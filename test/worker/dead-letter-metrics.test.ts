/**
 * Operator metrics: the worker's /metrics shows the dead-letter queue's depth by
 * kind and the age of its oldest entry, read from Redis at scrape time.
 */
import type IORedis from 'ioredis';
import { loadConfig } from '../../src/config/config';
import { DeadLetterWriter } from '../../src/dead-letters/dead-letter-writer';
import { WorkerMetrics } from '../../src/worker/worker-metrics';
import { startWorker, WorkerHandle } from '../../src/worker';
import { letter } from '../dead-letters/dead-letter.fixtures';
import { createMigratedDb } from '../support/databases';
import { invalidEvent, planRun } from '../support/event-factory';
import {
  dropPrefix,
  openRedis,
  publish,
  readDeadLetters,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
} from './helpers/queue-harness';

/** The worker's clock runs an hour ahead of Redis's: the oldest dead letter is about an hour old. */
const AHEAD_MS = 3_600_000;

function value(metrics: string, series: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  if (line === undefined) throw new Error(`no ${series} in /metrics:\n${metrics}`);
  return Number(line.slice(series.length + 1));
}

describe("worker /metrics: dead letters by kind and the oldest one's age (sqlite, real Redis)", () => {
  let redis: IORedis;
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let prefix: string;
  let worker: WorkerHandle | undefined;
  let writer: DeadLetterWriter;

  beforeAll(async () => {
    redis = openRedis();
    db = await createMigratedDb('sqlite');
    prefix = uniquePrefix('dlmetrics');
    writer = new DeadLetterWriter(redis, prefix);
    worker = await startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: db.ds,
      logger: silentLogger(),
      metrics: new WorkerMetrics({ now: () => Date.now() + AHEAD_MS }),
      settings: { healthPort: 0, healthHost: '127.0.0.1', concurrency: 2 },
    });
  });

  afterAll(async () => {
    await worker?.close(5_000);
    await writer?.close();
    await dropPrefix(redis, prefix);
    await redis.quit();
    await db.close();
  });

  const scrape = async () => (await fetch(`http://127.0.0.1:${worker!.healthPort}/metrics`)).text();

  it('shows 0 for every kind and an age of 0 while the dead-letter queue is empty', async () => {
    const metrics = await scrape();
    expect(metrics).toContain('# TYPE plan_ledger_dead_letters gauge');
    for (const kind of ['invalid', 'retries-exhausted', 'unprocessable', 'conflict'])
      expect(value(metrics, `plan_ledger_dead_letters{kind="${kind}"}`)).toBe(0);
    expect(value(metrics, 'plan_ledger_dead_letter_oldest_age_seconds')).toBe(0);
  });

  it("counts the worker's own dead letters and those already queued, by kind, with the oldest one's age", async () => {
    // two left by an earlier outage, then a poison event the worker dead-letters itself
    await writer.write([letter({ kind: 'retries-exhausted' }), letter({ kind: 'retries-exhausted' })]);
    const valid = planRun({ seed: 14, steps: 2 });
    await publish(redis, prefix, [{ v: 1, events: [...valid, invalidEvent(14)] }], 'dlmetrics');
    expect(await worker!.idle(30_000)).toBe(true);
    expect(await readDeadLetters(redis, prefix)).toHaveLength(3);

    const metrics = await scrape();
    expect(value(metrics, 'plan_ledger_dead_letters{kind="invalid"}')).toBe(1);
    expect(value(metrics, 'plan_ledger_dead_letters{kind="retries-exhausted"}')).toBe(2);
    expect(value(metrics, 'plan_ledger_dead_letters{kind="unprocessable"}')).toBe(0);
    expect(value(metrics, 'plan_ledger_dead_letters{kind="conflict"}')).toBe(0);
    const age = value(metrics, 'plan_ledger_dead_letter_oldest_age_seconds');
    expect(age).toBeGreaterThanOrEqual(AHEAD_MS / 1000);
    expect(age).toBeLessThan(AHEAD_MS / 1000 + 600); // written during this test, not at some other time
    // the counter of the worker's own dead-lettering is still there, beside the gauges
    expect(metrics).toMatch(/^plan_ledger_events_dead_lettered_total\{kind="invalid",type="step.completed"\} 1$/m);
  });
});
