/**
 * `plan-ledger dlq` as a child process against real Redis and a real (SQLite) database, with dead
 * letters written by the worker's own DeadLetterWriter. No worker runs here: replayed jobs stay on
 * the events queue where the test can read them.
 */
import type { DataSource } from 'typeorm';
import { runCli } from '../support/cli';
import { createMigratedDb } from '../support/databases';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { EVENT_BATCH_JOB } from '../../src/queue/queue-names';
import { QueueFixture, letter } from './dead-letter.fixtures';

let database: { db: { url: string }; ds: DataSource; close(): Promise<void> };
const fixtures: QueueFixture[] = [];

beforeAll(async () => {
  database = await createMigratedDb('sqlite');
});

afterAll(async () => {
  await Promise.all(fixtures.map((f) => f.close()));
  await database.close();
});

function fixture(): QueueFixture {
  const f = new QueueFixture();
  fixtures.push(f);
  return f;
}

const ids = (json: { deadLetters: Array<{ id: string }> }) => json.deadLetters.map((d) => d.id).sort();

describe('plan-ledger dlq list / stats', () => {
  it('selects exactly the entries each filter names, oldest first, and --json parses', async () => {
    const q = fixture();
    const [a, b, c, d, e] = await q.write(
      letter({ kind: 'invalid', type: 'step.started', planId: 'plan_a', lastFailedAt: '2025-01-01T10:00:00.000Z' }),
      letter({
        kind: 'retries-exhausted',
        type: 'step.completed',
        planId: 'plan_a',
        lastFailedAt: '2025-01-02T10:00:00.000Z',
      }),
      letter({
        kind: 'retries-exhausted',
        type: 'plan.created',
        planId: 'plan_b',
        lastFailedAt: '2025-01-03T10:00:00.000Z',
      }),
      letter({
        kind: 'unprocessable',
        type: 'step.completed',
        planId: 'plan_b',
        lastFailedAt: '2025-01-04T10:00:00.000Z',
      }),
      letter({
        kind: 'invalid',
        event: 'not even json',
        type: null,
        planId: null,
        eventId: null,
        lastFailedAt: '2025-01-05T10:00:00.000Z',
      }),
    );
    const env = q.env();
    const cases: Array<[string[], string[]]> = [
      [[], [a, b, c, d, e].map((x) => x.id)],
      [
        ['--type', 'step.completed'],
        [b.id, d.id],
      ],
      [
        ['--type', 'step.started,plan.created'],
        [a.id, c.id],
      ],
      [
        ['--kind', 'invalid'],
        [a.id, e.id],
      ],
      [['--kind', 'retries-exhausted', '--plan', 'plan_b'], [c.id]],
      [
        ['--plan', 'plan_a'],
        [a.id, b.id],
      ],
      [
        ['--since', '2025-01-03T10:00:00Z'],
        [c.id, d.id, e.id],
      ],
      [
        ['--until', '2025-01-03T10:00:00Z'],
        [a.id, b.id],
      ],
      [
        ['--since', '2025-01-02', '--until', '2025-01-04'],
        [b.id, c.id],
      ],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(['dlq', 'list', ...args, '--json'], env)));
    results.forEach((r, i) => {
      expect({ args: cases[i][0], code: r.code, stderr: r.stderr }).toEqual({ args: cases[i][0], code: 0, stderr: '' });
      const json = JSON.parse(r.stdout);
      expect({ args: cases[i][0], ids: ids(json) }).toEqual({ args: cases[i][0], ids: [...cases[i][1]].sort() });
      expect(json.total).toBe(cases[i][1].length);
    });

    const [limited, table] = await Promise.all([
      runCli(['dlq', 'list', '--limit', '2', '--json'], env),
      runCli(['dlq', 'list', '--limit', '2'], env),
    ]);
    expect(JSON.parse(limited.stdout)).toMatchObject({ total: 5, deadLetters: [{ id: a.id }, { id: b.id }] });
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+KIND\s+TYPE\s+PLAN\s+TRIES\s+REPLAYS\s+DEAD-LETTERED\s+ERROR$/);
    expect(lines[1]).toContain(a.id);
    expect(lines[1]).toContain('invalid');
    expect(lines[1]).toContain('2025-01-01T10:00:00Z');
    expect(lines[2]).toContain(b.id);
    expect(lines[3]).toBe('2 of 5 shown; raise --limit to see more');
  });

  it('counts by kind and by type and reports the oldest entry', async () => {
    const q = fixture();
    const [oldest] = await q.write(
      letter({ kind: 'invalid', type: 'step.started', lastFailedAt: '2025-01-01T00:00:00.000Z' }),
      letter({ kind: 'invalid', type: 'step.completed', lastFailedAt: '2025-01-02T00:00:00.000Z' }),
      letter({ kind: 'unprocessable', type: 'step.completed', lastFailedAt: '2025-01-03T00:00:00.000Z' }),
    );
    const [json, text, empty] = await Promise.all([
      runCli(['dlq', 'stats', '--json'], q.env()),
      runCli(['dlq', 'stats'], q.env()),
      runCli(['dlq', 'stats'], fixture().env()),
    ]);
    expect(json.code).toBe(0);
    const stats = JSON.parse(json.stdout);
    expect(stats).toMatchObject({
      total: 3,
      byKind: { invalid: 2, unprocessable: 1 },
      byType: { 'step.started': 1, 'step.completed': 2 },
      oldest: { id: oldest.id, lastFailedAt: '2025-01-01T00:00:00.000Z' },
    });
    expect(stats.oldest.ageSeconds).toBeGreaterThan(86_400);
    expect(text.stdout).toContain('3 dead letters');
    expect(text.stdout).toMatch(new RegExp(`oldest: ${oldest.id}, dead-lettered \\d+d( \\d+h)? ago`));
    expect(text.stdout).toMatch(/step\.completed\s+2/);
    expect(empty.stdout.trim()).toBe('dead-letter queue is empty');
  });
});

describe('plan-ledger dlq purge', () => {
  it('refuses without --yes and removes nothing; with --yes removes exactly the selection', async () => {
    const q = fixture();
    const [old1, old2, recent] = await q.write(
      letter({ kind: 'invalid', lastFailedAt: '2020-01-01T00:00:00.000Z' }),
      letter({ kind: 'invalid', lastFailedAt: '2020-02-01T00:00:00.000Z' }),
      letter({ kind: 'invalid', lastFailedAt: new Date().toISOString() }),
    );
    const before = await q.deadLetterIds();

    const refused = await runCli(['dlq', 'purge', '--older-than', '30d'], q.env());
    expect(refused.code).toBe(2);
    expect(refused.stdout).toContain('would remove 2 dead letters:');
    expect(refused.stdout).toContain(old1.id);
    expect(refused.stdout).not.toContain(recent.id);
    expect(refused.stderr.trim()).toBe('plan-ledger: refusing to purge without --yes; nothing removed (2 would be)');
    const refusedJson = await runCli(['dlq', 'purge', '--all', '--json'], q.env());
    expect(refusedJson.code).toBe(2);
    expect(JSON.parse(refusedJson.stdout)).toMatchObject({ dryRun: true, removed: 0 });
    expect(await q.deadLetterIds()).toEqual(before);

    const purged = await runCli(['dlq', 'purge', '--older-than', '30d', '--yes', '--json'], q.env());
    expect(purged.code).toBe(0);
    const result = JSON.parse(purged.stdout);
    expect(result).toMatchObject({ dryRun: false, removed: 2 });
    expect(result.deadLetters.map((d: { id: string }) => d.id).sort()).toEqual([old1.id, old2.id].sort());
    expect(await q.deadLetterIds()).toEqual([recent.id]);

    const byId = await runCli(['dlq', 'purge', recent.id, '--yes'], q.env());
    expect(byId.code).toBe(0);
    expect(byId.stdout).toContain(`removed 1 dead letter:`);
    expect(byId.stdout).toContain(recent.id);
    expect(await q.deadLetterIds()).toEqual([]);
  });
});

describe('plan-ledger dlq bad input', () => {
  it('answers an unknown id (not found: exit 1), a malformed date or duration and conflicting flags (usage: exit 2) with one line', async () => {
    const q = fixture();
    const [kept] = await q.write(letter());
    const env = q.env({ DATABASE_URL: database.db.url });
    // not found ends with exit 1 in every command (plans show, sessions history, dlq show...)
    const notFound: Array<[string[], string]> = [
      [
        ['dlq', 'show', 'dl-00000000-0000-0000-0000-000000000000'],
        'dead letter dl-00000000-0000-0000-0000-000000000000 not found',
      ],
      [['dlq', 'replay', kept.id, 'dl-missing'], 'dead letter dl-missing not found'],
      [['dlq', 'purge', kept.id, 'dl-gone', '--yes'], 'dead letter dl-gone not found'],
    ];
    const missing = await Promise.all(notFound.map(([args]) => runCli(args, env)));
    missing.forEach((r, i) => {
      const [args, message] = notFound[i];
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 1, stdout: '' });
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(message);
    });
    const cases: Array<[string[], string]> = [
      [['dlq', 'list', '--since', 'yesterday'], '--since: "yesterday" is not an ISO-8601 date or time'],
      [['dlq', 'list', '--until', '2025-02-30'], '--until: "2025-02-30" is not an ISO-8601'],
      [['dlq', 'list', '--since', '0025-01-31'], '--since: "0025-01-31" is before 1970'],
      [['dlq', 'purge', '--older-than', '3x', '--yes'], '--older-than: "3x" is not a positive duration'],
      [['dlq', 'replay', kept.id, '--all'], 'give dead-letter ids or --all, not both'],
      [['dlq', 'replay', '--all', '--kind', 'invalid'], '--all selects every dead letter'],
      [['dlq', 'replay'], 'say which dead letters'],
      [['dlq', 'list', '--kind', 'poison'], '--kind: "poison" is not one of invalid, retries-exhausted, unprocessable'],
      [['dlq', 'replay', '--all', '--batch', '0'], '--batch: "0" must be a whole number'],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(args, env)));
    results.forEach((r, i) => {
      const [args, message] = cases[i];
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(message);
    });
    expect(await q.deadLetterIds()).toEqual([kept.id]);
  });

  it('fails with exit 1 and one line when Redis is unreachable', async () => {
    const r = await runCli(['dlq', 'list'], { REDIS_URL: 'redis://127.0.0.1:1', QUEUE_PREFIX: 'unused' });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(/^plan-ledger: cannot reach Redis at redis:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
  });
});

describe('plan-ledger dlq show / replay without a worker', () => {
  it('shows the error, provenance and the original event', async () => {
    const q = fixture();
    const [dl] = await q.write(letter({ replayCount: 2 }));
    const [text, json] = await Promise.all([
      runCli(['dlq', 'show', dl.id], q.env()),
      runCli(['dlq', 'show', dl.id, '--json'], q.env()),
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`id              ${dl.id}`);
    expect(text.stdout).toContain('kind            retries-exhausted');
    expect(text.stdout).toContain(`source          plan-events job ${dl.source.jobId}`);
    expect(text.stdout).toContain('replay count    2');
    expect(text.stdout).toContain('error: connect ECONNREFUSED 127.0.0.1:5432 (code ECONNREFUSED)');
    expect(text.stdout).toContain(`"eventId": "${dl.eventId}"`);
    expect(JSON.parse(json.stdout)).toEqual(dl);
  });

  it('queues the events in batches with raised replay counts, counts the stored ones, and removes the dead letters', async () => {
    const q = fixture();
    const letters = await q.write(letter(), letter({ replayCount: 1 }), letter());
    const stored = parsePlanEvent(letters[1].event);
    await new PlanEventStore(database.ds).persist([(stored as { event: PlanEvent }).event]);
    const env = q.env({ DATABASE_URL: database.db.url });

    const dry = await runCli(['dlq', 'replay', '--all', '--dry-run', '--json'], env);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({
      dryRun: true,
      selected: 3,
      replayed: 3,
      alreadyStored: 1,
      jobIds: [],
    });
    expect(await q.deadLetterIds()).toHaveLength(3);
    expect(await q.events.count()).toBe(0);

    const run = await runCli(['dlq', 'replay', '--all', '--batch', '2'], env);
    expect(run.code).toBe(0);
    // more than one batch: progress on stderr, as plain lines since stderr is a pipe here
    expect(run.stderr).toBe('replay: 2/3 (66%)\nreplay: 3/3 (100%)\n');
    expect(run.stdout.trim()).toBe(
      'replayed 3 events in 2 jobs; already stored: 1; failed again: not checked (use --wait)',
    );
    expect(await q.deadLetterIds()).toEqual([]);
    const jobs = await q.events.getJobs(['waiting'], 0, -1, true);
    expect(jobs.map((j) => j.name)).toEqual([EVENT_BATCH_JOB, EVENT_BATCH_JOB]);
    expect(jobs.map((j) => j.data)).toEqual([
      { v: 1, events: [letters[0].event, letters[1].event], replayCounts: [1, 2] },
      { v: 1, events: [letters[2].event], replayCounts: [1] },
    ]);
  });
});
