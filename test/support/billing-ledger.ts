import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { PlanScript } from './read-dataset';

/**
 * The ledger the billing fixtures (test/fixtures/billing) are reconciled with, costs reported so
 * exact: claude-sonnet-4-20250514 on 2026-11-01, 101,000 + 22,000 tokens (90,000 cache reads, 5,000
 * cache writes) for 0.072 + 0.100 USD; claude-sonnet-4 without a provider on 2026-11-02, 10,500
 * tokens for 0.0375; claude-3-5-haiku on 2026-11-02 (not billed), 4,400 tokens for 0.0048; gpt-4o
 * (openai) on 2026-11-01, 1,100 tokens for 0.0035. Outside the bill: a step on 2026-10-31 and a
 * step of plan-deleted (soft-delete it).
 */
export function billingLedgerEvents(): PlanEvent[] {
  const steps = ['a', 'b', 'c', 'd', 'e'].map((stepId, index) => ({ stepId, index, agentId: 'agent', task: stepId }));
  const sonnet = { model: 'claude-sonnet-4-20250514', provider: 'anthropic' };
  const day1 = new PlanScript('plan-day1', 'sess-bill', '2026-11-01T10:00:00.000Z')
    .created({ query: 'day one', steps })
    .ran('a', [100000, 1000], { ...sonnet, cacheReadTokens: 90000, reportedCost: '0.072' })
    .ran('b', [20000, 2000], { ...sonnet, cacheWriteTokens: 5000, reportedCost: '0.1' })
    .ran('c', [1000, 100], {
      model: 'gpt-4o-2024-08-06',
      provider: 'openai',
      cacheReadTokens: 200,
      reportedCost: '0.0035',
    });
  // created before midnight, its steps complete on 2026-11-02
  const day2 = new PlanScript('plan-day2', 'sess-bill', '2026-11-01T23:59:50.000Z')
    .created({ query: 'day two', steps })
    .ran('a', [10000, 500], { model: 'claude-sonnet-4', reportedCost: '0.0375' })
    .ran('b', [4000, 400], { model: 'claude-3-5-haiku-20241022', provider: 'anthropic', reportedCost: '0.0048' });
  const before = new PlanScript('plan-before', 'sess-bill', '2026-10-31T12:00:00.000Z')
    .created({ query: 'the day before', steps })
    .ran('a', [7777, 77], { ...sonnet, reportedCost: '0.5' });
  const deleted = new PlanScript('plan-deleted', 'sess-bill', '2026-11-01T12:00:00.000Z')
    .created({ query: 'deleted', steps })
    .ran('a', [5555, 55], { ...sonnet, reportedCost: '0.25' });
  return [day1, day2, before, deleted].flatMap((s) =>
    s.events.map((e) => {
      const r = parsePlanEvent(e);
      if (!r.ok) throw new Error(r.error.message);
      return r.event;
    }),
  );
}
