/**
 * A job the worker does not read (over maxJobBytes, or not JSON) becomes one `invalid` dead letter
 * holding the job's raw text. `dlq replay` of one over the limit splits it into its events, sends
 * them in jobs under the limit, and only those still invalid come back, one dead letter each; a raw
 * text that is not JSON stays as it is, with the reason. Real Redis, a real worker in this process
 * (PostgreSQL), the real CLI in child processes; then the same replay without a worker, where the
 * jobs it adds can be read.
 */
import { randomUUID } from 'node:crypto';
import { runCli } from '../support/cli';
import { createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';
import { DEFAULT_LIMITS, PlanEvent } from '../../src/contracts';
import { loadConfig } from '../../src/config/config';
import type { DeadLetter } from '../../src/dead-letters/dead-letter';
import { buildDeadLetter } from '../../src/dead-letters/dead-letter-writer';
import { DeadLetterService } from '../../src/dead-letters/dead-letter.service';
import { EVENTS_QUEUE, EventBatchJobData } from '../../src/queue/queue-names';
import { createLogger } from '../../src/shared/logger';
import { startWorker, WorkerHandle } from '../../src/worker';
import { QueueFixture, REDIS_URL, letter } from './dead-letter.fixtures';

const logger = createLogger({ level: 'silent' });

let database: Awaited<ReturnType<typeof createMigratedDb>>;
let worker: WorkerHandle | undefined;
let q: QueueFixture | undefined;

beforeAll(async () => {
  database = await createMigratedDb('postgres');
});

afterEach(async () => {
  await worker?.close(5_000);
  worker = undefined;
  await q?.close();
  q = undefined;
});

afterAll(async () => {
  await database?.close();
});

async function startTheWorker(fixture: QueueFixture): Promise<WorkerHandle> {
  worker = await startWorker({
    config: loadConfig({ REDIS_URL, QUEUE_PREFIX: fixture.prefix, DATABASE_URL: database.db.url }),
    dataSource: database.ds,
    logger,
    settings: { healthPort: null, batchWaitMs: 5 },
  });
  return worker;
}

/** Adds a job whose data is `raw`, byte for byte, as a producer other than ours could. */
async function addRawJob(fixture: QueueFixture, raw: string): Promise<string> {
  const jobId = `foreign-${randomUUID()}`;
  const job = await fixture.events.add(
    'events',
    { v: 1, events: [] },
    { jobId, delay: 3_600_000, removeOnComplete: true },
  );
  await fixture.redis.hset(fixture.events.toKey(jobId), 'data', raw);
  await job.promote();
  return jobId;
}

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function storedCount(eventIds: string[]): Promise<number> {
  const rows: Array<{ n: string }> = await database.ds.query(
    'SELECT COUNT(*) AS n FROM plan_events WHERE event_id = ANY($1::uuid[])',
    [eventIds],
  );
  return Number(rows[0].n);
}

/** A plan of 64 steps whose step.completed events carry ~0.76 MB each (49 MB in all), two of them invalid. */
function bigPlan(): { events: unknown[]; valid: string[]; invalid: string[] } {
  const text = 'é'.repeat(190_000); // 380 KB of UTF-8 in 190k characters, under maxLongText
  const run = planRun({ seed: 4949, steps: 64 });
  let completed = 0;
  const invalid: string[] = [];
  const events = run.map((e: PlanEvent) => {
    if (e.type !== 'step.completed') return e;
    completed += 1;
    const payload = { ...e.payload, result: text, outputContent: text };
    if (completed % 30 !== 7) return { ...e, payload };
    invalid.push(e.eventId);
    return { ...e, payload: { ...payload, inputTokens: 'many' } };
  });
  return { events, valid: run.map((e) => e.eventId).filter((id) => !invalid.includes(id)), invalid };
}

describe('dlq replay of a job the worker did not read', () => {
  it('a 49 MB job of 64 big events: the replay sends them in jobs under 16 MiB; the valid ones are stored, the invalid ones dead-lettered one by one', async () => {
    q = new QueueFixture();
    await startTheWorker(q);
    const { events, valid, invalid } = bigPlan();
    const raw = JSON.stringify({ v: 1, events });
    expect(Buffer.byteLength(raw)).toBeGreaterThan(48_000_000);
    expect(invalid).toHaveLength(2);
    const sourceJob = await addRawJob(q, raw);

    const [id] = await until(
      'the raw dead letter',
      () => q!.deadLetterIds(),
      (ids) => ids.length === 1,
    );
    const dl = await new DeadLetterService({ deadLetters: q.deadLetters, logger }).show(id);
    expect(dl).toMatchObject({ id, kind: 'invalid', source: { jobId: sourceJob }, event: raw });
    expect(dl.error.message).toMatch(
      /^job data is \d+ bytes, over the 16777216-byte job limit \(maxJobBytes\); not parsed/,
    );

    const replay = await runCli(
      ['dlq', 'replay', id, '--wait', '--json'],
      q.env({ DATABASE_URL: database.db.url }),
      120_000,
    );
    expect(replay.stderr).toContain('2 replayed event(s) failed again');
    expect(replay.code).toBe(1);
    const summary = JSON.parse(replay.stdout);
    expect(summary).toMatchObject({
      selected: 1,
      replayed: events.length,
      alreadyStored: 0,
      failedAgain: 2,
      pending: 0,
      kept: [],
    });
    expect(summary.jobIds.length).toBeGreaterThanOrEqual(
      Math.ceil(Buffer.byteLength(raw) / DEFAULT_LIMITS.maxJobBytes),
    );

    expect(await storedCount(valid)).toBe(valid.length);
    const again = await runCli(['dlq', 'list', '--json'], q.env());
    const letters = (JSON.parse(again.stdout) as { deadLetters: DeadLetter[] }).deadLetters;
    expect(letters.map((l) => l.eventId).sort()).toEqual([...invalid].sort());
    for (const l of letters) {
      expect(l).toMatchObject({ kind: 'invalid', replayCount: 1 });
      expect(summary.jobIds).toContain(l.source.jobId);
      expect(summary.failedAgainIds).toContain(l.id);
    }
  }, 180_000);

  it('a raw text that is not JSON stays as it is: the replay says why, sends nothing and leaves the entry unclaimed', async () => {
    q = new QueueFixture();
    await startTheWorker(q);
    const raw = '{"v":1,"events":[{"eventId":"truncated';
    await addRawJob(q, raw);
    const [id] = await until(
      'the raw dead letter',
      () => q!.deadLetterIds(),
      (ids) => ids.length === 1,
    );
    const key = q.deadLetters.toKey(id);
    const before = await q.redis.hgetall(key);
    expect(JSON.parse(before.data)).toMatchObject({ kind: 'invalid', event: raw });
    expect(JSON.parse(before.data).error.message).toMatch(
      /^job data is not JSON \(.*\); its raw text is kept as the event$/,
    );

    const env = q.env({ DATABASE_URL: database.db.url });
    const text = await runCli(['dlq', 'replay', id], env);
    expect({ code: text.code, stderr: text.stderr }).toEqual({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(
      new RegExp(
        `^replayed 0 events in 0 jobs; already stored: 0; failed again: not checked \\(use --wait\\)\\nnot replayed, still dead letters \\(1\\):\\n  ${id}: its raw text is not JSON \\(.+\\), so it cannot be split into events; kept as it is\\n$`,
      ),
    );
    const json = await runCli(['dlq', 'replay', id, '--json'], env);
    expect(JSON.parse(json.stdout)).toMatchObject({
      selected: 1,
      replayed: 0,
      vanished: 0,
      jobIds: [],
      kept: [{ id, reason: expect.stringContaining('its raw text is not JSON') }],
    });

    expect(await q.deadLetterIds()).toEqual([id]);
    expect(await q.redis.hgetall(key)).toEqual(before); // no claim left behind, nothing rewritten
  });
});

describe('dlq replay: job sizes (no worker: the jobs stay on the queue)', () => {
  /** The worker's record of a job over the limit, as job-processor.ts builds it. */
  function rawJobLetter(raw: string): DeadLetter {
    const message = `job data is ${Buffer.byteLength(raw)} bytes, over the 1000-byte job limit (maxJobBytes); not parsed, its raw text is kept as the event`;
    const now = new Date();
    return buildDeadLetter(
      'invalid',
      raw,
      { message, violations: [{ path: '', message }] },
      {
        queue: EVENTS_QUEUE,
        prefix: 'p',
        jobId: `foreign-${randomUUID()}`,
        index: 0,
        attempts: 1,
        firstFailedAt: now,
        lastFailedAt: now,
        workerVersion: '0.1.0',
        replayCount: 0,
      },
    );
  }

  it('every job stays under maxJobBytes; an event no job can carry is dead-lettered on its own (split) or kept (a letter of its own)', async () => {
    q = new QueueFixture();
    const dlq = new DeadLetterService({ deadLetters: q.deadLetters, events: q.events, logger });
    const small = Array.from({ length: 12 }, (_, i) => ({
      eventId: randomUUID(),
      type: 'step.completed',
      n: i,
      pad: 'x'.repeat(400),
    }));
    const huge = { eventId: randomUUID(), type: 'step.completed', pad: 'y'.repeat(5_000) };
    const events = [...small.slice(0, 6), huge, ...small.slice(6)];
    const replayCounts = events.map((_, i) => (i === 2 ? 4 : 0));
    const [rawLetter, alone, plain] = await q.write(
      rawJobLetter(JSON.stringify({ v: 1, events, replayCounts })),
      letter({ event: huge }),
      letter({ replayCount: 2 }),
    );

    const summary = await dlq.replay({ filter: {} }, { maxJobBytes: 3_000, batch: 500 });

    expect(summary).toMatchObject({ selected: 3, replayed: small.length + 1, vanished: 0 });
    const jobs = await q.events.getJobs(['waiting'], 0, -1, true);
    expect(jobs.length).toBeGreaterThan(2);
    for (const job of jobs)
      expect(await q.redis.hstrlen(q.events.toKey(String(job.id)), 'data')).toBeLessThanOrEqual(3_000);
    const sent = jobs.flatMap((j) =>
      (j.data as EventBatchJobData).events.map((e, i) => [e, (j.data as EventBatchJobData).replayCounts![i]] as const),
    );
    // the raw job's events in order, each count raised from the job's own or the letter's; the plain letter's event
    expect(sent).toEqual(expect.arrayContaining([[plain.event, 3]]));
    expect(sent.filter(([e]) => (e as { eventId: string }).eventId !== plain.eventId)).toEqual(
      small.map((e, i) => [e, i === 2 ? 5 : 1]),
    );

    // the raw letter went; the letter whose event no job carries stayed; the huge event of the raw job is a letter of
    // its own
    const left = (await dlq.list({})).deadLetters;
    expect(left.map((l) => l.id)).not.toContain(rawLetter.id);
    const split = left.find((l) => l.id !== alone.id)!;
    expect(left.map((l) => l.id).sort()).toEqual([alone.id, split.id].sort());
    expect(split).toMatchObject({
      kind: 'invalid',
      event: huge,
      eventId: huge.eventId,
      replayCount: 1,
      source: rawLetter.source,
    });
    expect(split.error.message).toContain(`event 6 of the job held by dead letter ${rawLetter.id} is`);
    expect(summary.kept).toEqual(
      expect.arrayContaining([
        {
          id: alone.id,
          reason: expect.stringMatching(
            /^its event is \d+ bytes of JSON: no job under the 3000-byte job limit \(maxJobBytes\) can carry it; kept as it is$/,
          ),
        },
        { id: split.id, reason: split.error.message },
      ]),
    );
    expect(await q.redis.hexists(q.deadLetters.toKey(alone.id), 'pl:claim')).toBe(0);

    // run again: the kept one is kept again (not counted as gone), the split one is kept too
    const rerun = await dlq.replay({ filter: {} }, { maxJobBytes: 3_000 });
    expect(rerun).toMatchObject({ selected: 2, replayed: 0, vanished: 0 });
    expect(rerun.kept.map((k) => k.id).sort()).toEqual([alone.id, split.id].sort());
  });
});
