import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { run } from '../../src/cli/main';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { openDataSource } from '../../src/store/data-source';
import { runMigrations } from '../../src/store/migrator';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { runCli } from '../support/cli';
import { createMigratedDb, createThrowawayDb, TestDb } from '../support/databases';
import { loadReadDataset, PlanScript } from '../support/read-dataset';

const valid = (script: PlanScript): PlanEvent[] =>
  script.events.map((e) => {
    const r = parsePlanEvent(e);
    if (!r.ok) throw new Error(JSON.stringify(r.error.violations));
    return r.event;
  });

/** A writer process's life: open, persist, close (the next call is a restarted writer). */
async function writeAsFreshWriter(url: string, events: PlanEvent[], migrate = false): Promise<void> {
  const ds = await openDataSource(parseDatabaseUrl(url), { poolSize: 1 });
  try {
    if (migrate) await runMigrations(ds);
    await new PlanEventStore(ds).persist(events);
  } finally {
    await ds.destroy();
  }
}

describe.each<TestDb>(['sqlite', 'postgres'])('session restore on %s', (kind) => {
  it('finds the plan in progress after the writer and the reader restart', async () => {
    const db = await createThrowawayDb(kind);
    try {
      const script = new PlanScript('plan-restore', 'sess-restore', '2026-02-10T09:00:00.000Z').created({
        query: 'Add bibliography section',
        complexity: 3,
        steps: [
          {
            stepId: 'a1b2c3',
            index: 0,
            agentId: 'reader',
            task: 'Read existing structure',
            title: 'Read existing structure',
          },
          {
            stepId: 'd4e5f6',
            index: 1,
            agentId: 'writer',
            task: 'Write the section',
            title: 'Write the section',
            dependsOn: ['a1b2c3'],
          },
        ],
      });
      script.started('a1b2c3');
      const all = valid(
        script
          .completed('a1b2c3', [100, 50], { outputContent: 'structure notes' })
          .started('d4e5f6')
          .finalized({ status: 'completed' }),
      );
      const env = { DATABASE_URL: db.url };

      await writeAsFreshWriter(db.url, all.slice(0, 2), true);
      const first = await runCli(['sessions', 'active', 'sess-restore', '--json'], env);
      expect(first.stderr).toBe('');
      expect(JSON.parse(first.stdout).activePlan).toMatchObject({
        planId: 'plan-restore',
        query: 'Add bibliography section',
        status: 'executing',
        complexity: 3,
        steps: [
          { stepId: 'a1b2c3', index: 0, title: 'Read existing structure', status: 'in_progress' },
          { stepId: 'd4e5f6', index: 1, status: 'pending' },
        ],
      });

      await writeAsFreshWriter(db.url, all.slice(2, 4)); // the worker restarted and took up where it was
      const second = await runCli(['sessions', 'active', 'sess-restore'], env);
      expect(second.code).toBe(0);
      expect(second.stdout).toContain('plan plan-restore  EXECUTING  (session sess-restore)');
      expect(second.stdout).toMatch(/0\s+a1b2c3\s+reader\s+completed/);
      expect(second.stdout).toMatch(/1\s+d4e5f6\s+writer\s+in_progress/);

      await writeAsFreshWriter(db.url, all.slice(4)); // finished: archived into the history
      const done = await runCli(['sessions', 'active', 'sess-restore'], env);
      expect(done).toMatchObject({ code: 0, stdout: 'session sess-restore has no plan in progress\n' });
    } finally {
      await db.drop();
    }
  });
});

describe('read commands: exit codes and one-line errors', () => {
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const made = await createMigratedDb('sqlite');
    url = made.db.url;
    close = made.close;
    await loadReadDataset(made.ds);
    await made.ds.destroy();
  });
  afterAll(async () => close());

  async function cli(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(['node', 'plan-ledger', ...args], {
      env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    return { code, stdout: out.join('\n'), stderr: err };
  }

  it('exits 1 with "not found" for unknown ids, as a real process', async () => {
    const result = await runCli(['plans', 'show', 'plan-nope'], { DATABASE_URL: url });
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'plan-ledger: plan "plan-nope" not found\n' });
    // a session with no plan stored has no plan in progress: what a restarted application restores is nothing
    expect(await cli('sessions', 'active', 'sess-nope')).toEqual({
      code: 0,
      stdout: 'session sess-nope has no plan in progress',
      stderr: [],
    });
    expect((await cli('steps', 'output', 'plan-a1', 'nope')).stderr).toEqual([
      'plan-ledger: step "nope" not found in plan "plan-a1" (give a stepId or a step index)',
    ]);
    expect((await cli('workflows', 'resume-point', 'wf-nope')).code).toBe(1);
    expect((await cli('plans', 'export', 'plan-nope')).code).toBe(1);
  });

  it('exits 2 with one line for bad arguments, as a real process', async () => {
    const result = await runCli(['plans', 'list', '--limit', '-1'], { DATABASE_URL: url });
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: 'plan-ledger: --limit: "-1" must be a whole number from 1 to 1000\n',
    });
  });

  it.each([
    [
      ['plans', 'list', '--status', 'done'],
      '--status: "done" is not one of planning, executing, completed, failed, cancelled',
    ],
    [['plans', 'list', '--offset', '-3'], '--offset: "-3" must be a whole number 0 or more'],
    [['plans', 'list', '--cursor', 'x!'], '--cursor: "x!" is not a cursor of plans list (pass its nextCursor)'],
    [['plans', 'list', '--cursor', 'abc', '--offset', '4'], '--cursor: give --cursor or --offset, not both'],
    [['sessions', 'history', 'sess-alpha', '--limit', 'ten'], '--limit: "ten" must be a whole number from 1 to 1000'],
    [['analytics', 'daily', '--from', '2026-02-30'], '--from: "2026-02-30" is not an ISO-8601 date'],
    [['analytics', 'agents', '--to', 'yesterday'], '--to: "yesterday" is not an ISO-8601 date'],
    [
      ['analytics', 'daily', '--from', '0202-02-01'],
      '--from: "0202-02-01" is before 1970: nothing in the ledger is that old (a typo?)',
    ],
    [
      ['analytics', 'daily', '--from', '2026-03-01', '--to', '2026-02-01'],
      '--to: "2026-02-01" must be after --from "2026-03-01"',
    ],
    [['analytics', 'tokens', '--by', 'region'], '--by: "region" is not one of session, plan, agent, model'],
    [['analytics', 'handoffs', '--json', '--csv'], '--json and --csv cannot be combined'],
  ])('%j -> exit 2: %s', async (args, message) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toHaveLength(1);
    expect(result.stderr[0]).toContain(`plan-ledger: ${message}`);
  });

  it('pages plans by the cursor each page prints', async () => {
    const first = await cli('plans', 'list', '--limit', '4');
    expect(first.code).toBe(0);
    const lines = first.stdout.split('\n');
    const cursor = /^plans 1-4 of 10 \(next page: --cursor (\S+)\)$/.exec(lines[lines.length - 1])?.[1];
    expect(cursor).toBeDefined();
    const ids = (out: string) =>
      out
        .split('\n')
        .slice(1, -1)
        .map((l) => l.split(/\s+/)[0]);
    const next = await cli('plans', 'list', '--limit', '4', '--cursor', cursor!);
    const byOffset = await cli('plans', 'list', '--limit', '4', '--offset', '4');
    expect(ids(next.stdout)).toEqual(ids(byOffset.stdout));
    expect(next.stdout.split('\n').pop()).toMatch(/^4 plans after the cursor of 10 \(next page: --cursor \S+\)$/);
  });

  it('prints a step output exactly, and says why when there is none', async () => {
    expect(await cli('steps', 'output', 'plan-a1', 'read')).toEqual({
      code: 0,
      stdout: '# Plan\n\n1. Add references.bib\n2. Cite in chapter 2\n',
      stderr: [],
    });
    const none = await cli('steps', 'output', 'plan-a2', '2');
    expect(none).toEqual({
      code: 1,
      stdout: '',
      stderr: ['plan-ledger: step "summarise" (#2) of plan "plan-a2" has no stored output (status skipped)'],
    });
  });

  it('shows a failed plan as a readable timeline', async () => {
    const { code, stdout } = await cli('plans', 'show', 'plan-a2');
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    expect(lines[0]).toBe('plan plan-a2  FAILED  (session sess-alpha)');
    expect(lines).toContain('failed:    step #1 search (researcher): timeout calling search API after 30s');
    // gpt-4o-mini at $0.15/$0.60 per Mtok: 500/100 + 300/0 tokens
    expect(lines).toContain('cost:      $0.00018 USD');
    expect(stdout).toMatch(
      /2026-02-03T10:00:52\.000Z\s+#1 FAILED\s+researcher\s+300\/0\s+\$0\.000045\s+30\.0s\s+ERROR: timeout calling search API after 30s/,
    );
    expect(stdout).toMatch(/#2 skipped\s+writer\s+Write the summary: upstream step search failed/);
  });

  it('documents the commands and their defaults in --help', async () => {
    const help = await cli('plans', 'list', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('page size, 1-1000 (default: 20)');
    expect((await cli('analytics', 'tokens', '--help')).stdout).toContain('--from/--to select plans by creation time');
  });
});
