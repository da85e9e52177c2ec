import type IORedis from 'ioredis';
import { loadConfig } from '../../../src/config/config';
import type { PlanEvent } from '../../../src/contracts';
import { ENTITY, type PlanHeadRow } from '../../../src/store/entities';
import type { WebhookConfig } from '../../../src/webhooks/webhook-config';
import { startWorker, type WorkerHandle } from '../../../src/worker';
import { createMigratedDb, type TestDb } from '../../support/databases';
import {
  dropPrefix,
  openRedis,
  publish,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
  waitFor,
} from '../../worker/helpers/queue-harness';

/**
 * A real worker running the stall check (STALL_AFTER `stallAfterMs`, a tick every `tickMs`, its
 * health server on a free port) on a throwaway database and queue prefix, with a Redis connection
 * to publish events through the queue.
 */
export interface StallWorker {
  db: Awaited<ReturnType<typeof createMigratedDb>>;
  redis: IORedis;
  prefix: string;
  worker: WorkerHandle;
  /** The plan's head row as stored now. */
  head(planId: string): Promise<PlanHeadRow>;
  /** Sends the events to the worker in one job. */
  send(...events: PlanEvent[]): Promise<void>;
  close(): Promise<void>;
}

export async function startStallWorker(
  kind: TestDb,
  options: {
    stallAfterMs: number;
    tickMs: number;
    /** The worker's webhook delivery. @defaultValue DEFAULT_WEBHOOK_CONFIG */
    webhooks?: WebhookConfig;
    /** Runs on the migrated database before the worker starts. */
    prepare?: (db: StallWorker['db']) => Promise<void>;
  },
): Promise<StallWorker> {
  const db = await createMigratedDb(kind);
  const redis = openRedis();
  const prefix = uniquePrefix('stall');
  await options.prepare?.(db);
  const worker = await startWorker({
    config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
    dataSource: db.ds,
    logger: silentLogger(),
    settings: {
      healthPort: 0,
      healthHost: '127.0.0.1',
      stallAfterMs: options.stallAfterMs,
      stallCheckMs: options.tickMs,
    },
    stallCheck: true,
    webhooks: options.webhooks,
  });
  return {
    db,
    redis,
    prefix,
    worker,
    head: async (planId) =>
      (await db.ds.getRepository<PlanHeadRow>(ENTITY.head).findOneByOrFail({ planId })) as PlanHeadRow,
    send: async (...events) => void (await publish(redis, prefix, [{ v: 1, events }])),
    async close() {
      await worker.close();
      await dropPrefix(redis, prefix);
      await redis.quit();
      await db.close();
    },
  };
}

/** Waits (checking every 50 ms, up to a minute) for what a few stall-check ticks bring. */
export function untilTicked(what: string, check: () => Promise<boolean>): Promise<void> {
  return waitFor(what, check, 60_000, 50);
}
