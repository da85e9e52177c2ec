/**
 * A Python executor (clients/python) requests, waits for and consumes approvals against a real
 * serve, worker, Redis and database: the call runs only after a consume answered, once; a second
 * consume, a rejection and an expiry are refused with their reason. The decisions are published
 * with the request's seq by a TypeScript publisher, as a reviewer's tool does (docs/approvals.md).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PlanEventPublisher } from '../../src/publisher';
import { ENTITY, type ApprovalRow } from '../../src/store/entities';
import { TestDb } from '../support/databases';
import { REDIS_URL, silentLogger } from '../worker/helpers/queue-harness';
import { ApiStack, startApiStack } from './http-harness';
import { kill, lineWhere, python, PyRun } from './python/py-run';

jest.setTimeout(180_000);

const SCRIPT = path.join(__dirname, 'python', 'approval_executor.py');

describe.each<TestDb>(['sqlite', 'postgres'])('a Python executor asks, waits and consumes on %s', (kind) => {
  let stack: ApiStack;
  let reviewer: PlanEventPublisher;
  let run: PyRun | undefined;
  const dirs: string[] = [];
  const tmp = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-py-approvals-'));
    dirs.push(d);
    return d;
  };

  beforeAll(async () => {
    stack = await startApiStack(kind);
    reviewer = new PlanEventPublisher({
      redisUrl: REDIS_URL,
      queuePrefix: stack.prefix,
      journalDir: tmp(),
      logger: silentLogger(),
    });
  });
  afterAll(async () => {
    if (run) kill(run);
    await reviewer?.close();
    await stack?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('runs the call once after an approval; refuses a second consume, a rejection, an expiry and an unknown id', async () => {
    const planId = `py-appr-${kind}`;
    const plan = { planId, sessionId: 'py-approvals' };
    run = python([SCRIPT, stack.server.url, tmp(), planId]);
    const decide = async (label: string, decision: 'approve' | 'reject', feedback: string) => {
      const line = await lineWhere(run!, (l) => l.requested === label, 120_000);
      // the executor is already waiting (or about to): decide a moment later, as a reviewer would
      await new Promise((r) => setTimeout(r, 300));
      const r = reviewer.approvalDecided(
        plan,
        { approvalId: String(line.approvalId), decision, decidedBy: 'alice', feedback },
        { seq: Number(line.seq) },
      );
      expect(r.ok).toBe(true);
    };

    await decide('A', 'approve', 'ship it');
    const a = await lineWhere(run, (l) => l.step === 'A', 120_000);
    expect(a).toEqual({
      step: 'A',
      status: 'decided',
      decision: 'approve',
      decidedBy: 'alice',
      feedback: 'ship it',
      runs: 1,
      again: {
        status: 409,
        reason: 'already_consumed',
        message: expect.stringContaining('consumed already'),
      },
      runsAfter: 1,
    });

    await decide('B', 'reject', 'not today');
    const b = await lineWhere(run, (l) => l.step === 'B', 120_000);
    expect(b).toEqual({
      step: 'B',
      status: 'decided',
      decision: 'reject',
      refused: { status: 409, reason: 'rejected', message: expect.stringContaining('rejected') },
      runs: 1,
    });

    const c = await lineWhere(run, (l) => l.step === 'C', 120_000);
    expect(c).toEqual({
      step: 'C',
      first: 'pending',
      second: 'expired',
      refused: { status: 409, reason: 'expired', message: expect.stringContaining('expired') },
      runs: 1,
    });

    const d = await lineWhere(run, (l) => l.step === 'D', 120_000);
    expect(d.refused).toEqual({ status: 404, reason: 'not_found', message: expect.stringContaining('py_ghost') });
    const { code, stderr } = await run.exited;
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });

    // what the ledger stored: A consumed by the Python executor, B decided and never consumed
    const stored = await stack.db.ds
      .getRepository<ApprovalRow>(ENTITY.approval)
      .find({ where: { planId }, order: { requestedAt: 'ASC' } });
    expect(stored.map((r) => [r.decision, r.consumedBy])).toEqual([
      ['approve', 'py-executor'],
      ['reject', null],
      [null, null],
    ]);
  });
});
