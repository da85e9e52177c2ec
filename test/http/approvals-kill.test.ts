/**
 * Approvals with real processes: a `plan-ledger worker` child and two `plan-ledger serve` children
 * on one database, Redis queue prefix and port each. The answers must hold whatever dies:
 * - the worker killed -9 between the decision and the consume: the consume answers what is
 *   stored (409 undecided while the decision is not, never a 200 without it); after the restart the
 *   decision is stored once and consumed once;
 * - `serve` killed -9 between the decision (through POST /v1/approvals/{id}/decide; the other
 *   cases publish approval.decided with the request's seq) and the consume, or right after a
 *   consume's 200: after the restart one consume answers 200, every other 409 already_consumed;
 * - two consumes racing through the two `serve` processes: one 200, one 409;
 * - consume after expiry, with other arguments, before the decision, after a reject: 409 with its
 *   reason; an edit is consumed with the edited arguments only; a request never stored is 404.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { argsDigest } from '../../src/contracts';
import { freePort } from '../publisher/support/redis-process';
import { APPROVAL_ARGS, APPROVAL_DIGEST, approvalRequested } from '../support/approval-fixtures';
import { createMigratedDb, TestDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';
import { dropPrefix, openRedis, queueCounts, REDIS_URL, uniquePrefix, waitFor } from '../worker/helpers/queue-harness';
import { spawnWorker, stopProcess, WorkerProcess } from '../worker/helpers/worker-process';
import { APPROVE_KEY, APPROVER, call } from './http-harness';
import { ServeProcess } from './serve-process';

// three processes started from the sources, restarted several times, on a loaded machine
jest.setTimeout(1_200_000);

const ARGS = APPROVAL_ARGS;
const DIGEST = APPROVAL_DIGEST;
const OTHER_DIGEST = argsDigest({ ...ARGS, subject: 'rollback' });
const START_MS = 300_000;

describe.each<TestDb>(['sqlite', 'postgres', 'mariadb'])(
  'approvals with killed worker and serve processes (%s)',
  (kind) => {
    let db: Awaited<ReturnType<typeof createMigratedDb>>;
    let worker: WorkerProcess | undefined;
    let serveA: ServeProcess;
    let serveB: ServeProcess;
    let env: Record<string, string>;
    const prefix = uniquePrefix('apkill');
    const dirs: string[] = [];
    const plan = `apk-plan-${kind}`;
    let seq = 0;

    const tmp = () => {
      const d = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-apkill-'));
      dirs.push(d);
      return d;
    };
    const at = (serve: ServeProcess) => ({ server: { url: serve.url } });

    async function startWorkerProcess(): Promise<void> {
      // a killed worker's active job comes back after its lock: short, so the test waits seconds
      worker = spawnWorker({ ...env, WORKER_LOCK_MS: '3000' });
      await worker.waitForLog('worker started', START_MS);
    }

    const ev = (type: string, payload: object, at: number) =>
      parsedEvent({ planId: plan, sessionId: 'apk-sess', seq: at, type, payload, occurredAt: new Date() });

    async function send(serve: ServeProcess, ...events: object[]): Promise<void> {
      const answer = await call(at(serve), 'POST', '/v1/events', { body: events });
      if (answer.status >= 300) throw new Error(`POST /v1/events answered ${answer.status}: ${answer.text}`);
    }

    /** Publishes a request (a seq of its own) and returns that seq, for its decision. */
    async function request(approvalId: string, expiresInMs = 3_600_000): Promise<number> {
      const s = ++seq;
      await send(serveA, ev('approval.requested', approvalRequested(approvalId, { expiresInMs }), s));
      return s;
    }

    /** A decision, as the decide endpoint stores it: an approval.decided with the request's seq. */
    const decision = (approvalId: string, requestSeq: number, decided: string, extra: object = {}) =>
      ev('approval.decided', { approvalId, decision: decided, decidedBy: 'alice', ...extra }, requestSeq);

    async function statusOf(approvalId: string): Promise<string | undefined> {
      const [row] = await db.ds.query(
        `SELECT decision, consumed_at FROM approvals WHERE approval_id = ${kind === 'postgres' ? '$1' : '?'}`,
        [approvalId],
      );
      if (!row) return undefined;
      if (row.consumed_at !== null) return 'consumed';
      return row.decision === null ? 'pending' : 'decided';
    }

    async function reaches(approvalId: string, ...statuses: string[]): Promise<void> {
      await waitFor(
        `approval ${approvalId} ${statuses.join(' or ')}`,
        async () => statuses.includes((await statusOf(approvalId)) ?? 'absent'),
        120_000,
        50,
      );
    }

    const consume = (serve: ServeProcess, approvalId: string, digest = DIGEST) =>
      call(at(serve), 'POST', `/v1/approvals/${approvalId}/consume`, {
        body: { argsDigest: digest, consumer: 'exec' },
      });

    async function answer(serve: ServeProcess, approvalId: string, digest = DIGEST): Promise<string> {
      const a = await consume(serve, approvalId, digest);
      return a.status === 200 ? `200 ${a.json.decision}` : `${a.status} ${a.json?.reason}`;
    }

    beforeAll(async () => {
      db = await createMigratedDb(kind);
      env = { REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url };
      const approve = { HTTP_APPROVE_KEYS: `${APPROVER}:${APPROVE_KEY}` };
      serveA = new ServeProcess(await freePort(), { ...env, ...approve, HTTP_JOURNAL_DIR: tmp() });
      serveB = new ServeProcess(await freePort(), { ...env, ...approve, HTTP_JOURNAL_DIR: tmp() });
      await Promise.all([startWorkerProcess(), serveA.start(), serveB.start()]);
      await send(
        serveA,
        ev('plan.created', { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] }, 0),
      );
    });

    afterAll(async () => {
      await serveA?.kill();
      await serveB?.kill();
      await stopProcess(worker);
      const redis = openRedis();
      await dropPrefix(redis, prefix).catch(() => undefined);
      redis.disconnect();
      await db?.close();
      for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    });

    it('worker killed -9 right after the decision is accepted: never 200 without it, then 200 once after the restart', async () => {
      // kill points: at once after the 2xx (the decision may not be stored), and once it is stored
      for (const [i, waitStored] of [false, true].entries()) {
        const id = `apk_worker_${i}`;
        const s = await request(id);
        await reaches(id, 'pending');
        await send(serveA, decision(id, s, 'approve'));
        if (waitStored) await reaches(id, 'decided');
        await stopProcess(worker);
        const stored = await statusOf(id);
        if (process.env.PLAN_LEDGER_REPORT) process.stdout.write(`APPROVALS KILL9 ${kind} ${id}: ${stored}\n`);
        const answers = [await answer(serveB, id)];
        // fail closed: with the worker dead, the answer is what the database holds
        expect(answers[0]).toBe(stored === 'decided' ? '200 approve' : '409 undecided');
        await startWorkerProcess();
        await reaches(id, 'decided', 'consumed');
        answers.push(await answer(serveA, id), await answer(serveB, id));
        expect(answers.filter((a) => a === '200 approve')).toHaveLength(1);
        expect(answers.slice(answers.indexOf('200 approve') + 1)).toEqual(
          answers.slice(answers.indexOf('200 approve') + 1).map(() => '409 already_consumed'),
        );
        // the killed worker's job (if it held one) is redelivered after its lock: once the queue
        // is empty, the decision was stored once and did not undo the consume
        const redis = openRedis();
        try {
          await waitFor(
            'the events queue to be empty',
            async () => {
              const c = await queueCounts(redis, prefix);
              return c.wait + c.active + c.delayed + c.prioritized === 0;
            },
            120_000,
            100,
          );
        } finally {
          redis.disconnect();
        }
        expect(await statusOf(id)).toBe('consumed');
        const [row] = await db.ds.query(
          `SELECT decided_by, consumed_by FROM approvals WHERE approval_id = ${kind === 'postgres' ? '$1' : '?'}`,
          [id],
        );
        expect(row).toEqual({ decided_by: 'alice', consumed_by: 'exec' });
      }
    });

    it('serve killed -9 between decision and consume, and after a 200: after the restart one 200, then 409 already_consumed', async () => {
      const id = 'apk_serve_1';
      await request(id);
      await reaches(id, 'pending');
      // decided through the decide endpoint: 202 once the approval.decided event is durable
      const decided = await call(at(serveA), 'POST', `/v1/approvals/${id}/decide`, {
        key: APPROVE_KEY,
        body: { decision: 'approve', feedback: 'ok' },
      });
      expect([decided.status, decided.json.decidedBy]).toEqual([202, APPROVER]);
      // the 2xx means durable: the killed server's decision is stored all the same
      await serveA.kill();
      await reaches(id, 'decided');
      await serveA.start();
      expect(await answer(serveA, id)).toBe('200 approve');
      // killed right after answering 200: the restarted server (and the other one) refuse
      await serveA.kill();
      await serveA.start();
      expect([await answer(serveA, id), await answer(serveB, id)]).toEqual([
        '409 already_consumed',
        '409 already_consumed',
      ]);
      const again = await consume(serveA, id);
      expect(again.json.error).toBe(`approval ${id} was consumed already: a decision is answered once`);
    });

    it('two consumes racing through two serve processes: one 200, one 409 already_consumed', async () => {
      const ids = [0, 1, 2, 3, 4].map((i) => `apk_race_${i}`);
      for (const id of ids) {
        const s = await request(id);
        await send(serveA, decision(id, s, 'approve'));
      }
      for (const id of ids) await reaches(id, 'decided');
      for (const id of ids) {
        const answers = await Promise.all([answer(serveA, id), answer(serveB, id)]);
        expect(answers.sort()).toEqual(['200 approve', '409 already_consumed']);
      }
    });

    it('refuses before the decision, other arguments, after expiry and a reject; an edit with its digest only; 404 never requested', async () => {
      const early = await request('apk_early');
      const edited = await request('apk_edit');
      const expiring = await request('apk_expiring', 4_000);
      const rejected = await request('apk_rejected');
      for (const id of ['apk_early', 'apk_edit', 'apk_expiring', 'apk_rejected']) await reaches(id, 'pending');
      expect(await answer(serveB, 'apk_early')).toBe('409 undecided');
      await send(
        serveA,
        decision('apk_early', early, 'approve'),
        decision('apk_edit', edited, 'edit', { editedArgsDigest: OTHER_DIGEST }),
        decision('apk_expiring', expiring, 'approve'),
        decision('apk_rejected', rejected, 'reject'),
      );
      for (const id of ['apk_early', 'apk_edit', 'apk_expiring', 'apk_rejected']) await reaches(id, 'decided');
      // a refused consume changes nothing: the right arguments still get their one 200
      expect(await answer(serveB, 'apk_early', OTHER_DIGEST)).toBe('409 args_mismatch');
      expect(await answer(serveA, 'apk_early')).toBe('200 approve');
      expect(await answer(serveA, 'apk_edit')).toBe('409 args_mismatch');
      expect(await answer(serveB, 'apk_edit', OTHER_DIGEST)).toBe('200 edit');
      expect(await answer(serveA, 'apk_rejected')).toBe('409 rejected');
      await waitFor(
        'apk_expiring to expire',
        async () => (await answer(serveB, 'apk_expiring', OTHER_DIGEST)) === '409 expired',
        30_000,
        200,
      );
      expect(await answer(serveA, 'apk_expiring')).toBe('409 expired');
      const ghost = await consume(serveB, 'apk_never_requested');
      expect([ghost.status, ghost.json.reason]).toEqual([404, 'not_found']);
    });
  },
);
