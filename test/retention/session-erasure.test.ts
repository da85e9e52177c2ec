/**
 * Erasure of one session (`sessions purge` and eraseSession) on every database, with its dead
 * letters in real Redis; and retention removing the sessions its purge leaves empty.
 */
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { runCli } from '../support/cli';
import { letter, QueueFixture } from '../dead-letters/dead-letter.fixtures';
import { DeadLetterService } from '../../src/dead-letters/dead-letter.service';
import { eraseSession, ForksInOtherSessionsError, SessionErasureReport } from '../../src/retention/session-erasure';
import { runRetention } from '../../src/retention/retention.service';
import { retentionPolicy } from '../../src/retention/retention-config';
import { NotFoundError } from '../../src/queries/query-errors';
import { lockHeads } from '../../src/retention/retention-sql';
import { ENTITY } from '../../src/store/entities';
import { createLogger } from '../../src/shared/logger';
import {
  ago,
  DAY,
  expectedRows,
  insertPlans,
  NOW,
  PlanSpec,
  planRows,
  sessionRows,
  sum,
  wipe,
  zero,
} from './plan-fixtures';

const logger = createLogger({ level: 'silent' });

/** Session A: one plan of every kind erasure must take; session B: what it must leave. */
const A: PlanSpec[] = [
  { id: 'a-completed', sessionId: 'sess-A', status: 'completed' },
  { id: 'a-executing', sessionId: 'sess-A', status: 'executing', steps: 5 },
  { id: 'a-soft-deleted', sessionId: 'sess-A', status: 'failed', deletedAt: ago(DAY) },
  { id: 'a-orphan', sessionId: 'sess-A', status: 'planning', orphan: true },
];
const B: PlanSpec[] = [
  { id: 'b-completed', sessionId: 'sess-B', status: 'completed' },
  { id: 'b-executing', sessionId: 'sess-B', status: 'executing' },
];

async function all(ds: DataSource, specs: PlanSpec[]): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {};
  for (const s of specs) out[s.id] = await planRows(ds, s.id, 'all');
  return out;
}

function expectedReport(dryRun: boolean, deadLetters: number): Omit<SessionErasureReport, 'durationMs'> {
  return {
    sessionId: 'sess-A',
    dryRun,
    plans: A.length,
    tables: { ...sum(A), sessions: 1 },
    deadLetters,
    forks: { plans: 0, sessions: [] },
  };
}

describe.each(ALL_TEST_DBS)('session erasure on %s', (kind) => {
  let ds: DataSource;
  let url: string;
  let close: () => Promise<void>;
  let q: QueueFixture;
  let service: DeadLetterService;

  beforeAll(async () => {
    let db: { url: string };
    ({ ds, db, close } = await createMigratedDb(kind));
    url = db.url;
  });
  afterAll(async () => close?.());
  beforeEach(async () => {
    await wipe(ds);
    q = new QueueFixture();
    service = new DeadLetterService({ deadLetters: q.deadLetters, logger });
  });
  afterEach(async () => q.close());

  /** A's dead letters (by sessionId; by planId only, as an invalid event may carry) and B's. */
  async function writeLetters() {
    const mine = await q.write(
      letter({ planId: 'a-completed', sessionId: 'sess-A' }),
      letter({ planId: null, sessionId: 'sess-A', kind: 'invalid' }),
      letter({ planId: 'a-orphan', sessionId: null }),
    );
    const theirs = await q.write(
      letter({ planId: 'b-completed', sessionId: 'sess-B' }),
      letter({ planId: 'plan-x', sessionId: 'sess-X' }),
    );
    return { mine, theirs };
  }

  it("removes every row of the session's plans, its session row and dead letters; others untouched; --dry-run changes nothing", async () => {
    await insertPlans(ds, [...A, ...B]);
    const { theirs } = await writeLetters();
    const before = await all(ds, [...A, ...B]);
    for (const s of [...A, ...B]) expect(before[s.id]).toEqual(expectedRows(s));
    const lettersBefore = await q.deadLetterIds();
    expect(lettersBefore).toHaveLength(5);

    const dry = await eraseSession(ds, 'sess-A', { dryRun: true, deadLetters: service, logger });
    expect({ ...dry, durationMs: 0 }).toEqual({ ...expectedReport(true, 3), durationMs: 0 });
    expect(await all(ds, [...A, ...B])).toEqual(before);
    expect(await sessionRows(ds, ['sess-A', 'sess-B'])).toEqual({ 'sess-A': 1, 'sess-B': 1 });
    expect(await q.deadLetterIds()).toEqual(lettersBefore);

    const done = await eraseSession(ds, 'sess-A', { deadLetters: service, logger, batchSize: 2 });
    expect({ ...done, durationMs: 0 }).toEqual({ ...expectedReport(false, 3), durationMs: 0 });
    for (const s of A) expect(await planRows(ds, s.id, 'all')).toEqual(zero());
    for (const s of B) expect(await planRows(ds, s.id, 'all')).toEqual(before[s.id]);
    expect(await sessionRows(ds, ['sess-A', 'sess-B'])).toEqual({ 'sess-A': 0, 'sess-B': 1 });
    expect(await q.deadLetterIds()).toEqual(theirs.map((l) => l.id).sort());

    // erased: the session is unknown now
    await expect(eraseSession(ds, 'sess-A', { deadLetters: service, logger })).rejects.toThrow(NotFoundError);
  });

  it('a session known only by its dead letters is erased from Redis; a session nobody knows is not found', async () => {
    await insertPlans(ds, B);
    await q.write(letter({ planId: 'p-lost', sessionId: 'sess-only-redis' }));
    const r = await eraseSession(ds, 'sess-only-redis', { deadLetters: service, logger });
    expect(r).toMatchObject({ plans: 0, deadLetters: 1, tables: { sessions: 0, execution_plans: 0 } });
    expect(await q.deadLetterIds()).toEqual([]);
    await expect(eraseSession(ds, 'sess-nobody', { deadLetters: service, logger })).rejects.toThrow(
      'session "sess-nobody" not found',
    );
  });

  it("waits for a writer holding a plan's head lock, then deletes what it wrote (nothing resurrected)", async () => {
    if (kind === 'sqlite') return; // one writer at a time: nothing can interleave
    await insertPlans(ds, A);
    const runner = ds.createQueryRunner();
    await runner.connect();
    await runner.startTransaction('READ COMMITTED');
    let erased = false;
    let erasure: Promise<unknown> | undefined;
    try {
      // a worker mid-write: head locked, a new checkpoint not yet committed
      await lockHeads(runner.manager, ['a-executing']).execute();
      await runner.manager
        .createQueryBuilder()
        .insert()
        .into(ENTITY.checkpoint)
        .values({
          id: randomUUID(),
          workflowId: 'a-executing',
          checkpointKey: 'late',
          layer: 9,
          state: '{}',
          createdAt: NOW,
          deletedAt: null,
        })
        .updateEntity(false)
        .execute();
      erasure = eraseSession(ds, 'sess-A', { logger }).then(() => (erased = true));
      await new Promise((r) => setTimeout(r, 500));
      expect(erased).toBe(false); // blocked on the head lock, not finished around the writer
      await runner.commitTransaction();
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await runner.release();
    }
    await erasure;
    for (const s of A) expect(await planRows(ds, s.id, 'all')).toEqual(zero());
  });

  it('plan-ledger sessions purge: --dry-run, --json shape, text report, unknown session exits 1 with one line', async () => {
    await insertPlans(ds, [...A, ...B]);
    await writeLetters();
    const env = q.env({ DATABASE_URL: url });
    const before = await all(ds, [...A, ...B]);

    const dry = await runCli(['sessions', 'purge', 'sess-A', '--dry-run', '--json'], env);
    expect({ code: dry.code, stderr: dry.stderr }).toEqual({ code: 0, stderr: '' });
    expect({ ...JSON.parse(dry.stdout), durationMs: 0 }).toEqual({ ...expectedReport(true, 3), durationMs: 0 });
    expect(await all(ds, [...A, ...B])).toEqual(before);
    expect(await q.deadLetterIds()).toHaveLength(5);

    const text = await runCli(['sessions', 'purge', 'sess-A'], env);
    expect({ code: text.code, stderr: text.stderr }).toEqual({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(/^execution_plans\s+3$/m);
    expect(text.stdout).toMatch(/^sessions\s+1$/m);
    expect(text.stdout).toContain('session sess-A: 4 plan(s) deleted, 3 dead letter(s) removed');
    for (const s of A) expect(await planRows(ds, s.id, 'all')).toEqual(zero());
    expect(await q.deadLetterIds()).toHaveLength(2);

    const unknown = await runCli(['sessions', 'purge', 'sess-A', '--json'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
    expect(unknown.stderr).toContain('session "sess-A" not found');
  });

  it('refuses a session whose plans have forks in other sessions, erasing nothing; --include-forks erases them too', async () => {
    const plans: PlanSpec[] = [
      { id: 'a-root', sessionId: 'sess-A', status: 'completed' },
      { id: 'a-fork', sessionId: 'sess-A', status: 'completed', forkOf: 'a-root' }, // same session: goes with it
      { id: 'a-of-b', sessionId: 'sess-A', status: 'completed', forkOf: 'b-plain' }, // its parent stays
      { id: 'f-fork', sessionId: 'sess-F', status: 'executing', forkOf: 'a-root' },
      { id: 'f-kept', sessionId: 'sess-F', status: 'completed' },
      { id: 'g-deep', sessionId: 'sess-G', status: 'completed', forkOf: 'f-fork', deletedAt: ago(DAY) },
      { id: 'a-deeper', sessionId: 'sess-A', status: 'completed', forkOf: 'g-deep' },
      { id: 'b-plain', sessionId: 'sess-B', status: 'completed' },
    ];
    await insertPlans(ds, plans);
    const before = await all(ds, plans);
    const refusal =
      'session sess-A: 2 fork(s) of its plans are in other sessions (sess-F, sess-G): f-fork, g-deep; add --include-forks to erase them too; nothing was erased';
    await expect(eraseSession(ds, 'sess-A', { logger })).rejects.toThrow(ForksInOtherSessionsError);
    await expect(eraseSession(ds, 'sess-A', { logger, dryRun: true })).rejects.toThrow(refusal);
    const env = q.env({ DATABASE_URL: url });
    const refused = await runCli(['sessions', 'purge', 'sess-A'], env);
    expect({ code: refused.code, stdout: refused.stdout, stderr: refused.stderr }).toEqual({
      code: 1,
      stdout: '',
      stderr: `plan-ledger: ${refusal}\n`,
    });
    expect(await all(ds, plans)).toEqual(before);

    const erasedIds = ['a-root', 'a-fork', 'a-of-b', 'a-deeper', 'f-fork', 'g-deep'];
    const erased = plans.filter((p) => erasedIds.includes(p.id));
    const dry = await eraseSession(ds, 'sess-A', { logger, dryRun: true, includeForks: true });
    expect(dry).toMatchObject({
      plans: 6,
      tables: { ...sum(erased), sessions: 1 },
      forks: { plans: 2, sessions: ['sess-F', 'sess-G'] },
    });
    expect(await all(ds, plans)).toEqual(before);

    const done = await runCli(['sessions', 'purge', 'sess-A', '--include-forks', '--json'], env);
    expect({ code: done.code, stderr: done.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(done.stdout)).toMatchObject({
      plans: 6,
      tables: { ...sum(erased), sessions: 1 },
      forks: { plans: 2, sessions: ['sess-F', 'sess-G'] },
    });
    for (const p of plans)
      expect(await planRows(ds, p.id, 'all')).toEqual(erasedIds.includes(p.id) ? zero() : before[p.id]);
    // the forks' sessions keep their rows (and their other plans)
    expect(await sessionRows(ds, ['sess-A', 'sess-B', 'sess-F', 'sess-G'])).toEqual({
      'sess-A': 0,
      'sess-B': 1,
      'sess-F': 1,
      'sess-G': 1,
    });
  });

  it('says in the text report how many forks in other sessions --include-forks erased', async () => {
    await insertPlans(ds, [
      { id: 'a-root', sessionId: 'sess-A', status: 'completed' },
      { id: 'h-fork', sessionId: 'sess-H', status: 'completed', forkOf: 'a-root' },
    ]);
    const text = await runCli(['sessions', 'purge', 'sess-A', '--include-forks'], q.env({ DATABASE_URL: url }));
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      'session sess-A: 2 plan(s) deleted, 1 of them fork(s) of its plans in other sessions (sess-H), 0 dead letter(s) removed',
    );
  });

  it('retention removes a session once its last plan is purged (dry run counts the same)', async () => {
    const policy = retentionPolicy({ batchSize: 2 });
    const purged = ago(8 * DAY);
    await insertPlans(ds, [
      { id: 'c-gone-1', sessionId: 'sess-C', status: 'completed', deletedAt: purged },
      { id: 'c-gone-2', sessionId: 'sess-C', status: 'completed', deletedAt: purged },
      { id: 'c-orphan', sessionId: 'sess-C', status: 'planning', orphan: true, deletedAt: purged },
      { id: 'd-gone', sessionId: 'sess-D', status: 'completed', deletedAt: purged },
      { id: 'd-kept', sessionId: 'sess-D', status: 'executing' },
    ]);
    const dry = await runRetention(ds, policy, { now: NOW, dryRun: true });
    expect(await sessionRows(ds, ['sess-C', 'sess-D'])).toEqual({ 'sess-C': 1, 'sess-D': 1 });
    const run = await runRetention(ds, policy, { now: NOW });
    expect(run.sessions).toEqual({ purged: 1 });
    expect(dry.sessions).toEqual(run.sessions);
    expect(await sessionRows(ds, ['sess-C', 'sess-D'])).toEqual({ 'sess-C': 0, 'sess-D': 1 });
  });
});
