/**
 * `plans fork` and `plans replay` as an operator uses them: what they print, what they refuse (one
 * line, the exit code, nothing written), and the fork read back through `plans show`, `plans
 * export` and `workflows resume-point`.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { DataSource } from 'typeorm';
import { PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { parsedEvent, cliIn } from '../support/parsed-event';

let clock = Date.parse('2026-07-01T00:00:00.000Z');
function ev(planId: string, seq: number, type: string, payload: object): PlanEvent {
  clock += 1000;
  return parsedEvent({ planId, sessionId: 'sess-cli', seq, type, payload, occurredAt: new Date(clock) });
}
const spec = (stepId: string, index: number, dependsOn: string[] = []) => ({
  stepId,
  index,
  agentId: 'coder',
  task: `task ${stepId}`,
  dependsOn,
});

describe.each(ALL_TEST_DBS)('plans fork and replay on %s', (kind) => {
  let ds: DataSource;
  let url: string;
  let close: () => Promise<void>;
  let dir: string;

  beforeAll(async () => {
    let db;
    ({ ds, close, db } = await createMigratedDb(kind));
    url = db.url;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-fork-cli-'));
    await new PlanEventStore(ds).persist([
      ev('wf', 0, 'plan.created', { query: 'q', steps: [spec('a', 0), spec('b', 1, ['a']), spec('c', 2, ['b'])] }),
      ev('wf', 1, 'step.completed', { stepId: 'a', inputTokens: 5, outputTokens: 1, outputContent: 'A' }),
      ev('wf', 2, 'checkpoint.saved', { checkpointId: 'cp-a', layer: 0, state: { done: ['a'] } }),
      ev('wf', 3, 'step.failed', { stepId: 'b', error: 'timeout' }),
      ev('wf', 4, 'plan.finalized', { status: 'failed' }),
      ev('ok', 0, 'plan.created', { query: 'q2', steps: [spec('x', 0)] }),
      ev('ok', 1, 'step.completed', { stepId: 'x', inputTokens: 1, outputTokens: 1 }),
      ev('ok', 2, 'plan.finalized', { status: 'completed' }),
    ]);
  });
  afterAll(async () => {
    await close?.();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const cli = (...args: string[]) => cliIn(url, ...args);
  const file = (name: string, content: unknown) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
    return p;
  };
  const plans = async () => Number((await ds.query(`SELECT COUNT(*) AS n FROM execution_plans`))[0].n);

  it('refuses what does not fit, with one line and its exit code, writing nothing', async () => {
    const before = await plans();
    const cases: Array<[string[], number, string]> = [
      [['plans', 'fork', 'wf'], 2, 'give exactly one of --from-layer N, --from-checkpoint ID, --from-failure'],
      [['plans', 'fork', 'wf', '--from-layer', '1', '--from-failure'], 2, 'give exactly one of'],
      [['plans', 'fork', 'wf', '--from-layer', 'x'], 2, '--from-layer: "x" is not a layer number'],
      [['plans', 'fork', 'wf', '--from-layer', '3'], 2, 'plan "wf" has layers 0-2; got 3'],
      [['plans', 'fork', 'nope', '--from-layer', '0'], 1, 'plan "nope" not found'],
      [['plans', 'fork', 'wf', '--from-checkpoint', 'cp-z'], 1, 'checkpoint "cp-z" not found in plan "wf"'],
      [['plans', 'fork', 'ok', '--from-failure'], 1, 'plan "ok" has no failed step'],
      [['plans', 'fork', 'wf', '--from-layer', '0', '--plan-id', 'ok'], 1, 'plan "ok" already exists'],
      [
        ['plans', 'fork', 'wf', '--from-layer', '0', '--plan-id', 'bad id!'],
        2,
        '--plan-id: "bad id!" is not a plan id',
      ],
      [['plans', 'fork', 'wf', '--from-layer', '1', '--edit-steps', path.join(dir, 'missing.json')], 2, 'cannot read'],
      [['plans', 'fork', 'wf', '--from-layer', '1', '--edit-steps', file('bad.json', '{')], 2, 'is not JSON'],
      [
        [
          'plans',
          'fork',
          'wf',
          '--from-layer',
          '1',
          '--edit-steps',
          file('inh.json', [{ ...spec('a', 0), task: 'new' }]),
        ],
        1,
        'step "a" is in a layer before 1, which the fork inherits',
      ],
      [
        ['plans', 'fork', 'wf', '--from-layer', '1', '--edit-steps', file('dep.json', [spec('n', 9, ['zz'])])],
        1,
        'step "n": dependsOn[0] must name a step of the same list',
      ],
      [
        ['plans', 'fork', 'wf', '--from-layer', '1', '--edit-steps', file('early.json', [spec('n', 9)])],
        1,
        'step "n" would run in a layer before 1',
      ],
      [
        ['plans', 'fork', 'wf', '--from-layer', '1', '--edit-steps', file('field.json', [{ stepId: 'b' }])],
        2,
        'steps[0].agentId is required',
      ],
    ];
    for (const [args, code, message] of cases) {
      const r = await cli(...args);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code, stdout: '' });
      expect(r.stderr).toContain(message);
      expect(r.stderr.split('\n')).toHaveLength(1);
    }
    expect(await plans()).toBe(before);
  });

  it('forks from the failure with a changed step, and the fork reads as the whole workflow', async () => {
    // a `plans export` template: the steps equal to the parent's are no change
    const template = JSON.parse((await cli('plans', 'export', 'wf')).stdout) as {
      steps: Array<{ stepId: string; task: string }>;
    };
    template.steps.find((s) => s.stepId === 'b')!.task = 'task b, with a longer timeout';
    const r = await cli(
      'plans',
      'fork',
      'wf',
      '--from-failure',
      '--edit-steps',
      file('t.json', template),
      '--plan-id',
      'wf-2',
    );
    expect(r).toEqual({
      code: 0,
      stderr: '',
      stdout: [
        'created plan wf-2 in session sess-cli: fork from layer 1 of wf',
        '  3 steps: 1 inherited, 2 to run; changed: b',
        '  resume at layer 1: b; publish from seq 1',
        '  (plan-ledger workflows resume-point wf-2 gives the whole resume point)',
      ].join('\n'),
    });
    const show = await cli('plans', 'show', 'wf-2');
    expect(show.stdout).toContain('fork:      of wf from layer 1; 1 steps inherited');
    expect(show.stdout).toContain('steps:     2 total, 0 completed, 0 failed, 0 skipped, 2 not finished');
    const point = JSON.parse((await cli('workflows', 'resume-point', 'wf-2', '--json')).stdout);
    expect(point).toMatchObject({
      resumable: true,
      lastCompletedLayer: 0,
      nextLayer: 1,
      nextSeq: 1,
      latestCheckpoint: { checkpointId: 'cp-a', layer: 0, state: { done: ['a'] } },
      nextSteps: [{ stepId: 'b', task: 'task b, with a longer timeout', status: 'pending' }],
      layers: [
        { layer: 0, completed: 1 },
        { layer: 1, unfinished: 1 },
        { layer: 2, unfinished: 1 },
      ],
    });
    const exported = JSON.parse((await cli('plans', 'export', 'wf-2')).stdout);
    expect(exported.steps.map((s: { stepId: string; task: string }) => `${s.stepId}: ${s.task}`)).toEqual([
      'a: task a',
      'b: task b, with a longer timeout',
      'c: task c',
    ]);
    expect((await cli('steps', 'output', 'wf-2', 'a')).stdout).toBe('A');
  });

  it('forks after a checkpoint, and replays into another session', async () => {
    const fork = JSON.parse((await cli('plans', 'fork', 'wf', '--from-checkpoint', 'cp-a', '--json')).stdout);
    expect(fork).toMatchObject({ kind: 'fork', layer: 1, checkpointId: 'cp-a', inheritedSteps: 1, nextSteps: ['b'] });
    expect(fork.planId).toMatch(/^wf\.fork-[0-9a-f]{8}$/);
    const replay = JSON.parse((await cli('plans', 'replay', 'ok', '--session', 'sess-other', '--json')).stdout);
    expect(replay).toMatchObject({ kind: 'replay', layer: 0, sessionId: 'sess-other', inheritedSteps: 0, steps: 1 });
    const [row] = await ds.query(
      `SELECT session_id, parent_plan_id, fork_kind, fork_layer, status FROM execution_plans WHERE id = '${replay.planId}'`,
    );
    expect({ ...row, fork_layer: Number(row.fork_layer) }).toEqual({
      session_id: 'sess-other',
      parent_plan_id: 'ok',
      fork_kind: 'replay',
      fork_layer: 0,
      status: 'executing',
    });
    const lineage = await cli('plans', 'lineage', 'ok');
    expect(lineage.stdout).toContain(replay.planId);
  });
});
