import type { DataSource } from 'typeorm';
import { parsePlanEvent } from '../../src/contracts';
import {
  agentUsage,
  exportPlanTemplate,
  getActivePlan,
  getPlanHistory,
  getPlanView,
  getResumePoint,
  getStepOutput,
  handoffPatterns,
  diffSteps,
  listPlans,
  NotFoundError,
  plansPerDay,
  Resumable,
  tokenUsage,
} from '../../src/queries';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { DAG_LAYER_SIZES, dagKey, DELETED_PLAN, loadReadDataset, PlanScript } from '../support/read-dataset';

/** What each read answers, on the shared dataset (SQLite; the cross-db test proves the others equal). */
describe('read queries', () => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb('sqlite'));
    await loadReadDataset(ds);
  });
  afterAll(async () => close());

  describe('plans show', () => {
    it('gives a failed plan its failed step, skipped steps and a time-ordered timeline', async () => {
      const view = await getPlanView(ds, 'plan-a2');
      expect(view.plan).toMatchObject({
        status: 'failed',
        failedSteps: 1,
        skippedSteps: 2,
        inputTokens: 800,
        outputTokens: 100,
        durationMs: 57_000,
      });
      expect(view.steps[1]).toMatchObject({
        stepId: 'search',
        status: 'failed',
        error: 'timeout calling search API after 30s',
        durationMs: 30_000,
        inputTokens: 300,
      });
      expect(view.steps[2]).toMatchObject({ status: 'skipped', result: 'upstream step search failed' });
      expect(view.handoffs).toEqual([
        expect.objectContaining({ handoffId: 'h-a2-1', stepId: 'search', reason: 'escalation' }),
      ]);
      expect(view.timeline.map((e) => `${e.kind}${e.stepIndex === null ? '' : `#${e.stepIndex}`}`)).toEqual([
        'plan.created',
        'step.started#0',
        'step.completed#0',
        'step.started#1',
        'step.failed#1',
        'handoff#1',
        'step.skipped#2',
        'step.skipped#3',
        'plan.finalized',
      ]);
      const times = view.timeline.map((e) => e.at!);
      expect([...times].sort()).toEqual(times);
      expect(view.timeline.find((e) => e.kind === 'step.failed')).toMatchObject({
        agentId: 'researcher',
        error: 'timeout calling search API after 30s',
        durationMs: 30_000,
      });
    });

    it('shows the edit decision with the steps it added', async () => {
      const view = await getPlanView(ds, 'plan-a3');
      expect(view.decisions).toEqual([
        expect.objectContaining({
          decision: 'edit',
          decidedBy: 'alice',
          editedStepCount: 3,
          feedback: 'add tests before merging',
        }),
      ]);
      expect(view.decisions[0].stepChanges).toEqual({ added: ['test'], removed: [], changed: [], replaced: [] });
      expect(view.steps.map((s) => s.stepId)).toEqual(['design', 'code', 'test']);
    });

    it('says what an edit changed, step by step, whatever the order of the lists and of dependsOn', () => {
      const before = [
        { stepId: 'a', agentId: 'x', task: 't' },
        { stepId: 'b', agentId: 'y', task: 'u', dependsOn: ['a', 'c'] },
        { stepId: 'c', agentId: 'z', task: 'v' },
      ];
      const after = [
        { stepId: 'd', agentId: 'x', task: 'w' },
        { stepId: 'b', agentId: 'y', task: 'u', dependsOn: ['c', 'a'] },
        { stepId: 'a', agentId: 'x2', task: 't' },
      ];
      // what the edit replaced keeps the old text of the changed and removed steps, for the audit
      expect(diffSteps(before, after)).toEqual({
        added: ['d'],
        removed: ['c'],
        changed: ['a'],
        replaced: [
          { stepId: 'a', agentId: 'x', task: 't', title: null, expectedOutput: null, dependsOn: [] },
          { stepId: 'c', agentId: 'z', task: 'v', title: null, expectedOutput: null, dependsOn: [] },
        ],
      });
      expect(diffSteps(before, [...before].reverse())).toEqual({ added: [], removed: [], changed: [], replaced: [] });
    });

    it('does not find a soft-deleted or unknown plan', async () => {
      await expect(getPlanView(ds, DELETED_PLAN)).rejects.toThrow(new NotFoundError('plan', DELETED_PLAN));
      await expect(getPlanView(ds, 'plan-unknown')).rejects.toThrow('plan "plan-unknown" not found');
    });
  });

  describe('plans list', () => {
    it('pages newest first without overlap and filters by session and status', async () => {
      const all = await listPlans(ds, { limit: 1000 });
      expect(all.total).toBe(10);
      expect(all.plans.map((p) => p.planId)).not.toContain(DELETED_PLAN);
      const pages = [
        await listPlans(ds, { limit: 4 }),
        await listPlans(ds, { limit: 4, offset: 4 }),
        await listPlans(ds, { limit: 4, offset: 8 }),
      ];
      expect(pages.flatMap((p) => p.plans.map((x) => x.planId))).toEqual(all.plans.map((x) => x.planId));
      expect(all.plans[0].planId).toBe('plan-dag');
      const failed = await listPlans(ds, { sessionId: 'sess-alpha', statuses: ['failed'], limit: 10 });
      expect(failed).toMatchObject({ total: 1, plans: [{ planId: 'plan-a2' }] });
    });

    it('filters by creation time (from inclusive, to exclusive) and by an agent that has a step in the plan (the console)', async () => {
      const all = (await listPlans(ds, { limit: 1000 })).plans;
      const byAgent = await listPlans(ds, { agentId: 'researcher', limit: 1000 });
      const steps = await Promise.all(
        all.map(async (p) => ({
          planId: p.planId,
          agents: (await getPlanView(ds, p.planId)).steps.map((s) => s.agentId),
        })),
      );
      const expected = steps.filter((p) => p.agents.includes('researcher')).map((p) => p.planId);
      expect(expected.length).toBeGreaterThan(0);
      expect(expected.length).toBeLessThan(all.length);
      expect(byAgent.plans.map((p) => p.planId)).toEqual(expected);
      expect(byAgent.total).toBe(expected.length);
      const times = [...new Set(all.map((p) => p.createdAt))].sort();
      const from = new Date(times[1]);
      const to = new Date(times[times.length - 1]);
      const inRange = await listPlans(ds, { created: { from, to }, limit: 1000 });
      expect(inRange.plans.map((p) => p.planId)).toEqual(
        all.filter((p) => p.createdAt >= times[1] && p.createdAt < times[times.length - 1]).map((p) => p.planId),
      );
      expect(inRange.total).toBeGreaterThan(0);
      expect(await listPlans(ds, { agentId: 'nobody', limit: 10 })).toMatchObject({ total: 0, plans: [] });
    });
  });

  describe('sessions', () => {
    it("finds each session's plan in progress with its steps", async () => {
      expect((await getActivePlan(ds, 'sess-alpha')).activePlan).toMatchObject({
        planId: 'plan-a3',
        steps: [
          { stepId: 'design', status: 'completed' },
          { stepId: 'code', status: 'in_progress' },
          { stepId: 'test', status: 'pending' },
        ],
      });
      expect((await getActivePlan(ds, 'sess-beta')).activePlan).toMatchObject({
        planId: 'plan-b2',
        status: 'planning',
        approvalStatus: 'pending',
      });
      expect((await getActivePlan(ds, 'sess-gamma')).activePlan?.planId).toBe('plan-c3');
      // a session with no plan stored has no active plan (a restarted application restores nothing), not "not found"
      expect(await getActivePlan(ds, 'sess-nobody')).toEqual({
        sessionId: 'sess-nobody',
        activePlan: null,
        otherActivePlanIds: [],
      });
    });

    it('lists finished plans newest first, bounded by the limit', async () => {
      expect((await getPlanHistory(ds, 'sess-alpha')).plans.map((p) => p.planId)).toEqual(['plan-a2', 'plan-a1']);
      expect((await getPlanHistory(ds, 'sess-beta', 1)).plans.map((p) => p.planId)).toEqual(['plan-b3']);
      // plan-c2 finished too, but it is soft-deleted
      expect((await getPlanHistory(ds, 'sess-gamma')).plans.map((p) => p.planId)).toEqual(['plan-c1']);
      await expect(getPlanHistory(ds, 'sess-nobody')).rejects.toThrow('session "sess-nobody" not found');
    });
  });

  describe('workflows resume-point', () => {
    it('resumes a 120-step, 6-layer DAG after its last checkpointed layer', async () => {
      const point = (await getResumePoint(ds, 'plan-dag')) as Resumable;
      expect(point.resumable).toBe(true);
      expect(point.dag.steps).toHaveLength(120);
      expect(point.dag.layers.map((l) => l.length)).toEqual(DAG_LAYER_SIZES);
      expect(point.latestCheckpoint).toMatchObject({
        checkpointId: 'ck-dag-2',
        layer: 2,
        state: { layer: 2, context: { branch: 'migrate-l2' } },
      });
      expect(point).toMatchObject({ lastCompletedLayer: 2, nextLayer: 3 });
      expect(point.nextSteps.map((s) => s.stepId)).toEqual(Array.from({ length: 30 }, (_, i) => dagKey('t', 3, i)));
      expect(point.nextSteps[5]).toMatchObject({ status: 'failed', dependsOn: [dagKey('t', 2, 5), dagKey('t', 2, 6)] });
      expect(point.layers[3]).toEqual({ layer: 3, steps: 30, completed: 5, failed: 1, skipped: 0, unfinished: 24 });
    });

    it.each([
      ['plan-a1', 'it already finished at 2026-02-02T09:01:07.000Z (completed)'],
      [
        'plan-a2',
        'it already finished at 2026-02-03T10:00:57.000Z (failed: step search failed: timeout calling search API after 30s)',
      ],
      ['plan-b1', 'it was cancelled at 2026-02-03T15:00:30.000Z: its plan was rejected'],
      ['plan-c1', 'it was cancelled at 2026-02-04T13:00:11.000Z (user stopped the plan)'],
      ['plan-b2', 'it is still waiting for an approval decision'],
      [DELETED_PLAN, 'it was deleted by retention'],
      ['plan-c3', 'no DAG is stored for it (expired or never written)'],
    ])('%s cannot be resumed because %s', async (planId, reason) => {
      expect(await getResumePoint(ds, planId)).toMatchObject({ resumable: false, reason });
    });

    it('starts at layer 0 when nothing is checkpointed, and throws for unknown ids', async () => {
      expect(await getResumePoint(ds, 'plan-a3')).toMatchObject({
        resumable: true,
        latestCheckpoint: null,
        lastCompletedLayer: null,
        nextLayer: 0,
        nextSteps: [{ stepId: 'design' }],
      });
      await expect(getResumePoint(ds, 'plan-unknown')).rejects.toThrow(NotFoundError);
    });
  });

  describe('steps output', () => {
    it('reads the stored output by index or by stepId', async () => {
      expect(await getStepOutput(ds, 'plan-a1', '0')).toMatchObject({
        stepId: 'read',
        outputContent: '# Plan\n\n1. Add references.bib\n2. Cite in chapter 2\n',
      });
      expect(await getStepOutput(ds, 'plan-a1', 'draft')).toMatchObject({
        index: 1,
        outputContent: 'bibliography draft',
        model: 'claude-sonnet',
      });
      expect(await getStepOutput(ds, 'plan-a1', 'review')).toMatchObject({ outputContent: null, status: 'completed' });
      await expect(getStepOutput(ds, 'plan-a1', '7')).rejects.toThrow('step "7" not found in plan "plan-a1"');
      await expect(getStepOutput(ds, DELETED_PLAN, '0')).rejects.toThrow(NotFoundError);
    });

    it('prefers a stepId that looks like an index', async () => {
      const plan = new PlanScript('plan-numeric', 'sess-numeric', '2026-03-01T00:00:00.000Z')
        .created({
          query: 'numbers',
          steps: [
            { stepId: '1', index: 0, agentId: 'a', task: 'one' },
            { stepId: '0', index: 1, agentId: 'a', task: 'zero', dependsOn: ['1'] },
          ],
        })
        .ran('1', [1, 1], { outputContent: 'stepId 1' })
        .ran('0', [1, 1], { outputContent: 'stepId 0' });
      await new PlanEventStore(ds).persist(
        plan.events.map((e) => (parsePlanEvent(e) as { ok: true; event: never }).event),
      );
      expect((await getStepOutput(ds, 'plan-numeric', '1')).outputContent).toBe('stepId 1');
      expect((await getStepOutput(ds, 'plan-numeric', '0')).outputContent).toBe('stepId 0');
    });
  });

  describe('plans export', () => {
    it('gives a template without runtime state that is a valid plan.created payload', async () => {
      const template = await exportPlanTemplate(ds, 'plan-a1');
      expect(template).toEqual({
        templateVersion: 1,
        sourcePlanId: 'plan-a1',
        query: 'Add a bibliography section to the thesis',
        requiresApproval: false,
        complexity: 3,
        agents: ['researcher', 'reviewer', 'writer'],
        steps: [
          {
            stepId: 'read',
            index: 0,
            agentId: 'researcher',
            task: 'Read the existing structure',
            title: 'Read existing structure',
          },
          {
            stepId: 'draft',
            index: 1,
            agentId: 'writer',
            task: 'Draft the bibliography',
            title: 'Draft bibliography',
            dependsOn: ['read'],
          },
          {
            stepId: 'review',
            index: 2,
            agentId: 'reviewer',
            task: 'Review citations',
            title: 'Review citations',
            dependsOn: ['draft'],
          },
        ],
      });
      const dag = await exportPlanTemplate(ds, 'plan-dag');
      const replay = parsePlanEvent({
        specVersion: 1,
        eventId: '00000000-0000-4000-8000-000000000001',
        type: 'plan.created',
        planId: 'plan-replay',
        sessionId: 'sess-replay',
        seq: 0,
        occurredAt: '2026-03-01T00:00:00Z',
        payload: {
          query: dag.query,
          steps: dag.steps,
          requiresApproval: dag.requiresApproval,
          complexity: dag.complexity,
        },
      });
      expect(replay.ok).toBe(true);
    });
  });

  describe('analytics', () => {
    it('counts plans per UTC day with completed and failed, newest first', async () => {
      const days = await plansPerDay(ds, { to: new Date('2026-03-01T00:00:00Z') });
      expect(days).toEqual([
        { day: '2026-02-06', totalPlans: 1, completed: 0, failed: 0, cancelled: 0, inProgress: 1 },
        { day: '2026-02-05', totalPlans: 3, completed: 1, failed: 0, cancelled: 0, inProgress: 2 },
        { day: '2026-02-04', totalPlans: 3, completed: 1, failed: 0, cancelled: 1, inProgress: 1 },
        { day: '2026-02-03', totalPlans: 2, completed: 0, failed: 1, cancelled: 1, inProgress: 0 },
        { day: '2026-02-02', totalPlans: 1, completed: 1, failed: 0, cancelled: 0, inProgress: 0 },
      ]);
      const feb4 = await plansPerDay(ds, {
        from: new Date('2026-02-04T00:00:00Z'),
        to: new Date('2026-02-04T12:00:00Z'),
      });
      expect(feb4).toEqual([
        { day: '2026-02-04', totalPlans: 1, completed: 0, failed: 0, cancelled: 0, inProgress: 1 },
      ]); // plan-b2; b3 at 12:00 is excluded
    });

    it('gives per agent steps, success rate and average tokens of the steps that ran', async () => {
      const agents = await agentUsage(ds, { to: new Date('2026-03-01T00:00:00Z') });
      expect(agents.find((a) => a.agentId === 'researcher')).toEqual({
        agentId: 'researcher',
        totalSteps: 3,
        completed: 2,
        failed: 1,
        skipped: 0,
        successRate: 0.6667,
        avgInputTokens: 666.67,
        avgOutputTokens: 133.33,
        inputTokens: 2000,
        outputTokens: 400,
      });
      expect(agents.find((a) => a.agentId === 'git-agent')).toMatchObject({
        totalSteps: 2,
        successRate: null,
        avgInputTokens: null,
      });
      expect(agents.map((a) => a.agentId)).not.toContain('ghost-agent');
      const feb6 = await agentUsage(ds, {
        from: new Date('2026-02-06T00:00:00Z'),
        to: new Date('2026-02-07T00:00:00Z'),
      });
      expect(feb6.reduce((n, a) => n + a.totalSteps, 0)).toBe(120);
    });

    it('gives the handoff matrix with reasons, without deleted plans', async () => {
      const handoffs = await handoffPatterns(ds);
      expect(handoffs[0]).toEqual({ fromAgentId: 'planner', toAgentId: 'coder', reason: 'needs_code', count: 1 });
      expect(handoffs.filter((h) => h.reason === 'needs_writing')).toHaveLength(2);
      expect(handoffs.map((h) => h.reason)).not.toContain('ghost');
    });

    it('gives tokens per session, plan, agent and model that add up to the same total', async () => {
      const usage = await tokenUsage(ds, { to: new Date('2026-03-01T00:00:00Z') });
      const noParts = { cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
      expect(usage.total).toEqual({ inputTokens: 14_380, outputTokens: 6_643, totalTokens: 21_023, ...noParts });
      for (const rows of [usage.bySession!, usage.byPlan!, usage.byAgent!, usage.byModel!]) {
        expect(rows.reduce((n, r) => n + r.totalTokens, 0)).toBe(usage.total.totalTokens);
      }
      expect(usage.bySession![0]).toEqual({
        sessionId: 'sess-dag',
        plans: 2,
        inputTokens: 7_580,
        outputTokens: 3_373,
        totalTokens: 10_953,
        ...noParts,
      });
      expect(usage.byModel!.map((m) => m.model)).toEqual(['gpt-4o', 'claude-sonnet', 'gpt-4o-mini']);
      const onlyPlans = await tokenUsage(ds, {}, ['plan']);
      expect(Object.keys(onlyPlans).sort()).toEqual(['byPlan', 'page', 'total']);
    });
  });
});
