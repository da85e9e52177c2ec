import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort } from '../publisher/support/redis-process';
import { TestDb } from '../support/databases';
import { ApiStack, startApiStack } from './http-harness';
import { driver, eventCounts, kill, lineWhere, storedSeqs } from './python/py-run';

jest.setTimeout(120_000);

/**
 * What a crash of a Python executor loses, as clients/python/README.md states it: the kill -9
 * scenarios publish one plan (40 events, 2 ms apart) and are killed 0, 20 or 100 ms after the last
 * publish; what the database then holds (after a new process drained the journal, when the server
 * was down) must be a prefix of the plan (seq 0..k-1: nothing out of order, nothing twice), and all
 * of it where the README promises it.
 */
const N = 40;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

async function settled(stack: ApiStack): Promise<void> {
  expect(await stack.server.flush(30_000)).toBe(true);
  expect(await stack.worker!.idle(30_000)).toBe(true);
}

describe.each<[TestDb, 'up' | 'down']>([
  ['postgres', 'up'],
  ['sqlite', 'down'],
])('a Python executor killed (%s, server %s)', (kind, server) => {
  let stack: ApiStack;
  const dirs: string[] = [];
  const tmp = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-pykill-'));
    dirs.push(d);
    return d;
  };
  beforeAll(async () => {
    stack = await startApiStack(kind);
  });
  afterAll(async () => {
    await stack?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it.each([0, 20, 100])(`by kill -9 %i ms after its last publish keeps what the README promises`, async (delayMs) => {
    const planId = `kill-${server}-${delayMs}`;
    const journal = tmp();
    // server down: a port nobody listens on, and a 20 ms group commit (the README's window is journal_commit_ms plus
    // one write)
    const url = server === 'up' ? stack.server.url : `http://127.0.0.1:${await freePort()}`;
    const run = driver('kill', url, journal, planId, N, 20);
    try {
      await lineWhere(run, (l) => l.published === N);
      if (delayMs > 0) await sleep(delayMs);
      kill(run);
      expect((await run.exited).signal).toBe('SIGKILL');
    } finally {
      kill(run);
    }
    if (server === 'down') {
      const drain = driver('drain', stack.server.url, journal);
      const { code, stderr } = await drain.exited;
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    }
    await settled(stack);
    const seqs = await storedSeqs(stack, planId);
    if (process.env.PLAN_LEDGER_REPORT) process.stdout.write(`KILL ${server} ${delayMs} ms: ${seqs.length}/${N}\n`);
    expect(seqs).toEqual(range(seqs.length)); // a prefix, each event once
    // server up: what was published 20 ms before the kill was sent; down: 100 ms is past the 20 ms commit and its write
    const promised = server === 'up' ? delayMs >= 20 : delayMs >= 100;
    if (promised) expect(seqs).toHaveLength(N);
  });

  it('by SIGTERM with the handler installed delivers or journals everything it holds, then dies by SIGTERM', async () => {
    const planId = `term-${server}`;
    const journal = tmp();
    if (server === 'up') {
      // a burst, then SIGTERM at once: whatever is still in memory is delivered by the handler's close
      const run = driver('burst', stack.server.url, journal, planId, 2_000);
      await lineWhere(run, (l) => l.published === 2_000);
      run.child.kill('SIGTERM');
      const { signal, stderr } = await run.exited;
      expect({ signal, stderr }).toEqual({ signal: 'SIGTERM', stderr: '' });
      await settled(stack);
      expect(await storedSeqs(stack, planId)).toEqual(range(2_000));
      return;
    }
    // server down: 99 of the 100 events wait in memory (the group commit is an hour away) until SIGTERM
    const run = driver('sigterm', `http://127.0.0.1:${await freePort()}`, journal, planId, 100, 'default');
    const published = await lineWhere(run, (l) => l.published === 100);
    expect(published).toMatchObject({ buffered: 99, journaled: 1 });
    run.child.kill('SIGTERM');
    expect((await run.exited).signal).toBe('SIGTERM');
    const drain = driver('drain', stack.server.url, journal);
    await drain.exited;
    expect(drain.lines()[0]).toMatchObject({ flushed: true, accepted: 100 });
    await settled(stack);
    expect(await storedSeqs(stack, planId)).toEqual(range(100));
  });

  it("by SIGTERM runs the application's own handler after the close (chained, not replaced)", async () => {
    const planId = `chain-${server}`;
    const journal = tmp();
    const run = driver('sigterm', `http://127.0.0.1:${await freePort()}`, journal, planId, 50, 'chain'); // the server down: held in memory
    await lineWhere(run, (l) => l.published === 50);
    run.child.kill('SIGTERM');
    const { code } = await run.exited;
    expect(code).toBe(7); // the application's handler ended the process
    expect(run.lines().find((l) => l.app_handler)).toEqual({ app_handler: true, journaled: 50, buffered: 0 });
    const drain = driver('drain', stack.server.url, journal);
    await drain.exited;
    await settled(stack);
    expect(await storedSeqs(stack, planId)).toEqual(range(50));
  });

  it('after a kill in the middle of a journal write (a torn last line), the next client cuts it and its own events are stored', async () => {
    const planId = `torn-${server}`;
    const run = driver('torn', stack.server.url, tmp(), planId, 30);
    const { code, stderr } = await run.exited;
    expect(code).toBe(0);
    expect(stderr).toMatch(/cut \d+ byte\(s\) of a torn last line/);
    expect(run.lines()[0]).toMatchObject({
      flushed: true,
      accepted: 31,
      lost: 0,
      sender_errors: 0,
      torn_bytes: expect.any(Number),
    });
    await settled(stack);
    expect(await storedSeqs(stack, planId)).toEqual(range(30));
    expect(await eventCounts(stack, `${planId}-old`)).toEqual({ rows: 1, distinct: 1 });
  });
});
