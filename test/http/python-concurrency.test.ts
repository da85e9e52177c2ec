import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, startApiStack } from './http-harness';
import { driver, eventCounts, lineWhere, storedSeqs } from './python/py-run';

jest.setTimeout(120_000);

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

async function perPlan(stack: ApiStack, like: string): Promise<[number, number, number][]> {
  const rows = await stack.db.ds.query(
    `SELECT plan_id, COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi FROM plan_events WHERE plan_id LIKE '${like}' GROUP BY plan_id`,
  );
  return rows.map((p: { n: unknown; lo: unknown; hi: unknown }) => [Number(p.n), Number(p.lo), Number(p.hi)]);
}

describe('the Python client from asyncio tasks, forked processes, and across a server restart', () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-pyconc-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('stores 10,000 events published from 4 asyncio tasks exactly once, each plan with seq 0..n-1 (PostgreSQL)', async () => {
    const stack = await startApiStack('postgres');
    try {
      const run = driver('asyncio', stack.server.url, tmp(), 10_000, 4);
      const { code, stderr } = await run.exited;
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      // flush(stored=True) returned true: every event is applied when the driver says so
      expect(run.lines()[0]).toEqual({
        stored: true,
        accepted: 10_000,
        rejected: 0,
        dropped: 0,
        lost: 0,
        sender_errors: 0,
      });
      expect(await eventCounts(stack, 'a%-plan-%')).toEqual({ rows: 10_000, distinct: 10_000 });
      const plans = await perPlan(stack, 'a%-plan-%');
      expect(plans).toHaveLength(100);
      for (const p of plans) expect(p).toEqual([100, 0, 99]);
    } finally {
      await stack.close();
    }
  });

  it('a client created before fork() sends from each child with a sender of its own; the parent keeps its own events (SQLite)', async () => {
    const stack = await startApiStack('sqlite');
    try {
      const run = driver('fork', stack.server.url, tmp());
      const { code, stderr } = await run.exited;
      // a healthy server: no process logs a warning (an outage, a survived error) nor a traceback
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      const out = run.lines()[0];
      expect(out).toMatchObject({
        exitcodes: [0, 0, 0],
        flushed: true,
        accepted: 200,
        rejected: 0,
        dropped: 0,
        lost: 0,
      });
      // each child delivered its own 50 events, none of the parent's buffered ones
      expect(out.children).toEqual(
        [0, 1].map((child) => ({
          child,
          flushed: true,
          accepted: 50,
          rejected: 0,
          dropped: 0,
          lost: 0,
          sender_errors: 0,
        })),
      );
      await waitFor('every plan stored', async () => (await eventCounts(stack, 'f%')).rows >= 350, 60_000);
      expect(await stack.worker!.idle(30_000)).toBe(true);
      for (const plan of ['fparent-a', 'fparent-b']) expect(await storedSeqs(stack, plan)).toEqual(range(100));
      for (const plan of ['fchild-0', 'fchild-1', 'fraw']) expect(await storedSeqs(stack, plan)).toEqual(range(50));
      expect(await eventCounts(stack, 'f%')).toEqual({ rows: 350, distinct: 350 });
    } finally {
      await stack.close();
    }
  });

  it('stores every event exactly once when the server restarts mid-stream (PostgreSQL)', async () => {
    const stack = await startApiStack('postgres');
    try {
      const run = driver('stream', stack.server.url, tmp(), 20, 4_000);
      await lineWhere(run, (l) => Number(l.published) >= 1_000, 60_000);
      await stack.stopServer();
      await lineWhere(run, (l) => Number(l.published) >= 2_000, 60_000); // published while the server is down
      await stack.startServer();
      const { code, stderr } = await run.exited;
      expect(code).toBe(0);
      const out = run.lines().find((l) => l.flushed !== undefined)!;
      expect(out).toMatchObject({
        flushed: true,
        published: 4_000,
        accepted: 4_000,
        rejected: 0,
        dropped: 0,
        lost: 0,
        sender_errors: 0,
      });
      expect(Number(out.journaled)).toBeGreaterThan(0); // the outage went through the journal
      expect(stderr).toMatch(/server unreachable/);
      await waitFor('4000 events stored', async () => (await eventCounts(stack, 'stream-%')).rows >= 4_000, 60_000);
      expect(await stack.worker!.idle(30_000)).toBe(true);
      expect(await eventCounts(stack, 'stream-%')).toEqual({ rows: 4_000, distinct: 4_000 });
      const plans = await perPlan(stack, 'stream-%');
      expect(plans).toHaveLength(20);
      for (const p of plans) expect(p).toEqual([200, 0, 199]);
    } finally {
      await stack.close();
    }
  });
});
