/**
 * A failed 120-task, 8-layer workflow forked at every layer (one fork with one command: `plans fork
 * --from-failure --edit-steps`), each fork with an edited step of its first layer, and a fork of a
 * fork; a second executor process, which knows only the forks' ids, runs every fork to completion
 * through the publisher, the queue and a real worker. On SQLite, PostgreSQL and MariaDB, with the
 * same rows on each.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type IORedis from 'ioredis';
import { loadConfig } from '../../src/config/config';
import { PlanEvent, StepSpec } from '../../src/contracts';
import { forkPlan } from '../../src/fork/fork-plan';
import { agentUsage, getPlanLineage, getPlanView, getResumePoint, getStepOutput, tokenUsage } from '../../src/queries';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { startWorker, WorkerHandle } from '../../src/worker';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { dropPrefix, openRedis, REDIS_URL, silentLogger, uniquePrefix, waitFor } from '../worker/helpers/queue-harness';
import { parsedEvent, cliIn } from '../support/parsed-event';
import { layeredSteps } from '../support/event-factory';

jest.setTimeout(240_000);

const LAYERS = 8;
const PER_LAYER = 15;
const PARENT = 'wf-dag-120';
const EXECUTOR = path.join(__dirname, 'support', 'fork-executor.ts');

/** The workflow: layers 0-4 done with a checkpoint each, layer 5's last step failed, the plan failed. */
function parentEvents(): PlanEvent[] {
  let seq = 0;
  const start = Date.parse('2026-04-01T08:00:00.000Z');
  const ev = (type: string, payload: object): PlanEvent => {
    const event = parsedEvent({
      planId: PARENT,
      sessionId: 'sess-dag',
      seq,
      type,
      payload,
      occurredAt: new Date(start + seq * 1000),
    });
    seq++;
    return event;
  };
  const events = [ev('plan.created', { query: 'a wide workflow', steps: layeredSteps(LAYERS, PER_LAYER) })];
  for (let l = 0; l <= 5; l++) {
    for (let i = 0; i < PER_LAYER; i++) {
      const stepId = `t${l}-${i}`;
      if (l === 5 && i === PER_LAYER - 1) events.push(ev('step.failed', { stepId, error: 'tool timeout' }));
      else
        events.push(
          ev('step.completed', { stepId, inputTokens: 100, outputTokens: 50, outputContent: `${PARENT}/${stepId}` }),
        );
    }
    if (l < 5) events.push(ev('checkpoint.saved', { checkpointId: `cp${l}`, layer: l, state: { layer: l } }));
  }
  events.push(ev('plan.finalized', { status: 'failed', failureReason: 't5-14 failed' }));
  return events;
}

const edited = (layer: number, i = 0): StepSpec => ({
  stepId: `t${layer}-${i}`,
  index: 0, // the fork keeps the parent's index
  agentId: `agent-${i % 6}`,
  task: `fixed task ${layer}.${i}`,
  ...(layer > 0 ? { dependsOn: [`t${layer - 1}-${i}`, `t${layer - 1}-${(i + 1) % PER_LAYER}`] } : {}),
});

/** What each database stored for the forks, compared across databases at the end. */
const stored = new Map<string, unknown>();

describe.each(ALL_TEST_DBS)('fork and re-run a 120-task workflow on %s', (kind) => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let redis: IORedis;
  let prefix: string;
  let worker: WorkerHandle | undefined;
  let journal: string;

  beforeAll(async () => {
    db = await createMigratedDb(kind);
    redis = openRedis();
    prefix = uniquePrefix('fork');
    journal = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-fork-'));
    worker = await startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: null },
    });
    await new PlanEventStore(db.ds).persist(parentEvents());
  });
  afterAll(async () => {
    await worker?.close();
    await dropPrefix(redis, prefix);
    await redis.quit();
    await db.close();
    fs.rmSync(journal, { recursive: true, force: true });
  });

  const cli = (...args: string[]) => cliIn(db.db.url, ...args);

  /** The second executor: a process of its own, given only the forks' ids. */
  async function runExecutor(forkIds: string[]): Promise<void> {
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', EXECUTOR], {
      env: {
        ...process.env,
        DATABASE_URL: db.db.url,
        REDIS_URL,
        QUEUE_PREFIX: prefix,
        FORK_IDS: forkIds.join(','),
        JOURNAL_DIR: journal,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect({ code, err }).toEqual({ code: 0, err: '' });
    // its last line is its summary (the publisher's log lines come before it)
    expect(JSON.parse(out.trim().split('\n').pop()!)).toMatchObject({ closed: { flushed: true } });
    await waitFor(
      'the forks run to completion',
      async () => {
        const rows: Array<{ status: string }> = await db.ds.query(
          `SELECT status FROM execution_plans WHERE id IN (${forkIds.map((id) => `'${id}'`).join(', ')})`,
        );
        return rows.length === forkIds.length && rows.every((r) => r.status === 'completed');
      },
      120_000,
      200,
    );
  }

  const forkIds = Array.from({ length: LAYERS }, (_, n) => `fork-L${n}`);

  it('forks at every layer, the failed one with one command, and a second executor runs them all', async () => {
    // re-run from the failed layer with the failed step changed: one command
    const editFile = path.join(journal, 'fixed.json');
    fs.writeFileSync(editFile, JSON.stringify([edited(5, PER_LAYER - 1)]));
    const one = await cli(
      'plans',
      'fork',
      PARENT,
      '--from-failure',
      '--edit-steps',
      editFile,
      '--plan-id',
      'fork-L5',
      '--json',
    );
    expect({ code: one.code, stderr: one.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(one.stdout)).toMatchObject({
      planId: 'fork-L5',
      parentPlanId: PARENT,
      layer: 5,
      inheritedSteps: 5 * PER_LAYER,
      steps: 120,
      changedSteps: ['t5-14'],
      nextLayer: 5,
      nextSeq: 1,
    });
    for (let n = 0; n < LAYERS; n++) {
      if (n === 5) continue;
      const outcome = await forkPlan(db.ds, {
        parentPlanId: PARENT,
        kind: 'fork',
        from: { layer: n },
        planId: `fork-L${n}`,
        editSteps: [edited(n)],
      });
      expect(outcome).toMatchObject({ layer: n, inheritedSteps: n * PER_LAYER, changedSteps: [`t${n}-0`] });
    }
    // nothing of the parent was copied: a fork has rows only of the step it changed
    const [{ n: rowsBefore }] = await db.ds.query(`SELECT COUNT(*) AS n FROM plan_steps WHERE plan_id LIKE 'fork-%'`);
    expect(Number(rowsBefore)).toBe(LAYERS);

    await runExecutor(forkIds);

    for (let n = 0; n < LAYERS; n++) {
      const id = `fork-L${n}`;
      const toRun = (LAYERS - n) * PER_LAYER;
      const [plan] = await db.ds.query(
        `SELECT parent_plan_id, fork_kind, fork_layer, total_steps, completed_steps, total_input_tokens FROM execution_plans WHERE id = '${id}'`,
      );
      expect({
        parent: plan.parent_plan_id,
        kind: plan.fork_kind,
        layer: Number(plan.fork_layer),
        steps: Number(plan.total_steps),
        completed: Number(plan.completed_steps),
        tokens: Number(plan.total_input_tokens),
      }).toEqual({ parent: PARENT, kind: 'fork', layer: n, steps: toRun, completed: toRun, tokens: toRun * 10 });
      // its rows: the steps it ran, none of the inherited ones
      const [{ n: rows }] = await db.ds.query(`SELECT COUNT(*) AS n FROM plan_steps WHERE plan_id = '${id}'`);
      expect(Number(rows)).toBe(toRun);
      // the executor ran the edited step's new task
      const editedId = n === 5 ? `t5-${PER_LAYER - 1}` : `t${n}-0`;
      expect((await getStepOutput(db.ds, id, editedId)).outputContent).toBe(
        `${id}/${editedId}: fixed task ${n}.${n === 5 ? PER_LAYER - 1 : 0}`,
      );
      // an inherited step's output is read through the fork, from the parent
      if (n > 0) expect((await getStepOutput(db.ds, id, 't0-3')).outputContent).toBe(`${PARENT}/t0-3`);
      const view = await getPlanView(db.ds, id);
      expect(view.steps).toHaveLength(120);
      expect(view.steps.filter((s) => s.inheritedFrom === PARENT)).toHaveLength(n * PER_LAYER);
      expect(view.plan).toMatchObject({ status: 'completed', forkOf: { planId: PARENT, kind: 'fork', layer: n } });
      expect((await getResumePoint(db.ds, id)).resumable).toBe(false);
    }
  });

  it('a fork of a fork inherits from both, and analytics count no inherited step twice', async () => {
    const outcome = await forkPlan(db.ds, {
      parentPlanId: 'fork-L3',
      kind: 'fork',
      from: { layer: 6 },
      planId: 'fork-L3-L6',
      editSteps: [edited(6, 2)],
    });
    expect(outcome).toMatchObject({ inheritedSteps: 6 * PER_LAYER, nextSteps: expect.arrayContaining(['t6-2']) });
    await runExecutor(['fork-L3-L6']);
    // t0-1 is the grandparent's (fork-L3 inherited it), t4-1 fork-L3's own run
    expect((await getStepOutput(db.ds, 'fork-L3-L6', 't0-1')).outputContent).toBe(`${PARENT}/t0-1`);
    expect((await getStepOutput(db.ds, 'fork-L3-L6', 't4-1')).outputContent).toBe('fork-L3/t4-1');
    const view = await getPlanView(db.ds, 'fork-L3-L6');
    expect(view.steps.find((s) => s.stepId === 't0-1')?.inheritedFrom).toBe(PARENT);
    expect(view.steps.find((s) => s.stepId === 't4-1')?.inheritedFrom).toBe('fork-L3');

    // the lineage: the workflow, its 8 forks, and the fork of fork-L3
    const lineage = await getPlanLineage(db.ds, 'fork-L3-L6');
    expect(lineage).toMatchObject({ rootId: PARENT, plans: 10, truncated: false });
    expect(lineage.root.children.map((c) => c.planId).sort()).toEqual([...forkIds].sort());
    expect(lineage.root.children.find((c) => c.planId === 'fork-L3')?.children.map((c) => c.planId)).toEqual([
      'fork-L3-L6',
    ]);

    // every step row counted once: the workflow's 89 run steps and each fork's own
    const runByForks = forkIds.reduce((sum, _, n) => sum + (LAYERS - n) * PER_LAYER, 0) + 2 * PER_LAYER;
    const usage = await tokenUsage(db.ds, {}, ['plan']);
    expect(usage.total.inputTokens).toBe(89 * 100 + runByForks * 10);
    const agents = await agentUsage(db.ds);
    expect(agents.reduce((sum, a) => sum + a.totalSteps, 0)).toBe(120 + runByForks);

    // what the forks stored, to compare across databases
    const rows: Array<Record<string, unknown>> = await db.ds.query(
      `SELECT s.plan_id, s.step_key, s.status, s.task, s.output_content, e.payload, s.input_tokens FROM plan_steps s LEFT JOIN plan_events e ON e.event_id = s.output_event_id WHERE s.plan_id LIKE 'fork-%' ORDER BY s.plan_id, s.step_index`,
    );
    // the output is stored once, in the log: the step row names the event that holds it
    expect(rows.filter((r) => r.output_content !== null)).toEqual([]);
    const output = (payload: unknown) =>
      payload === null ? null : (JSON.parse(String(payload)) as { outputContent?: string }).outputContent;
    stored.set(
      kind,
      rows.map((r) => [r.plan_id, r.step_key, r.status, r.task, output(r.payload), Number(r.input_tokens)]),
    );
  });
});

describe('forks on every database', () => {
  it('stored the same rows', () => {
    const all = [...stored.values()];
    expect(all.length).toBe(ALL_TEST_DBS.length);
    for (const rows of all.slice(1)) expect(rows).toEqual(all[0]);
  });
});
