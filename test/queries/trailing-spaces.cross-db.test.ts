/**
 * Agent and model names are free text: `'coder'` and `'coder '` are two agents. SQL Server and
 * MariaDB/MySQL (PAD SPACE collations) compare them equal, so their reads group and filter by the
 * byte length too; every database answers the same.
 */
import type { DataSource } from 'typeorm';
import { agentUsage, handoffPatterns, listPlans, tokenUsage } from '../../src/queries';
import { recordingMssql } from '../support/recording-mssql';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';

describe.each(ALL_TEST_DBS)('names that differ only in trailing spaces (%s)', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  const plain = planRun({ seed: 501, steps: 2, agents: ['coder'] });
  const padded = planRun({ seed: 502, steps: 3, agents: ['coder '] });

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    await new PlanEventStore(ds).persist([...plain, ...padded]);
  });
  afterAll(async () => close());

  it('are two agents in the usage report and the token totals', async () => {
    const usage = await agentUsage(ds);
    expect(usage.map((a) => [a.agentId, a.totalSteps])).toEqual([
      ['coder ', 3],
      ['coder', 2],
    ]);
    const tokens = await tokenUsage(ds, {}, ['agent']);
    expect(tokens.byAgent!.map((a) => a.agentId).sort()).toEqual(['coder', 'coder ']);
  });

  it('filter plans by agent exactly', async () => {
    const page = await listPlans(ds, { agentId: 'coder', limit: 10, offset: 0 });
    expect(page.plans.map((p) => p.planId)).toEqual([plain[0].planId]);
    const padPage = await listPlans(ds, { agentId: 'coder ', limit: 10, offset: 0 });
    expect(padPage.plans.map((p) => p.planId)).toEqual([padded[0].planId]);
  });
});

describe('names that differ only in trailing spaces (SQL Server, recorded SQL)', () => {
  it('groups by the byte length too and filters on it', async () => {
    const { ds, statements } = await recordingMssql();
    // a range that starts and ends within a day: whole days from the rollups, the ends from the steps
    const range = { from: new Date('2026-01-01T06:00:00Z'), to: new Date('2026-01-09T06:00:00Z') };
    await agentUsage(ds, range);
    await tokenUsage(ds, range, ['agent', 'model']);
    await handoffPatterns(ds, range);
    await listPlans(ds, { agentId: 'coder', limit: 10, offset: 0 });
    const sql = statements.map((s) => s.sql).join('\n');
    expect(sql).toContain('GROUP BY "s"."agent_id", DATALENGTH("s"."agent_id"), "s"."model", DATALENGTH("s"."model")');
    expect(sql).toContain('GROUP BY "r"."agent_id", DATALENGTH("r"."agent_id"), "r"."model", DATALENGTH("r"."model")');
    expect(sql).toContain('DATALENGTH("h"."from_agent_id"), "h"."to_agent_id", DATALENGTH("h"."to_agent_id")');
    expect(sql).toContain(
      'GROUP BY "r"."agent_id", DATALENGTH("r"."agent_id"), "r"."model", DATALENGTH("r"."model"), "r"."session_id", DATALENGTH("r"."session_id")',
    );
    expect(sql).toContain('("a"."agent_id" = @0 AND DATALENGTH("a"."agent_id") = DATALENGTH(@0))');
  });
});
