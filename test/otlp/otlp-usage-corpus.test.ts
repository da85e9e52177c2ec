import type { TestDb } from '../support/databases';
import { waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, call, INGEST_KEY, startApiStack } from '../http/http-harness';
import { CASES, caseName, type CorpusCase, expectedFor, loadCase } from '../fixtures/otlp-usage/cases';
import { runCase } from '../fixtures/otlp-usage/record';

jest.setTimeout(240_000);

interface Stored {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
  cost: number;
  failedSteps: number;
  handoffs: [string, string][];
}

/** What a user reads back of a plan: the plan view's tokens, cost, failures and handoffs, and its steps' cache columns. */
async function stored(stack: ApiStack, kind: TestDb, planId: string): Promise<Stored> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let view: any;
  await waitFor(`plan ${planId} stored and finalized`, async () => {
    const res = await call(stack, 'GET', `/v1/plans/${planId}`);
    view = res.json;
    return res.status === 200 && view.plan.status === 'completed';
  });
  const [row] = await stack.db.ds.query(
    `SELECT SUM(cache_read_tokens) AS cr, SUM(cache_write_tokens) AS cw, SUM(reasoning_tokens) AS r
     FROM plan_steps WHERE plan_id = ${kind === 'postgres' ? '$1' : '?'}`,
    [planId],
  );
  return {
    input: view.plan.inputTokens,
    output: view.plan.outputTokens,
    cacheRead: Number(row.cr),
    cacheWrite: Number(row.cw),
    reasoning: Number(row.r),
    cost: Number(view.plan.cost),
    failedSteps: view.plan.failedSteps,
    handoffs: view.handoffs.map((h: { fromAgentId: string; toAgentId: string }) => [h.fromAgentId, h.toAgentId]),
  };
}

/** The run's shape every case shares: the tool that failed once, and the triage agent handing to the booker. */
function expectTheRun(got: Stored): void {
  expect(got.failedSteps).toBe(1);
  expect(got.handoffs).toContainEqual(['triage', 'booker']);
}

async function postCorpusCase(stack: ApiStack, name: string): Promise<void> {
  for (const body of loadCase(name).requests) {
    const res = await call(stack, 'POST', '/v1/traces', { body });
    if (res.status !== 200 || JSON.stringify(res.json) !== '{}')
      throw new Error(`${name}: ${res.status} ${JSON.stringify(res.json)}`);
  }
}

const QUIET = { OTLP_TRACE_QUIET_MS: '500', OTLP_TRACE_ROOTLESS_MS: '5000' };

describe.each<TestDb>(['sqlite', 'postgres'])('the usage corpus posted to serve on %s', (kind) => {
  let stack: ApiStack;
  beforeAll(async () => {
    stack = await startApiStack(kind, { env: QUIET });
    for (const c of CASES) await postCorpusCase(stack, caseName(c));
  });
  afterAll(async () => {
    await stack?.close();
  });

  it.each(CASES.map(caseName))(
    'the recorded %s spans store the expected tokens, cache tokens and cost',
    async (name) => {
      const { expected } = loadCase(name);
      const got = await stored(stack, kind, expected.planId);
      const { cost, ...tokens } = expected.stored;
      expect(got).toMatchObject(tokens);
      expect(got.cost).toBeCloseTo(Number(cost), 9);
      expectTheRun(got);
    },
  );
});

// the database adds nothing here that the corpus above does not check: SQLite only
describe('the real instrumentations, each run in its own process exporting to serve', () => {
  let stack: ApiStack;
  const live = new Map<string, { traceId: string; at: Date }>();
  beforeAll(async () => {
    stack = await startApiStack('sqlite', { env: QUIET });
    const headers = `Authorization=Bearer ${INGEST_KEY}`;
    const one = async (c: CorpusCase) => {
      const at = new Date();
      live.set(caseName(c), { traceId: await runCase(c, stack.server.url, `live-${caseName(c)}`, headers), at });
    };
    // two at a time
    for (let i = 0; i < CASES.length; i += 2) await Promise.all(CASES.slice(i, i + 2).map(one));
  });
  afterAll(async () => {
    await stack?.close();
  });

  it.each(CASES.map((c) => [caseName(c), c] as const))(
    '%s: two agents, a handoff, a tool failing once and a cached input store the scripted model totals priced by the price package',
    async (name, c) => {
      const run = live.get(name)!;
      const expected = expectedFor(c, run.at);
      const got = await stored(stack, 'sqlite', `otlp-${run.traceId}`);
      expect(got).toMatchObject(expected.usage);
      expect(got.cost).toBeCloseTo(expected.cost, 9);
      expectTheRun(got);
    },
  );
});
