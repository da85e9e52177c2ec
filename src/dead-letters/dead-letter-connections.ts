/**
 * Wiring for one-shot processes (the CLI, the demo): connect to Redis (and, for replay, the
 * database), build a DeadLetterService, and close everything afterwards. Fails fast with one
 * readable line when Redis or the database is unreachable, instead of BullMQ's silent wait.
 */
import { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '../config/config';
import { DEAD_LETTER_QUEUE, EVENTS_QUEUE } from '../queue/queue-names';
import type { Logger } from '../shared/logger';
import { assertSchema, openDataSource } from '../store/data-source';
import { PlanEventStore } from '../store/plan-event-store';
import { DeadLetterService } from './dead-letter.service';
import { connectRedis, RedisClient } from '../queue/connect-redis';
import { queueShards } from '../queue/queue-shards';

export { connectRedis };

export interface OpenDeadLetterOptions {
  /** Open EVENTS_QUEUE too (replay). @defaultValue false */
  events?: boolean;
  /** Open the database read-only-in-practice, for replay's "already stored" count. @defaultValue false */
  store?: boolean;
  /** How long to try reaching Redis. @defaultValue 5000 ms */
  connectTimeoutMs?: number;
}

export interface OpenDeadLetterService {
  service: DeadLetterService;
  close(): Promise<void>;
}

/** The database, checked for the schema so a missing migration is named, not a bare SQL error. */
async function openStore(config: Readonly<AppConfig>): Promise<DataSource> {
  const ds = await openDataSource(config.database, { poolSize: 1 });
  try {
    await assertSchema(ds, config.database, 'dead-letter replay');
    return ds;
  } catch (err) {
    await ds.destroy().catch(() => undefined);
    throw err;
  }
}

export async function openDeadLetterService(
  config: Readonly<AppConfig>,
  logger: Logger,
  opts: OpenDeadLetterOptions = {},
): Promise<OpenDeadLetterService> {
  let ds: DataSource | undefined;
  if (opts.store) ds = await openStore(config);
  let redis: RedisClient;
  try {
    redis = await connectRedis(config, opts.connectTimeoutMs);
  } catch (err) {
    await ds?.destroy();
    throw err;
  }
  const queueOpts = { connection: redis, prefix: config.queuePrefix };
  const deadLetters = new Queue(DEAD_LETTER_QUEUE, queueOpts);
  // replay sends each event to the shard of its plan (QUEUE_SHARDS); shard 0 is QUEUE_PREFIX's own queue
  const eventShards = opts.events
    ? queueShards(config.queuePrefix, config.queueShards ?? 1).map(
        (s) => new Queue(EVENTS_QUEUE, { ...queueOpts, prefix: s.prefix }),
      )
    : [];
  const events = eventShards[0];
  const service = new DeadLetterService({
    deadLetters,
    events,
    eventShards,
    storedEvents: ds ? new PlanEventStore(ds, logger) : undefined,
    logger,
  });
  return {
    service,
    async close() {
      // each step on its own: one failing close must not leave the others open
      await Promise.allSettled([deadLetters.close(), ...eventShards.map((q) => q.close())]);
      await redis.quit().catch(() => redis.disconnect());
      if (ds?.isInitialized) await ds.destroy().catch(() => undefined);
    },
  };
}
