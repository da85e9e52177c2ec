import { run } from '../../src/cli/main';
import { ALL_TEST_DBS, createMigratedDb, TestDb } from '../support/databases';
import { loadReadDatasetThroughWorker } from '../support/read-dataset';

/**
 * Issue 7: one dataset written through the real worker on SQLite, PostgreSQL and MariaDB; every
 * read command's output must be byte-identical on the three. Commands run in-process through the
 * real CLI entry (`run`), with DATABASE_URL pointing at each database.
 */
const COMMANDS: string[][] = [
  ['plans', 'show', 'plan-a1', '--json'],
  ['plans', 'show', 'plan-a2', '--json'],
  ['plans', 'show', 'plan-a3', '--json'],
  ['plans', 'show', 'plan-dag', '--json'],
  ['plans', 'show', 'plan-a2'],
  ['plans', 'show', 'plan-c2', '--json'],
  ['plans', 'list', '--json'],
  ['plans', 'list', '--session', 'sess-alpha', '--json'],
  ['plans', 'list', '--status', 'completed', '--limit', '2', '--offset', '1', '--json'],
  ['plans', 'list', '--agent', 'researcher', '--json'],
  ['plans', 'list', '--from', '2025-01-01T00:00:00Z', '--to', '2030-01-01', '--agent', 'coder', '--json'],
  ['plans', 'list'],
  ['plans', 'export', 'plan-a1'],
  ['plans', 'export', 'plan-dag'],
  ['sessions', 'active', 'sess-alpha', '--json'],
  ['sessions', 'active', 'sess-beta', '--json'],
  ['sessions', 'active', 'sess-dag', '--json'],
  ['sessions', 'active', 'sess-alpha'],
  ['sessions', 'history', 'sess-alpha', '--json'],
  ['sessions', 'history', 'sess-beta', '--limit', '1', '--json'],
  ['sessions', 'history', 'sess-nobody', '--json'],
  ['workflows', 'resume-point', 'plan-dag', '--json'],
  ['workflows', 'resume-point', 'plan-dag'],
  ['workflows', 'resume-point', 'plan-a1', '--json'],
  ['workflows', 'resume-point', 'plan-b1', '--json'],
  ['workflows', 'resume-point', 'plan-b2', '--json'],
  ['workflows', 'resume-point', 'plan-c2', '--json'],
  ['workflows', 'resume-point', 'plan-c3', '--json'],
  ['steps', 'output', 'plan-a1', '0', '--json'],
  ['steps', 'output', 'plan-a1', 'draft'],
  ['steps', 'output', 'plan-a3', 'code', '--json'],
  ['analytics', 'daily', '--json'],
  ['analytics', 'agents', '--json'],
  ['analytics', 'handoffs', '--json'],
  ['analytics', 'tokens', '--json'],
  ['analytics', 'daily', '--from', '2026-02-04', '--to', '2026-02-05T12:00:00Z', '--json'],
  ['analytics', 'agents', '--from', '2026-02-06', '--csv'],
  ['analytics', 'handoffs', '--to', '2026-02-04T00:00:00.000Z', '--csv'],
  ['analytics', 'tokens', '--by', 'model', '--csv'],
  ['analytics', 'tokens', '--from', '2026-02-03', '--to', '2026-02-05', '--by', 'session', '--json'],
  ['analytics', 'cost', '--json'],
  ['analytics', 'cost', '--by', 'model', '--csv'],
  ['analytics', 'cost', '--by', 'agent', '--csv'],
  ['analytics', 'cost', '--by', 'session', '--json'],
  ['analytics', 'cost', '--by', 'plan', '--from', '2026-02-03', '--to', '2026-02-05', '--csv'],
  ['analytics', 'cost', '--by', 'plan'],
  ['sessions', 'history', 'sess-alpha'],
];

interface Output {
  code: number;
  stdout: string;
  stderr: string;
}

async function runAll(url: string): Promise<Map<string, Output>> {
  const results = new Map<string, Output>();
  for (const args of COMMANDS) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(['node', 'plan-ledger', ...args], {
      env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    results.set(args.join(' '), { code, stdout: out.join('\n'), stderr: err.join('\n') });
  }
  return results;
}

describe('read side: identical answers on every test database (SQL Server too with TEST_MSSQL_URL)', () => {
  const outputs = new Map<TestDb, Map<string, Output>>();

  beforeAll(async () => {
    for (const kind of ALL_TEST_DBS) {
      const { db, ds, close } = await createMigratedDb(kind, { poolSize: 6 });
      try {
        await loadReadDatasetThroughWorker(ds, db.url);
        await ds.destroy(); // the CLI opens its own connections, as a separate reader would
        outputs.set(kind, await runAll(db.url));
      } finally {
        await close();
      }
    }
  }, 240_000);

  it.each(COMMANDS.map((c) => [c.join(' ')]))('plan-ledger %s', (command) => {
    const sqlite = outputs.get('sqlite')!.get(command)!;
    expect(sqlite.stdout.length + sqlite.stderr.length).toBeGreaterThan(0);
    expect(ALL_TEST_DBS.length).toBeGreaterThan(1);
    for (const kind of ALL_TEST_DBS)
      expect({ kind, output: outputs.get(kind)!.get(command) }).toEqual({ kind, output: sqlite });
  });

  it('answers what a person would check (SQLite output, equal everywhere by the test above)', () => {
    const get = (command: string) => outputs.get('sqlite')!.get(command)!;
    const json = (command: string) => JSON.parse(get(command).stdout);
    expect(json('workflows resume-point plan-dag --json')).toMatchObject({
      resumable: true,
      lastCompletedLayer: 2,
      nextLayer: 3,
    });
    expect(json('sessions active sess-alpha --json').activePlan).toMatchObject({
      planId: 'plan-a3',
      status: 'executing',
      approvalStatus: 'edited',
    });
    expect(json('plans list --json').total).toBe(10); // 11 plans written, one soft-deleted
    expect(get('plans show plan-c2 --json')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'plan-ledger: plan "plan-c2" not found',
    });
    expect(get('workflows resume-point plan-a1 --json').code).toBe(1);
    expect(get('steps output plan-a1 draft')).toEqual({ code: 0, stdout: 'bibliography draft', stderr: '' });
    expect(get('steps output plan-a3 code --json')).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('has no stored output (status in_progress)'),
    });
    expect(get('sessions history sess-nobody --json')).toMatchObject({
      code: 1,
      stderr: 'plan-ledger: session "sess-nobody" not found',
    });
    expect(get('analytics tokens --by model --csv').stdout.split('\n')).toEqual([
      'dimension,key,input_tokens,output_tokens,total_tokens,cache_read_tokens,cache_write_tokens,reasoning_tokens',
      'model,gpt-4o,8040,3485,11525,0,0,0',
      'model,claude-sonnet,5100,2920,8020,0,0,0',
      'model,gpt-4o-mini,1240,238,1478,0,0,0',
      'total,,14380,6643,21023,0,0,0',
    ]);
    // costs fixed when stored, summed exactly; claude-sonnet has no known price: counted, never as zero
    expect(get('analytics cost --by model --csv').stdout.split('\n')).toEqual([
      'model,cost_usd,priced_steps,unpriced_steps,reported_steps,reported_usd,priced_usd,differs',
      'gpt-4o,0.05495,49,0,0,,,false',
      'gpt-4o-mini,0.0003288,6,0,0,,,false',
      'claude-sonnet,0.00,0,22,0,,,false',
      'total,0.0552788,55,22,0,,,false',
    ]);
    expect(json('analytics cost --by session --json')).toMatchObject({ by: 'session', total: { cost: '0.0552788' } });
    // a session's cost: every live plan of it, its unpriced steps counted apart
    expect(json('sessions history sess-alpha --json')).toMatchObject({ cost: '0.01018', unpricedSteps: 2 });
    expect(get('sessions history sess-alpha').stdout).toContain(
      'session cost: $0.01018 USD + 2 steps unpriced (every plan of the session)',
    );
    expect(get('sessions history sess-alpha').stdout).toMatch(
      /plan-a1\s+completed\s+3\/3\s+4,000\/2,000\s+\$0\.01 \+ 1 unpriced/,
    );
  });
});
