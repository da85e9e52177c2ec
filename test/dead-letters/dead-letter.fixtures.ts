/** Dead letters for tests: records built field by field, written with the worker's own writer. */
import { randomBytes, randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import type { DeadLetter } from '../../src/dead-letters/dead-letter';
import { DeadLetterWriter } from '../../src/dead-letters/dead-letter-writer';
import { DEAD_LETTER_QUEUE, EVENTS_QUEUE } from '../../src/queue/queue-names';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A queue prefix no other test uses. */
export function uniquePrefix(): string {
  return `test-dlq-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

/** A valid `step.completed` event of plan `planId`. */
export function validEvent(planId = 'plan_1', overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    specVersion: 1,
    eventId: randomUUID(),
    type: 'step.completed',
    planId,
    sessionId: 'session_1',
    seq: 1,
    occurredAt: '2025-01-01T00:00:00.000Z',
    payload: { stepId: 's1', inputTokens: 10, outputTokens: 20 },
    ...overrides,
  };
}

let counter = 0;

/** A complete dead letter; the event's own fields follow `overrides` (type, planId, eventId). */
export function letter(overrides: Partial<DeadLetter> = {}): DeadLetter {
  counter += 1;
  const planId = overrides.planId === undefined ? 'plan_1' : overrides.planId;
  const event = overrides.event ?? validEvent(planId ?? undefined, overrides.type ? { type: overrides.type } : {});
  const e = event as Record<string, unknown>;
  return {
    id: `dl-${randomUUID()}`,
    kind: 'retries-exhausted',
    event,
    eventId: typeof e.eventId === 'string' ? e.eventId : null,
    type: typeof e.type === 'string' ? e.type : null,
    planId,
    sessionId: 'session_1',
    error: {
      message: 'connect ECONNREFUSED 127.0.0.1:5432',
      code: 'ECONNREFUSED',
      stack: 'Error: connect ECONNREFUSED\n    at x (y.ts:1:1)',
    },
    attempts: 3,
    firstFailedAt: '2025-01-01T00:00:00.000Z',
    lastFailedAt: '2025-01-01T00:01:00.000Z',
    source: { queue: EVENTS_QUEUE, jobId: `job-${counter}` },
    workerVersion: '0.1.0',
    replayCount: 0,
    ...overrides,
  };
}

/** Redis side of one test: the queues under its prefix, wiped and closed by `close()`. */
export class QueueFixture {
  readonly redis: IORedis;
  readonly deadLetters: Queue;
  readonly events: Queue;
  private readonly writer: DeadLetterWriter;

  constructor(
    readonly prefix = uniquePrefix(),
    readonly redisUrl = REDIS_URL,
  ) {
    this.redis = new IORedis(redisUrl, { maxRetriesPerRequest: null });
    this.deadLetters = new Queue(DEAD_LETTER_QUEUE, { connection: this.redis, prefix });
    this.events = new Queue(EVENTS_QUEUE, { connection: this.redis, prefix });
    this.writer = new DeadLetterWriter(this.redis, prefix);
  }

  /** Environment for `runCli`. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return { REDIS_URL: this.redisUrl, QUEUE_PREFIX: this.prefix, ...extra };
  }

  async write(...letters: DeadLetter[]): Promise<DeadLetter[]> {
    await this.writer.write(letters);
    return letters;
  }

  async deadLetterIds(): Promise<string[]> {
    const jobs = await this.deadLetters.getJobs(['waiting', 'delayed', 'prioritized'], 0, -1, true);
    return jobs.map((j) => String(j.id)).sort();
  }

  async close(): Promise<void> {
    await this.writer.close();
    for (const queue of [this.deadLetters, this.events]) {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
    await this.redis.quit();
  }
}
