/**
 * The spill journal: its byte limit (the only place events are dropped), its survival across a
 * crash and a close, and the ownership of its directory.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PlanEvent } from '../../src/contracts';
import { PlanEventPublisher, PublisherConfigError } from '../../src/publisher';
import { exactlyEvents } from '../support/event-factory';
import {
  capturingLogger,
  countByEventId,
  journalRecords,
  journalSegments,
  newPublisher,
  notExactlyOnce,
  queuedEvents,
  removeTempJournalDirs,
  tempJournalDir,
  uniquePrefix,
  yieldToLoop,
} from './support/publisher-harness';
import { RedisProcess } from './support/redis-process';
import { waitFor } from '../worker/helpers/queue-harness';

const ROOT = path.join(__dirname, '..', '..');

/** Runs spill-then-hang.ts in a child process, reads its report, then kills it like a crash would. */
async function crashAfterSpilling(
  redisUrl: string,
  journalDir: string,
  count: number,
  maxBuffered: number | 'default',
  waitMs = 0,
  journalCommitMs?: number,
): Promise<{ eventIds: string[]; stats: Record<string, number> }> {
  const args = [
    redisUrl,
    journalDir,
    String(count),
    String(maxBuffered),
    String(waitMs),
    ...(journalCommitMs === undefined ? [] : [String(journalCommitMs)]),
  ];
  const child = spawn(
    process.execPath,
    ['-r', 'tsx/cjs', path.join(__dirname, 'support', 'spill-then-hang.ts'), ...args],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const report = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d;
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0]);
    });
    child.once('exit', (code) => reject(new Error(`child exited with ${code} before reporting: ${stderr}`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return JSON.parse(report);
}

describe('spill journal', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await RedisProcess.create();
  });
  afterAll(async () => {
    await redis.destroy();
    removeTempJournalDirs();
  });
  afterEach(async () => {
    await redis.stop();
  });

  it('journal limit exceeded: exactly the counted number dropped (and logged), the rest delivered', async () => {
    const { logger, lines } = capturingLogger();
    const { publisher, prefix, journalDir } = newPublisher(redis.url, {
      maxBufferedEvents: 500,
      maxJournalBytes: 256 * 1024,
      logger,
    });
    const events = exactlyEvents(3_000, { seed: 33 });
    const dropped: string[] = [];
    for (const [i, event] of events.entries()) {
      const result = publisher.publish(event);
      if (!result.ok && result.reason === 'dropped') dropped.push(result.eventId);
      else expect(result.ok).toBe(true);
      if (i % 250 === 249) await yieldToLoop();
    }
    const stats = publisher.stats();
    expect(stats.dropped).toBe(dropped.length);
    expect(stats.dropped).toBeGreaterThan(0);
    expect(stats.buffered + stats.spilled + stats.dropped).toBe(3_000);
    expect(stats.journalBytes).toBeLessThanOrEqual(256 * 1024);

    await redis.start();
    await expect(publisher.flush(30_000)).resolves.toBe(true);
    await publisher.close(5_000);

    const droppedIds = new Set(dropped);
    const delivered = events.map((e) => e.eventId).filter((id) => !droppedIds.has(id));
    const { events: queued } = await queuedEvents(redis.url, prefix);
    expect(notExactlyOnce(delivered, countByEventId(queued))).toEqual([]);
    // Every drop is logged: the rate-limited lines' counts add up to the total.
    const dropLines = lines.filter((l) => l.msg === 'events dropped');
    expect(dropLines.reduce((n, l) => n + (l.count as number), 0)).toBe(dropped.length);
    expect(dropLines[0]).toMatchObject({ reason: 'spill journal full', journalDir, maxJournalBytes: 256 * 1024 });
  });

  it('a publisher restarted after a crash drains the journal it left', async () => {
    const journalDir = tempJournalDir();
    // The crashed publisher held its first 200 events in memory (lost with the process: killed
    // before its group commit, here set to a minute) and spilled the rest.
    const crashed = await crashAfterSpilling(redis.url, journalDir, 3_000, 200, 0, 60_000);
    expect(crashed.stats).toMatchObject({ buffered: 200, spilled: 2_800, dropped: 0 });
    expect(journalSegments(journalDir).length).toBeGreaterThan(0);

    await redis.start();
    const prefix = uniquePrefix();
    const { publisher } = newPublisher(redis.url, { journalDir, queuePrefix: prefix });
    try {
      await expect(publisher.flush(30_000)).resolves.toBe(true);
      expect(publisher.stats()).toMatchObject({ published: 2_800, recovered: 2_800, dropped: 0 });
    } finally {
      await publisher.close(5_000);
    }
    const spilled = crashed.eventIds.slice(200);
    const { events: queued } = await queuedEvents(redis.url, prefix);
    expect(notExactlyOnce(spilled, countByEventId(queued))).toEqual([]);
    expect(queued.map((e) => e.eventId)).toEqual(spilled);
    expect(journalSegments(journalDir)).toEqual([]);
  });

  it('kill -9 with Redis down and default options: every event accepted before the group-commit window is delivered after restart', async () => {
    const journalDir = tempJournalDir();
    // 3,000 events fit the default memory buffer (100,000): before group commit, all of them died with the process.
    const crashed = await crashAfterSpilling(redis.url, journalDir, 3_000, 'default', 500);
    expect(crashed.stats).toMatchObject({ buffered: 0, spilled: 3_000, dropped: 0 });

    await redis.start();
    const prefix = uniquePrefix();
    const { publisher } = newPublisher(redis.url, { journalDir, queuePrefix: prefix });
    try {
      await expect(publisher.flush(30_000)).resolves.toBe(true);
      expect(publisher.stats()).toMatchObject({ recovered: 3_000, dropped: 0 });
    } finally {
      await publisher.close(5_000);
    }
    const { events: queued } = await queuedEvents(redis.url, prefix);
    expect(notExactlyOnce(crashed.eventIds, countByEventId(queued))).toEqual([]);
  });

  it('close() while Redis is down writes memory to the journal; the next publisher delivers it once', async () => {
    const first = newPublisher(redis.url, { journalCommitMs: 60_000 }); // memory still holds them at close
    const events = exactlyEvents(1_000, { seed: 34 });
    for (const event of events) expect(first.publisher.publish(event).ok).toBe(true);
    const unicode = first.publisher.stepSkipped(
      { planId: 'plan_u', sessionId: 'sess_u' },
      { stepId: 's1', reason: 'déjà vu 😀 漢字 "quoted"\n' },
    );
    await expect(first.publisher.close(300)).resolves.toEqual({ flushed: false, spilledAtClose: 1_001 });
    expect(first.publisher.publish(events[0])).toMatchObject({ ok: false, reason: 'closed' });

    await redis.start();
    const second = newPublisher(redis.url, { journalDir: first.journalDir, queuePrefix: first.prefix });
    await expect(second.publisher.flush(30_000)).resolves.toBe(true);
    await second.publisher.close(5_000);
    const { events: queued } = await queuedEvents(redis.url, first.prefix);
    expect(
      notExactlyOnce(
        [...events.map((e) => e.eventId), (unicode as { eventId: string }).eventId],
        countByEventId(queued),
      ),
    ).toEqual([]);
    expect(queued.find((e) => e.planId === 'plan_u')?.payload).toEqual({
      stepId: 's1',
      reason: 'déjà vu 😀 漢字 "quoted"\n',
    });
  });

  it("while the journal is not drained, each shard's record still filling reaches the disk by the group commit (what a kill -9 keeps)", async () => {
    const { publisher, journalDir } = newPublisher(redis.url, {
      maxBufferedEvents: 100,
      journalCommitMs: 200,
      queueShards: 3,
    });
    const events = exactlyEvents(1_050, { seed: 36 });
    try {
      // Redis is down: past the first 100, events go to the journal, which then holds records the
      // drain has not sent; a record still filling waits for more events, at most until the group commit
      for (let i = 0; i < 1_000; i++) {
        expect(publisher.publish(events[i]).ok).toBe(true);
        if (i % 100 === 99) await yieldToLoop();
      }
      expect(journalSegments(journalDir).length).toBeGreaterThan(0);
      for (const event of events.slice(1_000)) expect(publisher.publish(event).ok).toBe(true);
      const onDisk = () => journalRecords(journalDir).flatMap((r) => r.events.map((e) => e.eventId));
      // the memory's 100 and every record still filling, written without a close
      await waitFor('every accepted event in the journal files', () => onDisk().length >= events.length, 10_000);
      expect(onDisk().sort()).toEqual(events.map((e) => e.eventId).sort());
    } finally {
      await publisher.close(300);
    }
  });

  it('skips unreadable journal records (a torn tail after a machine crash) and counts their events as dropped', async () => {
    const journalDir = tempJournalDir();
    const events = exactlyEvents(5, { seed: 35 });
    const record = (batch: PlanEvent[]) => `b-${randomUUID()}\t${batch.length}\t${JSON.stringify(batch)}\n`;
    fs.writeFileSync(
      path.join(journalDir, 'segment-000000000007.jsonl'),
      record(events.slice(0, 2)) +
        'garbage\t3\tnot a record\n' +
        record(events.slice(2, 5)) +
        `b-${randomUUID()}\t7\t[{"half":`,
    );
    await redis.start();
    const { logger, lines } = capturingLogger('error');
    const { publisher, prefix } = newPublisher(redis.url, { journalDir, logger });
    await expect(publisher.flush(10_000)).resolves.toBe(true);
    expect(publisher.stats()).toMatchObject({ recovered: 5, dropped: 3 + 7 });
    await publisher.close(5_000);
    const { events: queued } = await queuedEvents(redis.url, prefix);
    expect(queued.map((e) => e.eventId)).toEqual(events.map((e) => e.eventId));
    expect(lines.filter((l) => l.msg === 'unreadable journal record skipped').map((l) => l.events)).toEqual([3, 7]);
    expect(journalSegments(journalDir)).toEqual([]);
  });

  it('refuses a journal directory another live publisher owns', async () => {
    const { publisher, journalDir } = newPublisher(redis.url);
    try {
      expect(() => new PlanEventPublisher({ redisUrl: redis.url, journalDir })).toThrow(PublisherConfigError);
      expect(() => new PlanEventPublisher({ redisUrl: redis.url, journalDir })).toThrow(
        `journalDir ${journalDir} is in use by process ${process.pid}`,
      );
    } finally {
      await publisher.close(100);
    }
  });
});
