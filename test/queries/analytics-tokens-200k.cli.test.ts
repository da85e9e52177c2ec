import { run } from '../../src/cli/main';
import { rebuildRollups } from '../../src/store/rollups/rollup-rebuild';
import { createMigratedDb } from '../support/databases';

/**
 * `plan-ledger analytics tokens` over 200,000 plans, through the CLI's own `run`, on a SQLite file
 * filled with plain SQL, one step a plan (and its rollups rebuilt, as `migrate` does for stored plans). Before, the
 * text table measured its columns with `Math.max(h.length, ...cells)`, a call with one argument per
 * row, and V8 threw `RangeError: Maximum call stack size exceeded` past ~120k rows; the report now
 * prints a page of each list (100 lines by default, at most 1,000), with the totals of every plan.
 */
const PLANS = 200_000;
const SESSIONS = 1_000;

describe('analytics tokens with 200k plans (SQLite)', () => {
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const made = await createMigratedDb('sqlite');
    url = made.db.url;
    close = made.close;
    // one statement each: a recursive counter generates the rows inside SQLite
    await made.ds.transaction(async (m) => {
      await m.query(
        `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${SESSIONS - 1})
         INSERT INTO sessions (id) SELECT printf('sess-%04d', i) FROM n`,
      );
      await m.query(
        `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${PLANS - 1})
         INSERT INTO execution_plans (id, session_id, query, status, total_steps, total_input_tokens, total_output_tokens, created_at)
         SELECT printf('plan-%06d', i), printf('sess-%04d', i % ${SESSIONS}), 'q', 'completed', 1, i % 1000, i % 7, '2026-02-01 00:00:00.000' FROM n`,
      );
      // each plan's one step, whose tokens its counters sum (as the store keeps them)
      await m.query(
        `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${PLANS - 1})
         INSERT INTO plan_steps (id, plan_id, step_key, step_index, agent_id, task, status, input_tokens, output_tokens)
         SELECT printf('00000000-0000-4000-8000-%012d', i), printf('plan-%06d', i), 's0', 0, 'coder', 't', 'completed', i % 1000, i % 7 FROM n`,
      );
    });
    await made.ds.transaction((m) => rebuildRollups(m));
    await made.ds.destroy();
  }, 120_000);
  afterAll(async () => close());

  async function cli(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(['node', 'plan-ledger', ...args], {
      env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    return { code, out, err };
  }

  // sums of i % 1000 and i % 7 over i < 200,000 (200 and 28,571 whole cycles, plus 3 left over)
  const input = 200 * 499_500;
  const output = 28_571 * 21 + (0 + 1 + 2);

  it('renders the text table: a header, the first page of sessions and plans, the total of all, where the next page starts', async () => {
    const { code, out, err } = await cli('analytics', 'tokens');
    expect(err).toEqual([]);
    expect(code).toBe(0);
    // the header, a page of sessions and of plans, the agent and the model, the total, the cursor
    expect(out).toHaveLength(1 + 100 + 100 + 1 + 1 + 1 + 1);
    expect(out[0]).toMatch(
      /^dimension\s+key\s+input_tokens\s+output_tokens\s+total_tokens\s+cache_read_tokens\s+cache_write_tokens\s+reasoning_tokens$/,
    );
    expect(out.filter((l) => l.startsWith('session '))).toHaveLength(100);
    // the largest plan: 999 + 6 tokens, and plan-006999 is the first id with both
    expect(out[1 + 100]).toMatch(/^plan\s+plan-006999\s+999\s+6\s+1,005\s+0\s+0\s+0$/);
    expect(out.filter((l) => l.startsWith('plan '))).toHaveLength(100);
    const n = (v: number) => v.toLocaleString('en-US');
    expect(out[out.length - 2]).toMatch(
      new RegExp(`^total\\s+${n(input)}\\s+${n(output)}\\s+${n(input + output)}\\s+0\\s+0\\s+0$`),
    );
    expect(out[out.length - 1]).toMatch(/^more sessions or plans: --cursor [\w-]+$/);
    // the columns line up: every row is as wide as the widest one (the last column is right-aligned)
    expect(new Set(out.slice(1, -1).map((l) => l.length)).size).toBe(1);
  });

  it('prints CSV pages of at most 1,000 plans; the cursor of one page starts the next', async () => {
    const first = await cli('analytics', 'tokens', '--by', 'plan', '--csv', '--limit', '1000');
    expect(first.code).toBe(0);
    expect(first.out).toHaveLength(1 + 1000 + 1);
    expect(first.out[first.out.length - 1]).toBe(`total,,${input},${output},${input + output},0,0,0`);
    const json = await cli('analytics', 'tokens', '--by', 'plan', '--json', '--limit', '1000');
    const page = JSON.parse(json.out.join('\n')) as { page: { hasMore: boolean; nextCursor: string } };
    expect(page.page.hasMore).toBe(true);
    const next = await cli(
      'analytics',
      'tokens',
      '--by',
      'plan',
      '--csv',
      '--limit',
      '1000',
      '--cursor',
      page.page.nextCursor,
    );
    expect(next.out).toHaveLength(1 + 1000 + 1);
    // plans with 999 + 6 tokens: 29 of them (i % 1000 = 999 and i % 7 = 6); the next page goes on below
    expect(next.out[1]).not.toBe(first.out[1]);
    expect(new Set([...first.out.slice(1, -1), ...next.out.slice(1, -1)]).size).toBe(2000);
  });
});
