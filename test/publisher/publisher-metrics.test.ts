/**
 * Operator metrics: the publisher's own counters on a prom-client Registry the
 * executor owns (option `metricsRegistry`), read through that registry as a scrape would, across an
 * outage of a real redis-server of the test's own.
 */
import { Registry } from 'prom-client';
import { PlanEventPublisher, PublisherConfigError } from '../../src/publisher';
import { exactlyEvents } from '../support/event-factory';
import { newPublisher, queuedEvents, removeTempJournalDirs, yieldToLoop } from './support/publisher-harness';
import { RedisProcess } from './support/redis-process';

/** What a Prometheus scrape of the registry says, series name -> value. */
async function scrape(registry: Registry): Promise<Map<string, number>> {
  const values = new Map<string, number>();
  for (const line of (await registry.metrics()).split('\n')) {
    const m = /^(plan_ledger_publisher_\w+) (\S+)$/.exec(line);
    if (m) values.set(m[1], Number(m[2]));
  }
  return values;
}

describe('PlanEventPublisher metricsRegistry (own redis-server, stopped then started)', () => {
  let redis: RedisProcess;
  const publishers: PlanEventPublisher[] = [];

  beforeAll(async () => {
    redis = await RedisProcess.create();
  });
  afterEach(async () => {
    for (const p of publishers.splice(0)) await p.close(2_000);
    await redis.stop();
  });
  afterAll(async () => {
    await redis.destroy();
    removeTempJournalDirs();
  });

  it('counts spilled, dropped and rejected events and the journal bytes while Redis is down, then published and recovered once it is back', async () => {
    const registry = new Registry();
    // Redis not started: memory holds 500 events, the journal 256 KiB, the rest is dropped
    const { publisher, prefix } = newPublisher(redis.url, {
      maxBufferedEvents: 500,
      maxJournalBytes: 256 * 1024,
      metricsRegistry: registry,
    });
    publishers.push(publisher);
    const before = await scrape(registry);
    expect(before.get('plan_ledger_publisher_events_published_total')).toBe(0);
    expect(before.get('plan_ledger_publisher_journal_bytes')).toBe(0);

    let accepted = 0;
    for (const [i, event] of exactlyEvents(3_000, { seed: 71 }).entries()) {
      if (publisher.publish(event).ok) accepted++;
      if (i % 250 === 249) await yieldToLoop();
    }
    expect(publisher.publish({ type: 'step.completed' } as never).ok).toBe(false);
    expect(publisher.publish({ type: 'plan.created', planId: '' } as never).ok).toBe(false);

    const down = await scrape(registry);
    const stats = publisher.stats();
    expect(stats.dropped).toBeGreaterThan(0);
    expect(stats.spilled).toBeGreaterThan(0);
    expect(down.get('plan_ledger_publisher_events_dropped_total')).toBe(stats.dropped);
    expect(down.get('plan_ledger_publisher_events_dropped_total')).toBe(3_000 - accepted);
    expect(down.get('plan_ledger_publisher_events_spilled_total')).toBe(stats.spilled);
    expect(down.get('plan_ledger_publisher_events_rejected_total')).toBe(2);
    expect(down.get('plan_ledger_publisher_events_published_total')).toBe(0);
    expect(down.get('plan_ledger_publisher_events_buffered')).toBe(stats.buffered);
    expect(down.get('plan_ledger_publisher_journal_bytes')).toBeGreaterThan(0);
    expect(down.get('plan_ledger_publisher_journal_bytes')).toBeLessThanOrEqual(256 * 1024);
    expect(down.get('plan_ledger_publisher_redis_up')).toBe(0);

    await redis.start();
    expect(await publisher.flush(30_000)).toBe(true);
    const up = await scrape(registry);
    expect(up.get('plan_ledger_publisher_events_published_total')).toBe(accepted);
    expect(up.get('plan_ledger_publisher_events_recovered_total')).toBe(stats.spilled);
    expect(up.get('plan_ledger_publisher_journal_bytes')).toBe(0);
    expect(up.get('plan_ledger_publisher_events_buffered')).toBe(0);
    expect(up.get('plan_ledger_publisher_redis_up')).toBe(1);
    expect((await queuedEvents(redis.url, prefix)).events).toHaveLength(accepted);

    // close() takes the series off the registry: the executor can start a new publisher on it
    await publisher.close(5_000);
    expect(await scrape(registry)).toEqual(new Map());
    const next = newPublisher(redis.url, { metricsRegistry: registry }).publisher;
    publishers.push(next);
    expect((await scrape(registry)).get('plan_ledger_publisher_events_published_total')).toBe(0);
  });

  it('refuses a second live publisher on the same registry with one line saying why, and registers nothing globally', async () => {
    const registry = new Registry();
    const first = newPublisher(redis.url, { metricsRegistry: registry }).publisher;
    publishers.push(first);
    expect(() => newPublisher(redis.url, { metricsRegistry: registry })).toThrow(PublisherConfigError);
    expect(() => newPublisher(redis.url, { metricsRegistry: registry })).toThrow(
      /metricsRegistry already has plan_ledger_publisher_events_published_total.*registry of its own/,
    );
    const { register } = await import('prom-client');
    expect(register.getSingleMetric('plan_ledger_publisher_events_published_total')).toBeUndefined();
  });
});
