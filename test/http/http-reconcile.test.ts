import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../src/cli/main';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { billingLedgerEvents } from '../support/billing-ledger';
import { softDeletePlan } from '../support/read-dataset';
import { ApiStack, READ_KEY, startApiStack } from './http-harness';

jest.setTimeout(90_000);

const FIXTURES = join(__dirname, '..', 'fixtures', 'billing');

/** `POST /v1/analytics/reconcile`: the export as the body, the CLI's `--json` answer as the reply. */
describe('reconcile over HTTP', () => {
  let stack: ApiStack;
  beforeAll(async () => {
    stack = await startApiStack('sqlite', { worker: false });
    await new PlanEventStore(stack.db.ds).persist(billingLedgerEvents());
    await softDeletePlan(stack.db.ds, 'plan-deleted');
  });
  afterAll(async () => {
    await stack?.close();
  });

  const post = async (query: string, body: string, type = 'application/json', key: string | null = READ_KEY) => {
    const headers: Record<string, string> = { 'content-type': type };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const res = await fetch(`${stack.server.url}/v1/analytics/reconcile${query}`, { method: 'POST', headers, body });
    const text = await res.text();
    return { status: res.status, text, json: JSON.parse(text) };
  };

  const cliJson = async (args: string[]) => {
    const out: string[] = [];
    const code = await run(['node', 'plan-ledger', 'cost', 'reconcile', ...args, '--json'], {
      env: { DATABASE_URL: stack.db.db.url, LOG_LEVEL: 'warn' },
      out: (l) => out.push(l),
      err: () => undefined,
    });
    return { code, json: JSON.parse(out.join('\n')) };
  };

  it('answers what cost reconcile --json prints, for JSON and CSV bodies, with the check of failOver', async () => {
    const usage = join(FIXTURES, 'anthropic', 'usage_report_messages.json');
    const cost = join(FIXTURES, 'anthropic', 'cost_report.json');
    // both exports in one body: an array of their pages
    const body = `[${readFileSync(usage, 'utf8')},${readFileSync(cost, 'utf8')}]`;
    const res = await post('?provider=anthropic&failOver=14', body);
    expect(res.status).toBe(200);
    const cli = await cliJson(['--anthropic', usage, '--anthropic', cost, '--fail-over', '14']);
    expect(cli.code).toBe(3);
    expect(res.json).toEqual(cli.json);
    expect(res.json).toMatchObject({
      coveragePct: 100.88,
      costDelta: '-0.0352',
      costDeltaPct: -14.11,
      check: { failOverPct: 14, beyond: expect.stringContaining('beyond --fail-over 14 %') },
    });

    const csv = join(FIXTURES, 'openai', 'usage_completions.csv');
    const fromCsv = await post('?provider=openai', readFileSync(csv, 'utf8'), 'text/csv');
    expect(fromCsv.status).toBe(200);
    expect(fromCsv.json).toEqual((await cliJson(['--openai', csv])).json);
    expect(fromCsv.json).toMatchObject({ coveragePct: 100, ledger: { totalTokens: 1100 } });
  });

  it('refuses a bad export or argument with 400 and one line, and a request without a read key', async () => {
    const bad = await post('?provider=openai', 'start_time,model,input_tokens\n1793491200,gpt-4o,12x\n', 'text/csv');
    expect(bad).toMatchObject({
      status: 400,
      json: { error: 'the body: row 2: input_tokens: "12x" is not a whole number of tokens' },
    });
    const provider = await post('?provider=azure', '{"data":[]}');
    expect(provider).toMatchObject({
      status: 400,
      json: { error: 'provider: "azure" is not one of openai, anthropic' },
    });
    const failOver = await post('?provider=openai&failOver=-1', '{"data":[]}');
    expect(failOver).toMatchObject({
      status: 400,
      json: { error: 'failOver: "-1" is not a percentage (e.g. 5 or 2.5)' },
    });
    expect((await post('?provider=openai', '{"data":[]}', 'application/json', null)).status).toBe(401);
  });
});
