import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { openDataSource } from '../../src/store/data-source';
import { moneyFromColumn } from '../../src/pricing';
import { runCli } from '../support/cli';
import { createThrowawayDb, ThrowawayDb } from '../support/databases';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

// The README's first command, as a newcomer runs it (here on a throwaway SQLite file and prefix).
describe('plan-ledger demo', () => {
  let db: ThrowawayDb;
  const prefix = `test-demo-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    db = await createThrowawayDb('sqlite');
  });
  afterAll(async () => {
    const redis = new IORedis(REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
    await db.drop();
  });

  it('stores a multi-agent run, dead-letters the poison event and prints the timeline', async () => {
    const result = await runCli(
      ['demo', '--pace', '0'],
      { DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: prefix },
      90_000,
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('[4/4] waiting for the worker');
    expect(result.stderr).toContain('stored 21/21, dead letters 1');
    expect(result.stdout).toMatch(/plan demo-plan-[0-9a-f]{6} {2}FAILED/);
    expect(result.stdout).toContain('#4 FAILED       fact-checker');
    expect(result.stdout).toContain('(invalid): payload.stepId is required; payload.inputTokens must be at least 0');
    const planId = /plan (demo-plan-[0-9a-f]{6})/.exec(result.stdout)![1];

    const ds: DataSource = await openDataSource(parseDatabaseUrl(db.url));
    try {
      const [plan] = await ds.query(
        `SELECT status, approval_status, total_steps, completed_steps, failed_steps, skipped_steps, total_input_tokens FROM execution_plans WHERE id = ?`,
        [planId],
      );
      expect(plan).toEqual({
        status: 'failed',
        approval_status: 'edited',
        total_steps: 6,
        completed_steps: 4,
        failed_steps: 1,
        skipped_steps: 1,
        total_input_tokens: 9600,
      });
      // the 21 events, and the voided seq recording the poison event's refusal
      const counts = await ds.query(
        `SELECT type = 'seq.voided' AS voided, COUNT(*) AS n FROM plan_events WHERE plan_id = ? GROUP BY type = 'seq.voided' ORDER BY 1`,
        [planId],
      );
      expect(counts).toEqual([
        { voided: 0, n: 21 },
        { voided: 1, n: 1 },
      ]);
      // the output is stored once, in the log: the step row names the event that holds it
      const [write] = await ds.query(
        `SELECT s.output_content, e.payload FROM plan_steps s JOIN plan_events e ON e.event_id = s.output_event_id WHERE s.plan_id = ? AND s.step_key = 'write'`,
        [planId],
      );
      expect(write.output_content).toBeNull();
      expect(JSON.parse(write.payload).outputContent).toContain('## Bibliography');
      // what the plan cost, as printed and as stored: every step of the demo has a known price
      const [cost] = await ds.query(`SELECT total_cost, unpriced_steps FROM execution_plans WHERE id = ?`, [planId]);
      expect(cost.unpriced_steps).toBe(0);
      const printed = /^ {2}cost {15}\$(\d+\.\d+) USD, each step at the price in force when it ran$/m.exec(
        result.stdout,
      );
      expect(printed).not.toBeNull();
      expect(moneyFromColumn(printed![1])).toBe(moneyFromColumn(cost.total_cost));
      expect(moneyFromColumn(cost.total_cost)).toBeGreaterThan(0n);
    } finally {
      await ds.destroy();
    }
  });

  it('says in one line how to start Redis when it is not running', async () => {
    const result = await runCli(['demo'], {
      DATABASE_URL: db.url,
      REDIS_URL: 'redis://127.0.0.1:1',
      QUEUE_PREFIX: prefix,
    });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('cannot reach Redis at redis://127.0.0.1:1');
    expect(result.stderr).toContain('redis-server');
  });
});
