import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { TestDb } from '../support/databases';
import { ApiStack, INGEST_KEY, READ_KEY, startApiStack } from './http-harness';

jest.setTimeout(120_000);

const EXAMPLES = path.join(__dirname, '..', '..', 'clients', 'python', 'examples');

function runExample(
  stack: ApiStack,
  file: string,
  journalRoot: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('python3', [path.join(EXAMPLES, file)], {
      cwd: EXAMPLES,
      env: {
        ...process.env,
        PLAN_LEDGER_URL: stack.server.url,
        PLAN_LEDGER_INGEST_KEY: INGEST_KEY,
        PLAN_LEDGER_READ_KEY: READ_KEY,
        PLAN_LEDGER_JOURNAL_ROOT: journalRoot,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.each<TestDb>(['sqlite', 'postgres'])(
  'the seeds in Python (clients/python/examples) against serve + worker on %s',
  (kind) => {
    let stack: ApiStack;
    let journalRoot: string;
    beforeAll(async () => {
      stack = await startApiStack(kind);
      journalRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-seeds-'));
    });
    afterAll(async () => {
      await stack?.close();
      fs.rmSync(journalRoot, { recursive: true, force: true });
    });

    it('a chat session restores its active plan after a restart and finishes it', async () => {
      const r = await runExample(stack, 'seed_001_restore.py', journalRoot);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(r.stdout).toContain('restored plan-001-bibliography: Add a bibliography section (executing)');
      expect(r.stdout).toContain('finished: completed, 2/2 steps; no seq reused');
      const seqs = await stack.db.ds.query(
        `SELECT seq FROM plan_events WHERE plan_id = 'plan-001-bibliography' ORDER BY seq`,
      );
      expect(seqs.map((s: { seq: unknown }) => Number(s.seq))).toEqual([0, 1, 2, 3, 4, 5]);
    });

    it("a task runner: the implement task reads the plan task's output from the database", async () => {
      const r = await runExample(stack, 'seed_003_tasks.py', journalRoot);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(r.stdout).toMatch(/implement task read \d+ bytes of plan output and implemented 2 items/);
    });

    it('an architect agent: approve, edit and reject, read back as the audit trail', async () => {
      const r = await runExample(stack, 'seed_004_approval.py', journalRoot);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(r.stdout).toMatch(/plan-004-approved: approve by alice at .* \(executing, 2 steps\)/);
      expect(r.stdout).toMatch(/plan-004-edited: edit by bob at .* \(executing, 3 steps\)/);
      expect(r.stdout).toMatch(/plan-004-rejected: reject by carol at .* \(cancelled, 2 steps\)/);
      const decisions = await stack.db.ds.query(
        `SELECT plan_id, decision, decided_by FROM plan_decisions ORDER BY plan_id`,
      );
      expect(decisions).toEqual([
        { plan_id: 'plan-004-approved', decision: 'approve', decided_by: 'alice' },
        { plan_id: 'plan-004-edited', decision: 'edit', decided_by: 'bob' },
        { plan_id: 'plan-004-rejected', decision: 'reject', decided_by: 'carol' },
      ]);
    });
  },
);
