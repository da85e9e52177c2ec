import { Counter, Gauge, type Registry } from 'prom-client';
import { PublisherConfigError } from './publisher-options';
import type { PublisherStats } from './publisher.types';

type Series = { name: string; help: string; kind: 'counter' | 'gauge'; read: (s: PublisherStats) => number };

/** The publisher's own series; read from `stats()` at scrape time, so publish() pays nothing for them. */
export const PUBLISHER_SERIES: readonly Series[] = [
  {
    name: 'plan_ledger_publisher_events_published_total',
    kind: 'counter',
    help: 'Events Redis confirmed (from memory and from the spill journal)',
    read: (s) => s.published,
  },
  {
    name: 'plan_ledger_publisher_events_recovered_total',
    kind: 'counter',
    help: 'Of the published events, those drained from the spill journal (including any a previous process left)',
    read: (s) => s.recovered,
  },
  {
    name: 'plan_ledger_publisher_events_spilled_total',
    kind: 'counter',
    help: 'Events written to the spill journal on disk (Redis down or slow, memory full)',
    read: (s) => s.spilled,
  },
  {
    name: 'plan_ledger_publisher_events_dropped_total',
    kind: 'counter',
    help: 'Valid events lost: spill journal full, or a journal write/read failed (each one logged)',
    read: (s) => s.dropped,
  },
  {
    name: 'plan_ledger_publisher_events_rejected_total',
    kind: 'counter',
    help: 'Events refused by publish(): contract violations, or published after close()',
    read: (s) => s.rejected,
  },
  {
    name: 'plan_ledger_publisher_events_buffered',
    kind: 'gauge',
    help: 'Events held in memory now, on their way to Redis',
    read: (s) => s.buffered,
  },
  {
    name: 'plan_ledger_publisher_journal_bytes',
    kind: 'gauge',
    help: 'Bytes the spill journal occupies now (files plus staged); bounded by maxJournalBytes',
    read: (s) => s.journalBytes,
  },
  {
    name: 'plan_ledger_publisher_redis_up',
    kind: 'gauge',
    help: "1 while Redis accepts the publisher's commands",
    read: (s) => (s.redisReady ? 1 : 0),
  },
];

/** @throws PublisherConfigError when the registry already holds the series (one publisher per registry) */
export function assertMetricsFree(registry: Registry): void {
  const taken = PUBLISHER_SERIES.filter((s) => registry.getSingleMetric(s.name) !== undefined).map((s) => s.name);
  if (taken.length > 0) {
    throw new PublisherConfigError([
      `metricsRegistry already has ${taken.join(', ')}: give each publisher a registry of its own (or close() the other first)`,
    ]);
  }
}

/**
 * Registers the publisher's series on the executor's registry (option `metricsRegistry`); `remove()`
 * (called by close()) takes them off again, so a later publisher can register on the same registry.
 * @throws PublisherConfigError when the registry already holds them (one publisher per registry)
 */
export function registerPublisherMetrics(registry: Registry, stats: () => PublisherStats): { remove(): void } {
  assertMetricsFree(registry);
  for (const series of PUBLISHER_SERIES) {
    const { name, help, read } = series;
    if (series.kind === 'counter') {
      new Counter({
        name,
        help,
        registers: [registry],
        collect() {
          this.reset();
          this.inc(read(stats()));
        },
      });
    } else {
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(read(stats()));
        },
      });
    }
  }
  return {
    remove: () => {
      for (const { name } of PUBLISHER_SERIES) registry.removeSingleMetric(name);
    },
  };
}
