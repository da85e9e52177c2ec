import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { run } from '../../src/cli/main';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { runCliBytes } from '../support/cli';
import { ALL_TEST_DBS, createMigratedDb, TestDb } from '../support/databases';
import { PlanScript } from '../support/read-dataset';

/**
 * Issue 13 item 11: `steps output` prints a step's content byte for byte as stored, however it
 * ends, so `plan-ledger steps output p 0 > file` gives back the file a step stored.
 */
const CONTENTS: [name: string, content: string][] = [
  ['no trailing newline', '# Title\n\nlast line'],
  ['a trailing \\r', 'line one\rline two\r'],
  ['\\r\\n line endings', 'a,b\r\n1,2\r\n'],
  ['several trailing newlines', 'text\n\n\n'],
  ['one newline only', '\n'],
  ['empty content', ''],
  ['non-ASCII text', 'caf\u00e9 \u{1F600} \u4e2d\u6587\r\n\tindented'],
];

function events(): PlanEvent[] {
  const steps = CONTENTS.map((_, i) => ({ stepId: `s${i}`, index: i, agentId: 'writer', task: `write ${i}` }));
  const script = new PlanScript('plan-bytes', 'sess-bytes', '2026-03-01T10:00:00.000Z').created({
    query: 'write files',
    steps,
  });
  CONTENTS.forEach(([, outputContent], i) => script.ran(`s${i}`, [1, 1], { outputContent }));
  return script.events.map((e) => {
    const r = parsePlanEvent(e);
    if (!r.ok) throw new Error(r.error.message);
    return r.event;
  });
}

/** In-process through the real CLI entry, with a byte sink like process.stdout. */
async function stepOutput(
  url: string,
  index: number,
  json = false,
): Promise<{ code: number; stdout: string; stderr: string[] }> {
  let stdout = '';
  const stderr: string[] = [];
  const args = ['node', 'plan-ledger', 'steps', 'output', 'plan-bytes', String(index), ...(json ? ['--json'] : [])];
  const code = await run(args, {
    env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
    out: (line) => (stdout += `${line}\n`),
    write: (text) => (stdout += text),
    err: (line) => stderr.push(line),
  });
  return { code, stdout, stderr };
}

it('says so in its help', async () => {
  const out: string[] = [];
  const code = await run(['node', 'plan-ledger', 'steps', 'output', '--help'], {
    env: { LOG_LEVEL: 'warn' },
    out: (l) => out.push(l),
    err: () => undefined,
  });
  expect(code).toBe(0);
  expect(out.join('\n')).toContain(
    'no newline is added at the end, none is removed, and\n\\r and \\r\\n line endings are kept',
  );
});

describe.each<TestDb>(ALL_TEST_DBS)('steps output on %s: the content byte for byte', (kind) => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;

  beforeAll(async () => {
    db = await createMigratedDb(kind, { poolSize: 2 });
    await new PlanEventStore(db.ds).persist(events());
    await db.ds.destroy(); // the CLI opens its own connection, as a separate reader would
  });
  afterAll(async () => db?.close());

  it.each(CONTENTS.map(([name, content], i) => [name, content, i] as const))('%s', async (_name, content, index) => {
    expect(await stepOutput(db.db.url, index)).toEqual({ code: 0, stdout: content, stderr: [] });
  });

  it('keeps --json as it was: the content inside one JSON document and a newline', async () => {
    const { code, stdout } = await stepOutput(db.db.url, 1, true);
    expect(code).toBe(0);
    expect(stdout.endsWith('}\n')).toBe(true);
    expect(JSON.parse(stdout)).toMatchObject({
      planId: 'plan-bytes',
      stepId: 's1',
      index: 1,
      outputContent: CONTENTS[1][1],
    });
  });
});

/** What the issue names, through a real process (each spawn costs seconds; the rest runs in-process above). */
const PROCESS_CASES = [
  'no trailing newline',
  'a trailing \\r',
  '\\r\\n line endings',
  'several trailing newlines',
  'empty content',
];

describe('steps output as a real process: stdout bytes equal the stored content', () => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;

  beforeAll(async () => {
    db = await createMigratedDb('sqlite');
    await new PlanEventStore(db.ds).persist(events());
    await db.ds.destroy();
  });
  afterAll(async () => db?.close());

  const cases = CONTENTS.map(([name, content], i) => [name, content, i] as const).filter(([name]) =>
    PROCESS_CASES.includes(name),
  );
  it('covers the cases the issue names', () => expect(cases).toHaveLength(PROCESS_CASES.length));

  it.each(cases)('%s', async (_name, content, index) => {
    const result = await runCliBytes(['steps', 'output', 'plan-bytes', String(index)], { DATABASE_URL: db.db.url });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.toString('hex')).toBe(Buffer.from(content, 'utf8').toString('hex'));
  });
});
