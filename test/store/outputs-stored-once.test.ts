import { MigrationExecutor, type DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { parsePlanEvent, type PlanEvent } from '../../src/contracts';
import { getPlanView, getStepOutput } from '../../src/queries';
import { runMigrations } from '../../src/store/migrator';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb, type TestDb } from '../support/databases';
import { PlanScript } from '../support/read-dataset';

/** OutputsStoredOnce and the migrations after it, in order: what undoing it takes, and what runs again. */
const FROM_OUTPUTS = MIGRATIONS.map((m) => m.name).slice(
  MIGRATIONS.findIndex((m) => m.name === 'OutputsStoredOnce1795225200000'),
);

/**
 * Issue 44, "a step's output stored once": the log keeps each output (the step.completed event's
 * payload), the step row names that event, and every read gives the output back byte for byte, on
 * every database. The migration moves outputs stored before to their events, and `down` copies
 * them back.
 */

/** Printable text of `bytes` UTF-8 bytes at least, every line different, with multi-byte characters. */
function document(bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `${i}. caf\u00e9 \u4e2d\u6587 \u{1F680} line ${i * 7919} of the report\n`;
    lines.push(line);
    size += Buffer.byteLength(line);
  }
  return lines.join('');
}

const OUTPUTS: Array<[name: string, content: string]> = [
  ['unicode', 'caf\u00e9 \u{1F600} \u4e2d\u6587 \u0645\u0631\u062d\u0628\u0627 e\u0301 \u2028\u2029 \uFEFF\ttab\r\n'],
  ['control characters', '\u0001\u001b[31mred\u001b[0m\u007f \\ " \u00ff'],
  ['JSON-looking text', '{"outputContent":"not this","seq":1}\n'],
  ['1 KB', document(1_024)],
  ['20 KB', document(20 * 1_024)],
  ['empty', ''],
];

const PLAN = 'out-plan';
const FORK = 'out-fork';
const EDITED = 'out-edited';

function parsed(scripts: PlanScript[]): PlanEvent[] {
  return scripts
    .flatMap((s) => s.events)
    .map((input) => {
      const r = parsePlanEvent(input);
      if (!r.ok) throw new Error(`${input.planId}#${input.seq}: ${r.error.message}`);
      return r.event;
    });
}

/** A plan whose steps stored the outputs above (one completed twice, one with none), a fork of it, and an edited plan. */
function scripts(): PlanScript[] {
  const steps = [
    ...OUTPUTS.map((_, i) => ({ stepId: `s${i}`, index: i, agentId: 'writer', task: `write ${i}` })),
    { stepId: 'redo', index: OUTPUTS.length, agentId: 'writer', task: 'write twice' },
    { stepId: 'none', index: OUTPUTS.length + 1, agentId: 'writer', task: 'write nothing' },
    { stepId: 'late', index: OUTPUTS.length + 2, agentId: 'writer', task: 'after all', dependsOn: ['s0'] },
  ];
  const plan = new PlanScript(PLAN, 'out-s', '2026-03-01T10:00:00.000Z').created({ query: 'write', steps });
  OUTPUTS.forEach(([, outputContent], i) => plan.ran(`s${i}`, [1, 1], { outputContent }));
  plan.ran('redo', [1, 1], { outputContent: 'first try' }).completed('redo', [2, 2], { outputContent: 'second try' });
  plan.ran('none', [1, 1]).ran('late', [1, 1], { outputContent: 'parent late' });
  // inherits layer 0 (s0..none) from the plan, runs `late` (layer 1) itself
  const fork = new PlanScript(FORK, 'out-s', '2026-03-02T10:00:00.000Z').created({
    query: 'write again',
    steps: [],
    forkOf: { planId: PLAN, kind: 'fork', layer: 1 },
  });
  fork.ran('late', [1, 1], { outputContent: 'fork late \u{1F600}' });
  const edited = new PlanScript(EDITED, 'out-s', '2026-03-03T10:00:00.000Z').created({
    query: 'review',
    requiresApproval: true,
    steps: [{ stepId: 'x', index: 0, agentId: 'a', task: 'draft' }],
  });
  edited.decision({ decision: 'approve' }).ran('x', [1, 1], { outputContent: OUTPUTS[4][1] });
  edited.decision({
    decision: 'edit',
    steps: [
      { stepId: 'x', index: 0, agentId: 'a', task: 'draft, renamed' },
      { stepId: 'y', index: 1, agentId: 'a', task: 'polish', dependsOn: ['x'] },
    ],
  });
  return [plan, fork, edited];
}

/** Every output a read must give back, by plan and step. */
const EXPECTED: Array<[plan: string, step: string, output: string | null]> = [
  ...OUTPUTS.map(([, content], i): [string, string, string] => [PLAN, `s${i}`, content]),
  [PLAN, 'redo', 'second try'],
  [PLAN, 'none', null],
  [PLAN, 'late', 'parent late'],
  [FORK, 's3', OUTPUTS[3][1]],
  [FORK, 'redo', 'second try'],
  [FORK, 'late', 'fork late \u{1F600}'],
  [EDITED, 'x', OUTPUTS[4][1]],
  [EDITED, 'y', null],
];

async function readAll(ds: DataSource): Promise<Array<[string, string, string | null]>> {
  const out: Array<[string, string, string | null]> = [];
  for (const [plan, step] of EXPECTED) out.push([plan, step, (await getStepOutput(ds, plan, step)).outputContent]);
  return out;
}

interface StepRow {
  plan_id: string;
  step_key: string;
  output_content: string | null;
  output_event_id: string | null;
}

async function stepRows(ds: DataSource): Promise<StepRow[]> {
  const rows: StepRow[] = await ds.query(
    `SELECT plan_id, step_key, output_content, output_event_id FROM plan_steps WHERE plan_id LIKE 'out-%' ORDER BY plan_id, step_index`,
  );
  return rows.map((r) => ({ ...r, output_event_id: r.output_event_id === null ? null : String(r.output_event_id) }));
}

/** The event id each step row must name: the last step.completed of the step that carried an output. */
function carriers(events: PlanEvent[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of events)
    if (e.type === 'step.completed' && e.payload.outputContent !== undefined)
      out.set(`${e.planId}/${e.payload.stepId}`, e.eventId);
  return out;
}

describe.each(ALL_TEST_DBS)('step outputs stored once on %s', (kind: TestDb) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let events: PlanEvent[];

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    events = parsed(scripts());
    // in small batches, as a worker gets them
    const store = new PlanEventStore(ds);
    for (let i = 0; i < events.length; i += 7) await store.persist(events.slice(i, i + 7));
  }, 120_000);
  afterAll(async () => close());

  it('keeps no output bytes in plan_steps: each row names the event that carried its output', async () => {
    const rows = await stepRows(ds);
    expect(rows.length).toBe(OUTPUTS.length + 3 + 1 + 2);
    expect(rows.filter((r) => r.output_content !== null)).toEqual([]);
    const expected = carriers(events);
    for (const r of rows)
      expect({ step: `${r.plan_id}/${r.step_key}`, event: r.output_event_id }).toEqual({
        step: `${r.plan_id}/${r.step_key}`,
        event: expected.get(`${r.plan_id}/${r.step_key}`) ?? null,
      });
  });

  it('gives every output back byte for byte: own steps, a step completed twice, a fork, an edited plan', async () => {
    expect(await readAll(ds)).toEqual(EXPECTED);
    const view = await getPlanView(ds, FORK);
    expect(view.steps.filter((s) => s.hasOutput).map((s) => s.stepId)).toEqual([
      ...OUTPUTS.map((_, i) => `s${i}`),
      'redo',
      'late',
    ]);
  });

  it('migration: down copies the outputs back into plan_steps, up moves them to the log again', async () => {
    const migrations = new MigrationExecutor(ds);
    for (let i = 0; i < FROM_OUTPUTS.length; i++) await migrations.undoLastMigration();
    const back: Array<{ plan_id: string; step_key: string; output_content: string | null }> = await ds.query(
      `SELECT plan_id, step_key, output_content FROM plan_steps WHERE plan_id LIKE 'out-%' AND output_content IS NOT NULL ORDER BY plan_id, step_index`,
    );
    const stored = EXPECTED.filter(
      ([plan, step, output]) => output !== null && !(plan === FORK && step !== 'late'),
    ).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    expect(back.map((r) => [r.plan_id, r.step_key, r.output_content])).toEqual(stored);

    // a row whose output no event carried (changed by hand) keeps it where it is
    await ds.query(
      `UPDATE plan_steps SET output_content = 'changed by hand' WHERE plan_id = '${PLAN}' AND step_key = 's1'`,
    );
    expect((await runMigrations(ds)).applied).toEqual(FROM_OUTPUTS);
    const rows = await stepRows(ds);
    expect(rows.filter((r) => r.output_content !== null)).toEqual([
      { plan_id: PLAN, step_key: 's1', output_content: 'changed by hand', output_event_id: null },
    ]);
    const expected = carriers(events);
    for (const r of rows.filter((row) => row.step_key !== 's1'))
      expect(r.output_event_id).toBe(expected.get(`${r.plan_id}/${r.step_key}`) ?? null);
    expect(await readAll(ds)).toEqual(
      EXPECTED.map(([plan, step, output]) => [plan, step, plan === PLAN && step === 's1' ? 'changed by hand' : output]),
    );
  });

  it('migration: run again after an interruption, it moves the rows left', async () => {
    // as if interrupted where the DDL had committed (MySQL/MariaDB): the column is there, a row not moved yet
    const s1 = events.find((e) => e.planId === PLAN && e.type === 'step.completed' && e.payload.stepId === 's1')!;
    await ds.query(
      `UPDATE plan_steps SET output_content = ${ph(kind, 0)} WHERE plan_id = '${PLAN}' AND step_key = 's1'`,
      [OUTPUTS[1][1]],
    );
    await ds.query(`DELETE FROM migrations WHERE name = 'OutputsStoredOnce1795225200000'`);
    expect((await runMigrations(ds)).applied).toEqual(['OutputsStoredOnce1795225200000']);
    const rows = await stepRows(ds);
    expect(rows.filter((r) => r.output_content !== null)).toEqual([]);
    expect(rows.find((r) => r.plan_id === PLAN && r.step_key === 's1')?.output_event_id).toBe(s1.eventId);
    expect(await readAll(ds)).toEqual(EXPECTED);
  });
});

function ph(kind: TestDb, i: number): string {
  return kind === 'postgres' ? `$${i + 1}` : kind === 'mssql' ? `@${i}` : '?';
}
