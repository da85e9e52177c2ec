/**
 * POST /v1/plans/{planId}/fork and /replay against a real `plan-ledger serve`: the rows a fork
 * gets, the answer (the CLI's `plans fork --json`), the admin scope, and each refusal's status
 * and line, nothing written by a refused request.
 */
import { PlanEvent } from '../../src/contracts';
import { parseEditSteps } from '../../src/fork/edit-steps';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { TestDb } from '../support/databases';
import { ADMIN_KEY, ApiStack, call, INGEST_KEY, READ_KEY, startApiStack } from './http-harness';
import { parsedEvent } from '../support/parsed-event';

jest.setTimeout(90_000);

const spec = (stepId: string, index: number, dependsOn: string[] = [], task = `task ${stepId}`) => ({
  stepId,
  index,
  agentId: `agent_${stepId}`,
  task,
  dependsOn,
});

/** a -> (b, c) -> d; a, b, c completed, checkpoint cp1 closes layer 1, d failed. */
function parentEvents(planId: string, sessionId: string): PlanEvent[] {
  let seq = 0;
  const ev = (type: string, payload: object): PlanEvent =>
    parsedEvent({
      planId,
      sessionId,
      seq,
      type,
      payload,
      occurredAt: new Date(Date.parse('2030-02-01T00:00:00.000Z') + seq++ * 1000),
    });
  return [
    ev('plan.created', {
      query: 'q',
      steps: [spec('a', 0), spec('b', 1, ['a']), spec('c', 2, ['a']), spec('d', 3, ['b', 'c'])],
    }),
    ev('step.completed', { stepId: 'a', inputTokens: 10, outputTokens: 1, result: 'A' }),
    ev('step.completed', { stepId: 'b', inputTokens: 20, outputTokens: 2, result: 'B' }),
    ev('step.completed', { stepId: 'c', inputTokens: 30, outputTokens: 3, result: 'C' }),
    ev('checkpoint.saved', { checkpointId: 'cp1', layer: 1, state: { k: 1 } }),
    ev('step.failed', { stepId: 'd', error: 'boom', inputTokens: 40, outputTokens: 4 }),
    ev('plan.finalized', { status: 'failed', failureReason: 'd failed' }),
  ];
}

describe.each<TestDb>(['sqlite', 'postgres'])('POST /v1/plans/{planId}/fork|replay on %s', (kind) => {
  let stack: ApiStack;
  const parent = `hf-parent-${kind}`;
  const session = `hf-sess-${kind}`;

  beforeAll(async () => {
    stack = await startApiStack(kind, { worker: false, env: { HTTP_ADMIN_KEYS: ADMIN_KEY } });
    await new PlanEventStore(stack.db.ds, undefined, { rowCacheBytes: 0 }).persist(parentEvents(parent, session));
  });
  afterAll(async () => {
    await stack?.close();
  });

  const param = kind === 'postgres' ? '$1' : '?';
  const post = (route: string, body?: unknown, key: string | null = ADMIN_KEY) =>
    call(stack, 'POST', route, { key, body });

  async function planRow(planId: string): Promise<Record<string, unknown> | undefined> {
    const [row] = await stack.db.ds.query(
      `SELECT session_id, status, query, parent_plan_id, fork_kind, fork_layer, fork_checkpoint, total_steps, deleted_at FROM execution_plans WHERE id = ${param}`,
      [planId],
    );
    if (!row) return undefined;
    return {
      ...row,
      fork_layer: row.fork_layer === null ? null : Number(row.fork_layer),
      total_steps: Number(row.total_steps),
    };
  }

  async function stepRows(planId: string): Promise<Array<Record<string, unknown>>> {
    const rows: Array<Record<string, unknown>> = await stack.db.ds.query(
      `SELECT step_key, step_index, agent_id, task, depends_on, status FROM plan_steps WHERE plan_id = ${param} ORDER BY step_index`,
      [planId],
    );
    return rows.map((r) => ({ ...r, step_index: Number(r.step_index) }));
  }

  async function events(planId: string): Promise<Array<{ seq: number; type: string }>> {
    const rows: Array<{ seq: unknown; type: string }> = await stack.db.ds.query(
      `SELECT seq, type FROM plan_events WHERE plan_id = ${param} ORDER BY seq`,
      [planId],
    );
    return rows.map((r) => ({ seq: Number(r.seq), type: r.type }));
  }

  const planCount = async (): Promise<number> =>
    Number((await stack.db.ds.query('SELECT COUNT(*) AS n FROM execution_plans'))[0].n);

  it('forks from a layer with an edited and an added step: 201, the outcome, Location, and only the edited steps stored', async () => {
    const forkId = `${parent}-f1`;
    const res = await post(`/v1/plans/${parent}/fork`, {
      fromLayer: 1,
      planId: forkId,
      editSteps: [spec('d', 3, ['b', 'c'], 'task d, fixed'), spec('e', 0, ['d'])],
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/v1/plans/${forkId}`);
    expect(res.json).toEqual({
      planId: forkId,
      sessionId: session,
      kind: 'fork',
      parentPlanId: parent,
      layer: 1,
      checkpointId: null,
      steps: 5,
      inheritedSteps: 1,
      changedSteps: ['d'],
      addedSteps: ['e'],
      nextLayer: 1,
      nextSteps: ['b', 'c'],
      nextSeq: 1,
    });
    expect(await planRow(forkId)).toEqual({
      session_id: session,
      status: 'executing',
      query: 'q',
      parent_plan_id: parent,
      fork_kind: 'fork',
      fork_layer: 1,
      fork_checkpoint: null,
      total_steps: 2, // the rows it has: the steps it changed or added (the reads count the others from its parent)
      deleted_at: null,
    });
    // a changed step keeps its parent's index, an added one goes after all of them
    expect(await stepRows(forkId)).toEqual([
      {
        step_key: 'd',
        step_index: 3,
        agent_id: 'agent_d',
        task: 'task d, fixed',
        depends_on: '["b","c"]',
        status: 'pending',
      },
      { step_key: 'e', step_index: 4, agent_id: 'agent_e', task: 'task e', depends_on: '["d"]', status: 'pending' },
    ]);
    expect(await events(forkId)).toEqual([{ seq: 0, type: 'plan.created' }]);
    // the parent is untouched
    expect(await planRow(parent)).toMatchObject({ status: 'failed', parent_plan_id: null, total_steps: 4 });
    // the fork's executor continues where the answer says, as after a restart
    const point = await call(stack, 'GET', `/v1/workflows/${forkId}/resume-point`);
    expect(point.json).toMatchObject({ resumable: true, nextLayer: 1, nextSeq: 1 });
    expect(point.json.nextSteps.map((s: { stepId: string }) => s.stepId)).toEqual(['b', 'c']);
    const lineage = await call(stack, 'GET', `/v1/plans/${forkId}/lineage`);
    expect(lineage.json.root.children.map((c: { planId: string }) => c.planId)).toContain(forkId);
  });

  it('forks from a checkpoint into another session, and from the failure', async () => {
    const fromCp = await post(`/v1/plans/${parent}/fork`, {
      fromCheckpoint: 'cp1',
      planId: `${parent}-cp`,
      sessionId: `${session}-other`,
    });
    expect(fromCp.status).toBe(201);
    expect(fromCp.json).toMatchObject({ layer: 2, checkpointId: 'cp1', inheritedSteps: 3, nextSteps: ['d'] });
    expect(await planRow(`${parent}-cp`)).toMatchObject({
      session_id: `${session}-other`,
      parent_plan_id: parent,
      fork_layer: 2,
      fork_checkpoint: 'cp1',
    });
    expect(await stepRows(`${parent}-cp`)).toEqual([]);
    const fromFailure = await post(`/v1/plans/${parent}/fork`, { fromFailure: true });
    expect(fromFailure.status).toBe(201);
    expect(fromFailure.json.planId).toMatch(new RegExp(`^${parent}\\.fork-[0-9a-f]{8}$`));
    expect(fromFailure.json).toMatchObject({ layer: 2, checkpointId: null, nextSteps: ['d'] });
    expect(await planRow(fromFailure.json.planId)).toMatchObject({ fork_kind: 'fork', fork_layer: 2 });
  });

  it('replays a plan: every layer to run again, no body needed', async () => {
    const res = await post(`/v1/plans/${parent}/replay`);
    expect(res.status).toBe(201);
    expect(res.json).toEqual({
      planId: expect.stringMatching(new RegExp(`^${parent}\\.replay-[0-9a-f]{8}$`)),
      sessionId: session,
      kind: 'replay',
      parentPlanId: parent,
      layer: 0,
      checkpointId: null,
      steps: 4,
      inheritedSteps: 0,
      changedSteps: [],
      addedSteps: [],
      nextLayer: 0,
      nextSteps: ['a'],
      nextSeq: 1,
    });
    expect(await planRow(res.json.planId)).toMatchObject({
      parent_plan_id: parent,
      fork_kind: 'replay',
      fork_layer: 0,
      fork_checkpoint: null,
      total_steps: 0,
    });
    const edited = await post(`/v1/plans/${parent}/replay`, {
      planId: `${parent}-r2`,
      editSteps: { steps: [spec('a', 0, [], 'task a, again')] },
    });
    expect(edited.status).toBe(201);
    expect(edited.json).toMatchObject({ planId: `${parent}-r2`, changedSteps: ['a'], nextSteps: ['a'] });
    expect(await stepRows(`${parent}-r2`)).toEqual([
      { step_key: 'a', step_index: 0, agent_id: 'agent_a', task: 'task a, again', depends_on: '[]', status: 'pending' },
    ]);
  });

  it('with an Idempotency-Key (or requestId), a request sent again answers the fork it created: one fork, even at once', async () => {
    const forks = async () =>
      Number(
        (
          await stack.db.ds.query(`SELECT COUNT(*) AS n FROM execution_plans WHERE parent_plan_id = ${param}`, [parent])
        )[0].n,
      );
    const before = await forks();
    const send = (key: string, body: object) =>
      call(stack, 'POST', `/v1/plans/${parent}/fork`, {
        key: ADMIN_KEY,
        body,
        headers: { 'idempotency-key': key },
      });
    // the answer of the first is lost (an ambiguous commit): the client sends the same request again
    const first = await send('req-1', { fromLayer: 2 });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await send('req-1', { fromLayer: 2 });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual(first.json);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(await forks()).toBe(before + 1);
    // with a plan id of the caller's (before: 409 "already exists" on the retry), and as a body field
    const named = { fromLayer: 1, planId: `hf-idem-${kind}`, requestId: 'req-2' };
    const post1 = await post(`/v1/plans/${parent}/fork`, named);
    const post2 = await post(`/v1/plans/${parent}/fork`, named);
    expect([post1.status, post2.status]).toEqual([201, 201]);
    expect(post2.json).toEqual(post1.json);
    expect(await forks()).toBe(before + 2);
    // the same request twice at once
    const both = await Promise.all([send('req-3', { fromLayer: 0 }), send('req-3', { fromLayer: 0 })]);
    expect(both.map((a) => a.status)).toEqual([201, 201]);
    expect(both[1].json).toEqual(both[0].json);
    expect(await forks()).toBe(before + 3);
    // a key used for another plan id is refused, and a header that differs from the field is a bad request
    const reused = await post(`/v1/plans/${parent}/fork`, { ...named, planId: `hf-idem2-${kind}` });
    expect(reused.status).toBe(409);
    expect(reused.json).toEqual({
      error: `Idempotency-Key "req-2" created plan "hf-idem-${kind}" already; a new fork needs a new one`,
    });
    const differs = await send('req-4', { fromLayer: 0, requestId: 'req-5' });
    expect(differs.status).toBe(400);
    expect(differs.text).toContain('differs from the Idempotency-Key header');
    expect(await forks()).toBe(before + 3);
  });

  it('needs the admin scope: 401 without a key, 403 with a read or ingest key; nothing written', async () => {
    const before = await planCount();
    const body = { fromLayer: 1 };
    const none = await post(`/v1/plans/${parent}/fork`, body, null);
    expect(none.status).toBe(401);
    expect(none.json).toEqual({ error: 'missing API key: send "Authorization: Bearer <key>"' });
    expect((await post(`/v1/plans/${parent}/replay`, {}, 'not-a-key-but-long-enough-000')).status).toBe(401);
    for (const key of [READ_KEY, INGEST_KEY]) {
      const refused = await post(`/v1/plans/${parent}/fork`, body, key);
      expect(refused.status).toBe(403);
      expect(refused.json).toEqual({ error: 'this API key lacks the admin scope' });
      expect((await post(`/v1/plans/${parent}/replay`, {}, key)).status).toBe(403);
    }
    expect(await planCount()).toBe(before);
  });

  it('answers a malformed body 400 with one line naming the field, as the CLI checks edit steps; nothing written', async () => {
    const before = await planCount();
    const fork = `/v1/plans/${parent}/fork`;
    const cases: Array<[string, unknown, string]> = [
      [
        fork,
        {},
        'body: give exactly one of "fromLayer": N, "fromCheckpoint": "<id>", "fromFailure": true (or POST .../replay)',
      ],
      [
        fork,
        { fromLayer: 1, fromFailure: true },
        'body: give exactly one of "fromLayer": N, "fromCheckpoint": "<id>", "fromFailure": true (or POST .../replay)',
      ],
      [fork, { fromLayer: '1' }, 'fromLayer: must be a layer number (an integer, 0 or more); got "1"'],
      [fork, { fromLayer: -1 }, 'fromLayer: must be a layer number (an integer, 0 or more); got -1'],
      [fork, { fromLayer: 4 }, `fromLayer: plan "${parent}" has layers 0-2; got 4`],
      [fork, { fromFailure: 'yes' }, 'fromFailure: must be true or false; got "yes"'],
      [fork, { fromCheckpoint: 7 }, 'fromCheckpoint: must be a string id (1-64 characters); got 7'],
      [fork, { fromLayer: 1, planId: '' }, 'planId: "" is not an id (1-64 characters)'],
      [
        fork,
        { fromLayer: 1, planId: 'has space' },
        'planId: "has space" is not a plan id (1-64 letters, digits, _ . : -)',
      ],
      [
        fork,
        { fromLayer: 1, frmLayer: 1 },
        'frmLayer: is not a field of a fork request; its fields: fromLayer, fromCheckpoint, fromFailure, planId, sessionId, editSteps, requestId',
      ],
      [
        fork,
        [1],
        'body: must be a JSON object with fromLayer, fromCheckpoint, fromFailure, planId, sessionId, editSteps, requestId',
      ],
      [fork, { fromLayer: 1, editSteps: 'd' }, 'editSteps: must be a JSON array of steps, or an object with "steps"'],
      [
        fork,
        { fromLayer: 1, editSteps: [{ stepId: 'd', index: 3, task: 'no agent' }] },
        'editSteps: steps[0].agentId is required',
      ],
      [
        `/v1/plans/${parent}/replay`,
        { fromLayer: 1 },
        'fromLayer: a replay runs every layer again: use POST /v1/plans/{planId}/fork to start elsewhere',
      ],
    ];
    for (const [route, body, error] of cases) {
      const res = await post(route, body);
      expect({ body, status: res.status, json: res.json }).toEqual({ body, status: 400, json: { error } });
    }
    // the CLI's --edit-steps file and the body's editSteps go through the same check: the same problem
    const bad = [{ stepId: 'd', index: 3, agentId: 'x', task: 't', extra: 1 }];
    const res = await post(fork, { fromLayer: 1, editSteps: bad });
    expect(() => parseEditSteps(JSON.stringify(bad), 'edits.json')).toThrow(
      `--edit-steps: edits.json: ${res.json.error.replace(/^editSteps: /, '')}`,
    );
    expect(await planCount()).toBe(before);
  });

  it('answers an unknown parent or checkpoint 404, a refused fork 409; nothing written', async () => {
    const before = await planCount();
    const missing = await post('/v1/plans/no-such-plan/fork', { fromLayer: 0 });
    expect(missing).toMatchObject({ status: 404, json: { error: 'plan "no-such-plan" not found' } });
    expect((await post('/v1/plans/no-such-plan/replay', {})).status).toBe(404);
    const noCheckpoint = await post(`/v1/plans/${parent}/fork`, { fromCheckpoint: 'cp9' });
    expect(noCheckpoint).toMatchObject({
      status: 404,
      json: { error: `checkpoint "cp9" not found in plan "${parent}"` },
    });
    const cases: Array<[string, unknown, string]> = [
      [
        `/v1/plans/${parent}/fork`,
        { fromLayer: 1, planId: parent },
        `plan "${parent}" already exists: choose another planId`,
      ],
      [`/v1/plans/${parent}/replay`, { planId: parent }, `plan "${parent}" already exists: choose another planId`],
      [
        `/v1/plans/${parent}/fork`,
        { fromLayer: 1, editSteps: [spec('a', 0, [], 'changed')] },
        'editSteps: step "a" is in a layer before 1, which the fork inherits; fork from its layer to change it',
      ],
      [
        `/v1/plans/${parent}/fork`,
        { fromLayer: 1, editSteps: [spec('b', 1, ['d'])] },
        expect.stringMatching(/^editSteps: .*cycle/),
      ],
      [
        `/v1/plans/${parent}/fork`,
        { fromCheckpoint: 'cp1', editSteps: [spec('x', 0)] },
        'editSteps: step "x" would run in a layer before 2, which the fork inherits; make it depend on a step of layer 1 or later',
      ],
    ];
    for (const [route, body, error] of cases) {
      const res = await post(route, body);
      expect({ body, status: res.status, json: res.json }).toEqual({ body, status: 409, json: { error } });
    }
    // a plan with no failed step has no failure to start from
    const done = `${parent}-done`;
    await new PlanEventStore(stack.db.ds, undefined, { rowCacheBytes: 0 }).persist(
      parentEvents(done, session).filter((e) => e.type === 'plan.created'),
    );
    const noFailure = await post(`/v1/plans/${done}/fork`, { fromFailure: true });
    expect(noFailure).toMatchObject({
      status: 409,
      json: { error: `plan "${done}" has no failed step: fork it with fromLayer N instead` },
    });
    expect(await planCount()).toBe(before + 1);
  });
});
