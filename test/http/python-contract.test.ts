import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { TestDb } from '../support/databases';
import { openRedis, readDeadLetters } from '../worker/helpers/queue-harness';
import { ApiStack, startApiStack } from './http-harness';
import { driver, storedSeqs } from './python/py-run';

jest.setTimeout(120_000);

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe.each<TestDb>(['sqlite', 'postgres'])(
  'the Python client checks, encodes and reads its own writes (%s)',
  (kind) => {
    let stack: ApiStack;
    const dirs: string[] = [];
    const tmp = () => {
      const d = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-pycontract-'));
      dirs.push(d);
      return d;
    };
    beforeAll(async () => {
      // a gap is waited for forever: a refused event's seq must be voided, never timed out
      stack = await startApiStack(kind, { workerSettings: { gapTimeoutMs: 0 } });
    });
    afterAll(async () => {
      await stack?.close();
      for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    });

    it('refuses every value JSON cannot hold at the call, with its path and no seq, and stores all its valid neighbours', async () => {
      const planId = `bad-values-${kind}`;
      const run = driver('bad', stack.server.url, tmp(), planId);
      const { code, stderr } = await run.exited;
      expect(code).toBe(0);
      const refusals = run.lines().filter((l) => l.value !== undefined);
      expect(refusals).toHaveLength(14);
      for (const r of refusals) expect(r).toMatchObject({ ok: false, reason: 'invalid', seq: null });
      const byValue = (value: string, where: string) =>
        (refusals.find((r) => r.value === value && r.where === where)!.violations as string[]).join('; ');
      expect(byValue('lone surrogate', 'state')).toMatch(
        /^payload\.state\.bad: contains the lone surrogate U\+DCFF at index 5, which strict UTF-8 cannot encode/,
      );
      expect(byValue('lone surrogate', 'field')).toMatch(/^payload\.error: contains the lone surrogate U\+DCFF/);
      expect(byValue('datetime', 'state')).toBe('payload.state.bad: Object of type datetime is not JSON serializable');
      expect(byValue('datetime', 'field')).toBe(
        'payload.inputTokens: Object of type datetime is not JSON serializable',
      );
      expect(byValue('set', 'state')).toBe('payload.state.bad: Object of type set is not JSON serializable');
      expect(byValue('bytes', 'state')).toBe('payload.state.bad: Object of type bytes is not JSON serializable');
      expect(byValue('Decimal', 'field')).toBe('payload.inputTokens: Object of type Decimal is not JSON serializable');
      expect(byValue('NaN', 'state')).toBe('payload.state.bad: Out of range float values are not JSON compliant: nan');
      expect(byValue('Infinity', 'field')).toBe(
        'payload.inputTokens: Out of range float values are not JSON compliant: inf',
      );
      // 1 plan.created + 7 x (step.started + checkpoint) + plan.finalized, seqs without a gap; the sender alive to
      // the end
      const summary = run.lines().find((l) => l.stored !== undefined)!;
      expect(summary).toEqual({
        stored: true,
        last_seq: 15,
        alive: true,
        invalid: 0,
        unencodable: 14,
        accepted: 16,
        rejected: 0,
        dropped: 0,
        lost: 0,
        sender_errors: 0,
      });
      expect(await storedSeqs(stack, planId)).toEqual(range(16));
      // read at once after flush(stored=True): the plan is finished
      const [plan] = await stack.db.ds.query(`SELECT status FROM execution_plans WHERE id = '${planId}'`);
      expect(plan.status).toBe('completed');
      expect(stderr).toContain('plan-ledger refused an event at publish(): checkpoint.saved of plan bad-values-');
    });

    it('a refused event in the middle of a plan (an edit with a dependency cycle, which only the server checks) does not hold back its later events', async () => {
      const planId = `refused-edit-${kind}`;
      const run = driver('refused', stack.server.url, tmp(), planId);
      const { code, stderr } = await run.exited;
      expect(code).toBe(0);
      const out = run.lines()[0];
      // the plan's later events were applied past the voided seq, with the worker told to wait for a gap forever
      expect(out).toMatchObject({
        refused_ok: true,
        refused_seq: 1,
        last_seq: 7,
        stored: true,
        status: 'completed',
        completed: 2,
        decisions: ['approve'],
        accepted: 7,
        rejected: 1,
        dropped: 0,
        lost: 0,
      });
      expect(stderr).toMatch(
        /plan-ledger server refused an event: plan\.decision of plan refused-edit-\w+, seq 1, eventId [0-9a-f-]{36}: .*cycle/,
      );
      expect(await storedSeqs(stack, planId)).toEqual([0, 2, 3, 4, 5, 6, 7]);
      const redis = openRedis();
      try {
        const letters = (await readDeadLetters(redis, stack.prefix)).filter((l) => l.eventId === out.refused_id);
        expect(letters).toHaveLength(1);
        expect(letters[0]).toMatchObject({ kind: 'invalid', planId });
      } finally {
        redis.disconnect();
      }
    });

    it('reads its own writes after flush(stored=True), with typed results that keep dict access', async () => {
      const session = `reads-${kind}`;
      const run = driver('reads', stack.server.url, tmp(), session);
      const { code, stderr } = await run.exited;
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.lines()[0]).toEqual({
        before: null, // a session never seen has no active plan
        stored: true,
        active: {
          plan_id: `${session}-plan`,
          completed: 1,
          next_seq: 4,
          steps: [
            ['a', 'completed'],
            ['b', 'pending'],
          ],
        },
        same_as_dict: true,
        decision: {
          decision: 'edit',
          changed: ['b'],
          removed: ['c'],
          replaced: [
            ['b', 'x', 'second'],
            ['c', 'x', 'third'],
          ],
        },
        page: { total: 1, plans: [`${session}-plan`] },
        resume: { next_seq: 4, resumable: true },
        output: 'A',
        // gpt-4o at $2.50/$10 per Mtok: 3 in, 4 out; exact, as a Decimal
        cost: {
          plan: '0.0000475',
          is_decimal: true,
          step: [
            ['a', '0.0000475', 'table'],
            ['b', null, null],
          ],
        },
      });
    });
  },
);
