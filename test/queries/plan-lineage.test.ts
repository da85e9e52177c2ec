import type { DataSource } from 'typeorm';
import { getPlanLineage, LINEAGE_MAX_PLANS, NotFoundError } from '../../src/queries';
import { ENTITY, ExecutionPlanRow } from '../../src/store/entities';
import { rowsPerStatement } from '../../src/store/sql/batch-limits';
import { sqlDialectOf } from '../../src/store/sql/dialects';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { planEvents } from '../support/fork-events';
import { cliIn } from '../support/parsed-event';

describe.each(ALL_TEST_DBS)('plans lineage on %s', (kind) => {
  let ds: DataSource;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    let db;
    ({ ds, close, db } = await createMigratedDb(kind));
    url = db.url;
    // root <- fork-a (layer 1, cp-1) <- fork-a-a (layer 1); root <- replay-b (layer 0, another session)
    await new PlanEventStore(ds).persist([
      ...planEvents('lin-root', 'sess-l1', '2030-01-01T00:00:00.000Z', { done: 2 }),
      ...planEvents('lin-fork-a', 'sess-l1', '2030-01-02T00:00:00.000Z', {
        forkOf: { planId: 'lin-root', kind: 'fork', layer: 1, checkpointId: 'cp-1' },
        done: 1,
      }),
      ...planEvents('lin-replay-b', 'sess-l2', '2030-01-03T00:00:00.000Z', {
        forkOf: { planId: 'lin-root', kind: 'replay', layer: 0 },
      }),
      ...planEvents('lin-fork-a-a', 'sess-l3', '2030-01-04T00:00:00.000Z', {
        forkOf: { planId: 'lin-fork-a', kind: 'fork', layer: 1 },
        done: 2,
        tokens: [5, 5],
      }),
      ...planEvents('lin-alone', 'sess-l1', '2030-01-05T00:00:00.000Z'),
    ]);
  });
  afterAll(async () => close?.());

  const cli = (...args: string[]) => cliIn(url, ...args);

  it('finds the whole tree from a fork of a fork: root, siblings oldest first, the plan asked for marked', async () => {
    const lineage = await getPlanLineage(ds, 'lin-fork-a-a');
    expect(lineage).toMatchObject({ planId: 'lin-fork-a-a', rootId: 'lin-root', plans: 4, truncated: false });
    const { root } = lineage;
    expect(root).toMatchObject({
      planId: 'lin-root',
      sessionId: 'sess-l1',
      parentPlanId: null,
      kind: null,
      forkLayer: null,
      forkCheckpoint: null,
      status: 'completed',
      totalSteps: 2,
      completedSteps: 2,
      failedSteps: 0,
      inputTokens: 2000,
      outputTokens: 468,
      current: false,
      retiredAt: null,
      createdAt: '2030-01-01T00:00:00.000Z',
    });
    expect(root.completedAt).toMatch(/^2030-01-01T/);
    expect(root.cost).toMatch(/^\d+\.\d{2,12}$/);
    expect(root.children.map((c) => c.planId)).toEqual(['lin-fork-a', 'lin-replay-b']);
    const [forkA, replayB] = root.children;
    expect(forkA).toMatchObject({
      kind: 'fork',
      forkLayer: 1,
      forkCheckpoint: 'cp-1',
      parentPlanId: 'lin-root',
      status: 'executing',
      completedSteps: 1,
      current: false,
    });
    expect(replayB).toMatchObject({ kind: 'replay', forkLayer: 0, forkCheckpoint: null, sessionId: 'sess-l2' });
    expect(replayB.children).toEqual([]);
    expect(forkA.children).toHaveLength(1);
    expect(forkA.children[0]).toMatchObject({
      planId: 'lin-fork-a-a',
      sessionId: 'sess-l3',
      current: true,
      status: 'completed',
      inputTokens: 10,
      outputTokens: 10,
      children: [],
    });

    // the same tree from any of its plans; a plan with no fork is a tree of one
    const fromRoot = await getPlanLineage(ds, 'lin-root');
    expect(fromRoot.rootId).toBe('lin-root');
    expect(fromRoot.root.current).toBe(true);
    expect(JSON.stringify({ ...fromRoot.root, current: false })).toEqual(
      JSON.stringify(root).replace('"current":true', '"current":false'),
    );
    expect(await getPlanLineage(ds, 'lin-alone')).toMatchObject({
      rootId: 'lin-alone',
      plans: 1,
      root: { children: [] },
    });
    await expect(getPlanLineage(ds, 'no-such-plan')).rejects.toThrow(NotFoundError);
  });

  it('plans lineage prints an indented tree; --json is the query; unknown plan: one line, exit 1', async () => {
    const text = await cli('plans', 'lineage', 'lin-fork-a');
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^lin-root {2}completed {2}2\/2 steps {2}2,468 tokens {2}\$\d+\.\d+$/);
    expect(lines[1]).toMatch(
      /^ {2}lin-fork-a {2}fork from layer 1 \(cp-1\) {2}executing {2}1\/2 steps {2}1,234 tokens {2}\$\d+\.\d+ {2}<- this plan$/,
    );
    expect(lines[2]).toMatch(
      /^ {4}lin-fork-a-a {2}fork from layer 1 {2}session sess-l3 {2}completed {2}2\/2 steps {2}20 tokens/,
    );
    expect(lines[3]).toMatch(
      /^ {2}lin-replay-b {2}replay from layer 0 {2}session sess-l2 {2}executing {2}0\/2 steps {2}0 tokens {2}\$0\.00$/,
    );

    const json = await cli('plans', 'lineage', 'lin-fork-a', '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(JSON.parse(JSON.stringify(await getPlanLineage(ds, 'lin-fork-a'))));

    const missing = await cli('plans', 'lineage', 'no-such-plan');
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toBe('plan-ledger: plan "no-such-plan" not found');
    expect((await cli('plans', 'lineage', '')).code).toBe(2);
  });

  it('shows a retired fork as retired; a retired plan itself is not found', async () => {
    const at = new Date('2030-02-01T00:00:00.000Z');
    await ds
      .createQueryBuilder()
      .update('ExecutionPlan')
      .set({ deletedAt: at })
      .where({ id: 'lin-replay-b' })
      .execute();
    try {
      const lineage = await getPlanLineage(ds, 'lin-root');
      expect(lineage.root.children[1]).toMatchObject({ planId: 'lin-replay-b', retiredAt: at.toISOString() });
      const text = await cli('plans', 'lineage', 'lin-root');
      expect(text.stdout).toContain(
        `lin-replay-b  replay from layer 0  session sess-l2  executing (retired ${at.toISOString()})`,
      );
      await expect(getPlanLineage(ds, 'lin-replay-b')).rejects.toThrow(
        'plan "lin-replay-b" not found: it was soft-deleted (plans restore brings it back)',
      );
    } finally {
      await ds
        .createQueryBuilder()
        .update('ExecutionPlan')
        .set({ deletedAt: null })
        .where({ id: 'lin-replay-b' })
        .execute();
    }
  });

  it('ends the walk up at a cycle of parents and at a parent no longer stored', async () => {
    await new PlanEventStore(ds).persist([
      ...planEvents('cyc-a', 'sess-c', '2030-03-01T00:00:00.000Z', {
        forkOf: { planId: 'cyc-b', kind: 'fork', layer: 0 },
      }),
      ...planEvents('cyc-b', 'sess-c', '2030-03-02T00:00:00.000Z', {
        forkOf: { planId: 'cyc-a', kind: 'fork', layer: 0 },
      }),
      ...planEvents('gone-child', 'sess-c', '2030-03-03T00:00:00.000Z', {
        forkOf: { planId: 'gone-parent', kind: 'replay', layer: 2 },
      }),
    ]);
    const cycle = await getPlanLineage(ds, 'cyc-a');
    expect(cycle).toMatchObject({ rootId: 'cyc-b', plans: 2, root: { children: [{ planId: 'cyc-a', children: [] }] } });
    const orphan = await getPlanLineage(ds, 'gone-child');
    expect(orphan).toMatchObject({
      rootId: 'gone-child',
      plans: 1,
      root: { parentPlanId: 'gone-parent', kind: 'replay' },
    });
    const text = await cli('plans', 'lineage', 'gone-child');
    expect(text.stdout).toMatch(/^gone-child {2}replay from layer 2 {2}parent gone-parent not stored {2}executing/);
  });

  it('cuts a tree of more than LINEAGE_MAX_PLANS plans at that many, and says so', async () => {
    const parent = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOneByOrFail({ id: 'lin-fork-a-a' });
    const forks = Array.from({ length: LINEAGE_MAX_PLANS + 5 }, (_, i) => ({
      ...parent,
      id: `wide-${String(i).padStart(5, '0')}`,
      parentPlanId: 'lin-fork-a-a',
    }));
    const per = rowsPerStatement(sqlDialectOf(ds), Object.keys(parent).length);
    for (let i = 0; i < forks.length; i += per)
      await ds
        .createQueryBuilder()
        .insert()
        .into(ENTITY.plan)
        .values(forks.slice(i, i + per))
        .updateEntity(false)
        .execute();
    try {
      const lineage = await getPlanLineage(ds, 'lin-fork-a-a');
      expect(lineage).toMatchObject({ rootId: 'lin-root', plans: LINEAGE_MAX_PLANS, truncated: true });
      const asked = lineage.root.children[0].children[0];
      expect(asked).toMatchObject({ planId: 'lin-fork-a-a', current: true });
      // the levels above it (root, its two children, itself) and then its forks, oldest first, up to the cap
      const shown = asked.children.map((c) => c.planId);
      expect(shown).toHaveLength(LINEAGE_MAX_PLANS - 4);
      expect(new Set(shown).size).toBe(shown.length);
      expect(asked.children[0]).toMatchObject({ parentPlanId: 'lin-fork-a-a', kind: 'fork', status: 'completed' });
      const text = await cli('plans', 'lineage', 'lin-fork-a-a');
      expect(text.code).toBe(0);
      expect(text.stdout.split('\n').pop()).toBe(
        `(tree cut at 100 levels or 10,000 plans: ${LINEAGE_MAX_PLANS} shown)`,
      );
    } finally {
      await ds
        .createQueryBuilder()
        .delete()
        .from(ENTITY.plan)
        .where('parentPlanId = :p', { p: 'lin-fork-a-a' })
        .execute();
    }
  });
});
