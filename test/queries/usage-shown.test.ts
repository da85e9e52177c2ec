import type { PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import type { TestDb } from '../support/databases';
import { cliIn, parsedEvent } from '../support/parsed-event';
import { ApiStack, call, startApiStack } from '../http/http-harness';

jest.setTimeout(120_000);

const PLAN = 'plan-usage';

/** A plan with cache reads (gpt-4o), cache writes and reasoning (claude-sonnet-4), and a provider-reported cost. */
function usagePlan(): PlanEvent[] {
  let seq = 0;
  const ev = (type: string, payload: object, occurredAt: string): PlanEvent =>
    parsedEvent({ planId: PLAN, sessionId: 'sess-usage', seq: seq++, type, payload, occurredAt });
  const steps = ['cached', 'written', 'reported'];
  return [
    ev(
      'plan.created',
      { query: 'q', steps: steps.map((stepId, index) => ({ stepId, index, agentId: `agent-${stepId}`, task: 't' })) },
      '2025-06-11T00:00:00.000Z',
    ),
    ev(
      'step.completed',
      {
        stepId: 'cached',
        inputTokens: 1200,
        outputTokens: 300,
        cacheReadTokens: 1000,
        model: 'gpt-4o',
        provider: 'openai',
      },
      '2025-06-11T00:00:01.000Z',
    ),
    ev(
      'step.completed',
      {
        stepId: 'written',
        inputTokens: 1000,
        outputTokens: 100,
        cacheWriteTokens: 800,
        reasoningTokens: 40,
        model: 'claude-sonnet-4',
        provider: 'anthropic',
      },
      '2025-06-11T00:00:02.000Z',
    ),
    ev(
      'step.completed',
      { stepId: 'reported', inputTokens: 1000, outputTokens: 100, model: 'gpt-4o', reportedCost: '0.01' },
      '2025-06-11T00:00:03.000Z',
    ),
    ev('plan.finalized', { status: 'completed' }, '2025-06-11T00:00:04.000Z'),
  ];
}

async function cli(url: string, args: string[]): Promise<string> {
  const { code, stdout, stderr } = await cliIn(url, ...args);
  if (code !== 0) throw new Error(`plan-ledger ${args.join(' ')} exited ${code}: ${stderr}`);
  return stdout;
}

/** Each step's usage as the reader sees it: [stepId, cache read, cache write, reasoning, cost, reported, priced]. */
const EXPECTED_STEPS = [
  // 200 x $2.5 + 1,000 cache reads x $1.25 + 300 x $10 per Mtok
  ['cached', 1000, 0, 0, '0.00475', null, null],
  // 200 x $3 + 800 cache writes x $3.75 + 100 x $15 per Mtok
  ['written', 0, 800, 40, '0.0051', null, null],
  // the provider's figure wins; the prices give 1,000 x $2.5 + 100 x $10 per Mtok
  ['reported', 0, 0, 0, '0.01', '0.01', '0.0035'],
];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const usageOf = (steps: any[]) =>
  steps.map((s) => [
    s.stepId,
    s.cacheReadTokens,
    s.cacheWriteTokens,
    s.reasoningTokens,
    s.cost,
    s.reportedCost,
    s.pricedCost,
  ]);

describe.each<TestDb>(['sqlite', 'postgres'])(
  'cache, reasoning and reported cost where tokens are shown (%s)',
  (kind) => {
    let stack: ApiStack;
    beforeAll(async () => {
      stack = await startApiStack(kind, { worker: false });
      await new PlanEventStore(stack.db.ds).persist(usagePlan());
    });
    afterAll(async () => {
      await stack?.close();
    });

    it('plans show: --json and the HTTP read give each step its cache, reasoning, reported and priced cost', async () => {
      const json = JSON.parse(await cli(stack.db.db.url, ['plans', 'show', PLAN, '--json']));
      expect(usageOf(json.steps)).toEqual(EXPECTED_STEPS);
      const http = await call(stack, 'GET', `/v1/plans/${PLAN}`);
      expect(http.status).toBe(200);
      expect(usageOf(http.json.steps)).toEqual(EXPECTED_STEPS);
      expect(http.json.steps[1].provider).toBe('anthropic');
    });

    it('plans show: the header sums the parts and names the reported cost beside the priced one; each step line its own', async () => {
      const lines = (await cli(stack.db.db.url, ['plans', 'show', PLAN])).split('\n');
      expect(lines).toContain(
        'tokens:    3,200 in / 500 out, of which cache read 1,000, cache write 800, reasoning 40',
      );
      expect(lines).toContain("reported:  1 step at the provider's own cost, $0.01; the prices give $0.0035 for them");
      expect(lines.find((l) => l.includes('#0 completed'))).toMatch(/ t \[gpt-4o\] \(cache read 1,000\)$/);
      expect(lines.find((l) => l.includes('#1 completed'))).toMatch(
        / t \[claude-sonnet-4\] \(cache write 800, reasoning 40\)$/,
      );
      expect(lines.find((l) => l.includes('#2 completed'))).toMatch(
        / t \[gpt-4o\] \(reported \$0\.01, priced \$0\.0035\)$/,
      );
    });

    it('analytics tokens: the CLI (csv, --json) and GET /v1/analytics/tokens carry cache and reasoning tokens', async () => {
      expect((await cli(stack.db.db.url, ['analytics', 'tokens', '--by', 'model', '--csv'])).split('\n')).toEqual([
        'dimension,key,input_tokens,output_tokens,total_tokens,cache_read_tokens,cache_write_tokens,reasoning_tokens',
        'model,gpt-4o,2200,400,2600,1000,0,0',
        'model,claude-sonnet-4,1000,100,1100,0,800,40',
        'total,,3200,500,3700,1000,800,40',
      ]);
      const json = JSON.parse(await cli(stack.db.db.url, ['analytics', 'tokens', '--by', 'agent', '--json']));
      expect(json.byAgent.find((a: { agentId: string }) => a.agentId === 'agent-written')).toMatchObject({
        cacheWriteTokens: 800,
        reasoningTokens: 40,
      });
      const http = await call(stack, 'GET', '/v1/analytics/tokens?by=session');
      expect(http.status).toBe(200);
      expect(http.json.bySession).toEqual([
        expect.objectContaining({
          sessionId: 'sess-usage',
          cacheReadTokens: 1000,
          cacheWriteTokens: 800,
          reasoningTokens: 40,
        }),
      ]);
      expect(http.json.total).toMatchObject({ cacheReadTokens: 1000, cacheWriteTokens: 800, reasoningTokens: 40 });
    });
  },
);
