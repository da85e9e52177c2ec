import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { TestDb } from '../support/databases';
import { ADMIN_KEY, ApiStack, startApiStack } from './http-harness';
import { driver } from './python/py-run';

jest.setTimeout(120_000);

describe.each<TestDb>(['sqlite', 'postgres'])('the Python client forks, replays and reads the lineage (%s)', (kind) => {
  let stack: ApiStack;
  const dirs: string[] = [];
  beforeAll(async () => {
    stack = await startApiStack(kind, { env: { HTTP_ADMIN_KEYS: ADMIN_KEY } });
  });
  afterAll(async () => {
    await stack?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('forks a failed plan from its failure with an edit, runs the fork to its end, replays it, and reads the typed tree', async () => {
    const planId = `pyfork-${kind}`;
    const journal = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-pyfork-'));
    dirs.push(journal);
    const run = driver('lineage', stack.server.url, journal, planId);
    const { code, stderr } = await run.exited;
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.lines()[0]).toEqual({
      stored: true,
      ran: true,
      no_start:
        'fork_plan: give exactly one of from_layer=N, from_checkpoint=ID, from_failure=True (or use replay_plan)',
      fork: {
        planId: `${planId}-fix`,
        sessionId: `sess-${planId}`,
        kind: 'fork',
        parentPlanId: planId,
        layer: 1,
        checkpointId: null,
        steps: 3,
        inheritedSteps: 1,
        changedSteps: ['b'],
        addedSteps: [],
        nextLayer: 1,
        nextSteps: ['b'],
        nextSeq: 1,
      },
      // the fork resumes from the parent's checkpoint of the layer it inherits
      point: { next_layer: 1, next_steps: ['b'], checkpoint: 'cp-a', next_seq: 1 },
      replay: {
        plan_id: `${planId}-again`,
        session_id: `other-${planId}`,
        kind: 'replay',
        layer: 0,
        next_steps: ['a'],
      },
      conflict: [409, `plan "${planId}-fix" already exists: choose another planId`],
      not_found: [404, 'plan "no-such-plan" not found'],
      no_admin:
        "replay_plan needs an admin key: create the client with admin_key= (a key of the server's HTTP_ADMIN_KEYS)",
      read_as_admin: [403, 'this API key lacks the admin scope'],
      lineage: {
        root_id: planId,
        plans: 3,
        truncated: false,
        nodes: [
          [planId, null, null, null, 'failed', false],
          [`${planId}-fix`, planId, 'fork', 1, 'completed', true],
          [`${planId}-again`, planId, 'replay', 0, 'executing', false],
        ],
        fork_cost: '0.00',
        same_as_dict: true,
      },
      async_plans: 3,
    });
    const p = kind === 'postgres' ? ['$1', '$2', '$3'] : ['?', '?', '?'];
    const rows: Array<Record<string, unknown>> = await stack.db.ds.query(
      `SELECT id, session_id, status, parent_plan_id, fork_kind, fork_layer FROM execution_plans WHERE id IN (${p.join(', ')}) ORDER BY id`,
      [planId, `${planId}-again`, `${planId}-fix`],
    );
    expect(rows.map((r) => ({ ...r, fork_layer: r.fork_layer === null ? null : Number(r.fork_layer) }))).toEqual([
      {
        id: planId,
        session_id: `sess-${planId}`,
        status: 'failed',
        parent_plan_id: null,
        fork_kind: null,
        fork_layer: null,
      },
      {
        id: `${planId}-again`,
        session_id: `other-${planId}`,
        status: 'executing',
        parent_plan_id: planId,
        fork_kind: 'replay',
        fork_layer: 0,
      },
      {
        id: `${planId}-fix`,
        session_id: `sess-${planId}`,
        status: 'completed',
        parent_plan_id: planId,
        fork_kind: 'fork',
        fork_layer: 1,
      },
    ]);
    // the fork ran b (edited) and c; a is its parent's
    const steps: Array<{ step_key: string; agent_id: string; task: string; status: string }> = await stack.db.ds.query(
      `SELECT step_key, agent_id, task, status FROM plan_steps WHERE plan_id = ${p[0]} ORDER BY step_index`,
      [`${planId}-fix`],
    );
    expect(steps).toEqual([
      { step_key: 'b', agent_id: 'y', task: 'second, fixed', status: 'completed' },
      { step_key: 'c', agent_id: 'x', task: 'third', status: 'completed' },
    ]);
  });
});
