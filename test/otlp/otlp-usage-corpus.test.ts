import type { TestDb } from '../support/databases';
import { waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, call, INGEST_KEY, startApiStack } from '../http/http-harness';
import { CASES, caseName, type CorpusCase, expectedFor, loadCase, requestBody } from '../fixtures/otlp-usage/cases';
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

/** Posts a case's requests as its exporter sent them: JSON, or protobuf (the Traceloop SDK's exporter). */
async function postCorpusCase(stack: ApiStack, name: string): Promise<void> {
  for (const recorded of loadCase(name).requests) {
    const { format, body } = requestBody(recorded);
    if (format === 'json') {
      const res = await call(stack, 'POST', '/v1/traces', { body });
      if (res.status !== 200 || JSON.stringify(res.json) !== '{}')
        throw new Error(`${name}: ${res.status} ${JSON.stringify(res.json)}`);
      continue;
    }
    const res = await fetch(`${stack.server.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST_KEY}`, 'content-type': 'application/x-protobuf' },
      body: new Uint8Array(body),
    });
    // an empty ExportTraceServiceResponse: nothing rejected
    const answer = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200 || answer.length !== 0) throw new Error(`${name}: ${res.status} ${answer.toString('hex')}`);
  }
}

const QUIET = { OTLP_TRACE_QUIET_MS: '500', OTLP_TRACE_ROOTLESS_MS: '5000' };

describe.each<TestDb>(['sqlite', 'postgres', 'mariadb'])('the usage corpus posted to serve on %s', (kind) => {
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

/**
 * The live runs, each case on one of the databases in turn (every database stores runs of both
 * providers, and every case is stored on every database by the replay above): 12 instrumented
 * processes, not 36, on a machine tests share.
 */
const LIVE_DBS: TestDb[] = ['sqlite', 'postgres', 'mariadb'];
const liveOn = (kind: TestDb) => CASES.filter((_c, i) => LIVE_DBS[i % LIVE_DBS.length] === kind);

describe.each<TestDb>(LIVE_DBS)(
  'the real instrumentations, each run in its own process exporting to serve on %s',
  (kind) => {
    let stack: ApiStack;
    const live = new Map<string, { traceId: string; at: Date }>();
    beforeAll(async () => {
      stack = await startApiStack(kind, { env: QUIET });
      const headers = `Authorization=Bearer ${INGEST_KEY}`;
      const one = async (c: CorpusCase) => {
        const at = new Date();
        live.set(caseName(c), { traceId: await runCase(c, stack.server.url, `live-${caseName(c)}`, headers), at });
      };
      // two at a time
      const cases = liveOn(kind);
      for (let i = 0; i < cases.length; i += 2) await Promise.all(cases.slice(i, i + 2).map(one));
    });
    afterAll(async () => {
      await stack?.close();
    });

    it.each(liveOn(kind).map((c) => [caseName(c), c] as const))(
      '%s: two agents, a handoff, a tool failing once and a cached input store the scripted model totals priced by the price package',
      async (name, c) => {
        const run = live.get(name)!;
        const expected = expectedFor(c, run.at);
        const got = await stored(stack, kind, `otlp-${run.traceId}`);
        expect(got).toMatchObject(expected.usage);
        expect(got.cost).toBeCloseTo(expected.cost, 9);
        expectTheRun(got);
      },
    );
  },
);
