/**
 * What the publisher tests share: a publisher on a fresh queue prefix and journal directory, and
 * the events that reached the queue, read back from the jobs' data.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import pino from 'pino';
import { PlanEventPublisher, PublisherOptions } from '../../../src/publisher';
import { EVENTS_QUEUE, EventBatchJobData } from '../../../src/queue/queue-names';
import type { PlanEvent } from '../../../src/contracts';

export function uniquePrefix(): string {
  return `test-pub-${randomBytes(4).toString('hex')}`;
}

const tempDirs: string[] = [];

/** Removes every journal directory made by tempJournalDir (call in afterAll, after closing publishers). */
export function removeTempJournalDirs(): void {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** A fresh journal directory; see removeTempJournalDirs. */
export function tempJournalDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-journal-'));
  tempDirs.push(dir);
  return dir;
}

/** Log lines the publisher wrote, parsed (level >= warn by default). */
export function capturingLogger(level = 'warn'): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

export interface TestPublisher {
  publisher: PlanEventPublisher;
  prefix: string;
  journalDir: string;
}

/** A publisher on a fresh prefix and journal directory, silent unless `options.logger` says otherwise. */
export function newPublisher(redisUrl: string, options: PublisherOptions = {}): TestPublisher {
  const prefix = options.queuePrefix ?? uniquePrefix();
  const journalDir = options.journalDir ?? tempJournalDir();
  const publisher = new PlanEventPublisher({
    redisUrl,
    logger: pino({ level: 'silent' }),
    ...options,
    queuePrefix: prefix,
    journalDir,
  });
  return { publisher, prefix, journalDir };
}

/** Every event in the queue's waiting jobs, jobs in the order they were added. */
export async function queuedEvents(redisUrl: string, prefix: string): Promise<{ jobs: number; events: PlanEvent[] }> {
  const queue = new Queue<EventBatchJobData>(EVENTS_QUEUE, { connection: { url: redisUrl }, prefix });
  try {
    const jobs = await queue.getJobs(['waiting'], 0, -1, true);
    jobs.sort((a, b) => a.timestamp - b.timestamp);
    return { jobs: jobs.length, events: jobs.flatMap((job) => job.data.events as PlanEvent[]) };
  } finally {
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
  }
}

/** eventId -> how many times it is in the queue. */
export function countByEventId(events: readonly PlanEvent[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of events) counts.set(e.eventId, (counts.get(e.eventId) ?? 0) + 1);
  return counts;
}

/** Events whose count is not exactly one, for a readable failure message. */
export function notExactlyOnce(expectedIds: readonly string[], counts: Map<string, number>): string[] {
  const wrong = expectedIds.filter((id) => counts.get(id) !== 1).map((id) => `${id} x${counts.get(id) ?? 0}`);
  const expected = new Set(expectedIds);
  for (const id of counts.keys()) if (!expected.has(id)) wrong.push(`${id} (never published)`);
  return wrong;
}

export function journalSegments(dir: string): string[] {
  return fs.readdirSync(dir).filter((f) => f.startsWith('segment-'));
}

/** The journal's records as written, segment by segment: key (job id, and shard when named), event count, events. */
export function journalRecords(dir: string): Array<{ key: string; count: number; events: PlanEvent[] }> {
  return journalSegments(dir)
    .filter((file) => file.endsWith('.jsonl'))
    .sort()
    .flatMap((file) => fs.readFileSync(path.join(dir, file), 'utf8').split('\n').filter(Boolean))
    .map((line) => {
      const [key, count, json] = line.split('\t');
      return { key, count: Number(count), events: JSON.parse(json) as PlanEvent[] };
    });
}

export const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
