import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { TestDb } from '../support/databases';
import { ApiStack, startApiStack } from './http-harness';
import { loadConfig } from '../../src/config/config';
import { startWorker, WorkerHandle } from '../../src/worker';
import { REDIS_URL, silentLogger } from '../worker/helpers/queue-harness';
import { driver, eventCounts, lineWhere } from './python/py-run';

jest.setTimeout(300_000);

/**
 * Ordinary process lifecycles of a Python executor, against a real serve, worker and database:
 * a fork pool torn down while its workers' clients close, and a restarted executor reading its
 * session back (read your writes across the process boundary).
 */
describe.each<TestDb>(['sqlite', 'postgres'])('Python executors coming and going (%s)', (kind) => {
  let stack: ApiStack;
  let worker: WorkerHandle | undefined;
  const dirs: string[] = [];
  const tmp = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-pylife-'));
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

  it("a fork pool's workers keep every accepted event across the pool's teardown (4 workers x 8 tasks x 200 events, the parent's SIGTERM handler installed)", async () => {
    const journal = tmp();
    const run = driver('pool', stack.server.url, journal, `pool-${kind}`);
    const { code, stderr } = await run.exited;
    expect({ code, stderr: stderr.replace(/^.*INFO.*$/gm, '').trim() }).toEqual({ code: 0, stderr: '' });
    expect(run.lines()[0]).toMatchObject({ tasks: [0, 1, 2, 3, 4, 5, 6, 7], lost: 0, dropped: 0 });
    // what a terminated worker journaled is delivered by the next client on the directory (it adopts the forks' journals)
    const drain = driver('drain', stack.server.url, journal);
    expect((await drain.exited).code).toBe(0);
    expect(await stack.server.flush(30_000)).toBe(true);
    expect(await stack.worker!.idle(30_000)).toBe(true);
    expect(await eventCounts(stack, `pool-${kind}-%`)).toEqual({ rows: 1_600, distinct: 1_600 });
  });

  it("read your writes across restarts: A publishes and exits, B's flush(stored=True) then a read sees A's plan, 20 times of 20", async () => {
    // no worker until B waits: A's plan is stored only after B started, the case a fast worker hides
    await stack.worker!.close(10_000);
    const journal = tmp();
    const seen: Array<string | null> = [];
    try {
      for (let round = 0; round < 20; round++) {
        const session = `ryw-${kind}-${round}`;
        const a = driver('ryw-a', stack.server.url, journal, session);
        expect((await a.exited).code).toBe(0);
        expect(a.lines()[0]).toEqual({ closed: true });
        const b = driver('ryw-b', stack.server.url, journal, session);
        await lineWhere(b, (l) => l.flushing === true);
        worker = await startWorker({
          config: loadConfig({ REDIS_URL, QUEUE_PREFIX: stack.prefix, DATABASE_URL: stack.db.db.url }),
          dataSource: stack.db.ds,
          logger: silentLogger(),
          settings: { healthPort: null },
        });
        const { code, stderr } = await b.exited;
        await worker.close(10_000);
        worker = undefined;
        expect({ round, code, stderr: stderr.replace(/^.*INFO.*$/gm, '').trim() }).toEqual({
          round,
          code: 0,
          stderr: '',
        });
        const line = b.lines().find((l) => l.stored !== undefined) as { stored: boolean; active: string | null };
        expect(line.stored).toBe(true);
        seen.push(line.active);
      }
    } finally {
      await worker?.close(10_000);
    }
    expect(seen).toEqual(Array.from({ length: 20 }, (_, round) => `ryw-${kind}-${round}-plan`));
  });
});
