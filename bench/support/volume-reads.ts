/**
 * The reads `npm run bench:volume` times at each size: every read an application, an operator or
 * an analyst makes of a store holding a month of traffic, by HTTP (`plan-ledger serve`) and by
 * the CLI (a whole `plan-ledger` process, as an operator runs it).
 */
import { spawn } from 'node:child_process';
import { round } from './latency';

/** What the reads read: ids found in the store after the first size, the same at every size. */
export interface ReadTargets {
  /** A session with finished plans (history). */
  sessionId: string;
  /** A session with a plan still running (active plan), and that plan (resume point). */
  runningSessionId: string;
  runningPlanId: string;
  /** A plan with a step that stored an output, and that step. */
  planId: string;
  stepId: string;
  agentId: string;
  /** The page the deep-page reads fetch (100, or fewer when the first size has fewer plans). */
  page: number;
  /** The same for the plans of `agentId`. */
  agentPage: number;
  /** The whole window the traffic spans, and one day in its middle. */
  month: { from: string; to: string };
  day: { from: string; to: string };
}

export interface ReadSpec {
  name: string;
  /** Path and query of the HTTP read. */
  http: string;
  /** Arguments of the same read by the CLI; omitted when it has none. */
  cli?: string[];
}

const PAGE = 20;
const q = (params: Record<string, string | number>) =>
  Object.entries(params)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&');

/** Every read of the benchmark, in the order they are timed. */
export function readSpecs(t: ReadTargets): ReadSpec[] {
  const offset = (t.page - 1) * PAGE;
  const enc = encodeURIComponent;
  const month = { from: t.month.from, to: t.month.to };
  const day = { from: t.day.from, to: t.day.to };
  const range = (r: { from: string; to: string }) => ['--from', r.from, '--to', r.to];
  const specs: ReadSpec[] = [
    { name: 'plans list, first page', http: `/v1/plans?${q({ limit: PAGE })}`, cli: ['plans', 'list', '--json'] },
    {
      name: `plans list, page ${t.page} (offset)`,
      http: `/v1/plans?${q({ limit: PAGE, offset })}`,
      cli: ['plans', 'list', '--offset', String(offset), '--json'],
    },
    {
      name: 'plans list --status failed',
      http: `/v1/plans?${q({ limit: PAGE, status: 'failed' })}`,
      cli: ['plans', 'list', '--status', 'failed', '--json'],
    },
    {
      name: 'plans list --agent',
      http: `/v1/plans?${q({ limit: PAGE, agentId: t.agentId })}`,
      cli: ['plans', 'list', '--agent', t.agentId, '--json'],
    },
    {
      name: `plans list --agent, page ${t.agentPage} (offset)`,
      http: `/v1/plans?${q({ limit: PAGE, agentId: t.agentId, offset: (t.agentPage - 1) * PAGE })}`,
    },
    { name: 'plans show', http: `/v1/plans/${enc(t.planId)}`, cli: ['plans', 'show', t.planId, '--json'] },
    {
      name: 'sessions history',
      http: `/v1/sessions/${enc(t.sessionId)}/history`,
      cli: ['sessions', 'history', t.sessionId, '--json'],
    },
    {
      name: 'sessions active',
      http: `/v1/sessions/${enc(t.runningSessionId)}/active`,
      cli: ['sessions', 'active', t.runningSessionId, '--json'],
    },
    {
      name: 'workflows resume-point',
      http: `/v1/workflows/${enc(t.runningPlanId)}/resume-point`,
      cli: ['workflows', 'resume-point', t.runningPlanId, '--json'],
    },
    {
      name: 'steps output',
      http: `/v1/plans/${enc(t.planId)}/steps/${enc(t.stepId)}/output`,
      cli: ['steps', 'output', t.planId, t.stepId],
    },
  ];
  for (const [label, r] of [
    ['30 days', month],
    ['one day', day],
  ] as const) {
    specs.push(
      {
        name: `analytics daily, ${label}`,
        http: `/v1/analytics/daily?${q(r)}`,
        cli: ['analytics', 'daily', ...range(r), '--json'],
      },
      {
        name: `analytics agents, ${label}`,
        http: `/v1/analytics/agents?${q(r)}`,
        cli: ['analytics', 'agents', ...range(r), '--json'],
      },
      {
        name: `analytics handoffs, ${label}`,
        http: `/v1/analytics/handoffs?${q(r)}`,
        cli: ['analytics', 'handoffs', ...range(r), '--json'],
      },
      {
        name: `analytics cost by model, ${label}`,
        http: `/v1/analytics/cost?${q({ ...r, by: 'model' })}`,
        cli: ['analytics', 'cost', '--by', 'model', ...range(r), '--json'],
      },
      {
        name: `analytics cost by agent, ${label}`,
        http: `/v1/analytics/cost?${q({ ...r, by: 'agent' })}`,
        cli: ['analytics', 'cost', '--by', 'agent', ...range(r), '--json'],
      },
      {
        name: `analytics tokens, ${label}`,
        http: `/v1/analytics/tokens?${q(r)}`,
        cli: ['analytics', 'tokens', ...range(r), '--json'],
      },
    );
  }
  return specs;
}

export interface Timing {
  medianMs: number;
  p90Ms: number;
  /** Bytes of the answer (HTTP body, CLI stdout). */
  bytes: number;
}

function summarise(ms: number[], bytes: number): Timing {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
  return { medianMs: round(at(0.5), 1), p90Ms: round(at(0.9), 1), bytes };
}

/** One GET: its time in ms and body size; throws on a status other than 200. */
export async function httpGet(base: string, key: string, path: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const res = await fetch(base + path, { headers: { authorization: `Bearer ${key}` } });
  const body = await res.arrayBuffer();
  const ms = performance.now() - started;
  if (res.status !== 200)
    throw new Error(`GET ${path}: ${res.status} ${Buffer.from(body).toString('utf8').slice(0, 300)}`);
  return { ms, bytes: body.byteLength };
}

/** `runs` timed GETs after `warm` untimed ones. */
export async function timeHttp(base: string, key: string, path: string, runs: number, warm = 2): Promise<Timing> {
  let bytes = 0;
  for (let i = 0; i < warm; i++) bytes = (await httpGet(base, key, path)).bytes;
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await httpGet(base, key, path);
    ms.push(r.ms);
    bytes = r.bytes;
  }
  return summarise(ms, bytes);
}

/** `runs` whole CLI processes (`node <main> ...args`), timed from spawn to exit; a non-zero exit throws. */
export async function timeCli(
  main: string,
  env: Record<string, string>,
  args: string[],
  runs: number,
): Promise<Timing> {
  const ms: number[] = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const out = await new Promise<{ code: number | null; stdout: number; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [main, ...args], {
        env: { ...process.env, ...env, PLAN_LEDGER_FROM_SOURCE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = 0;
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.length));
      child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
      child.once('error', reject);
      child.once('exit', (code) => resolve({ code, stdout, stderr }));
    });
    ms.push(performance.now() - started);
    if (out.code !== 0) throw new Error(`plan-ledger ${args.join(' ')}: exit ${out.code}: ${out.stderr}`);
    bytes = out.stdout;
  }
  return summarise(ms, bytes);
}

/**
 * GETs of `path` back to back for `seconds` (or until `until` resolves): the latency of every one,
 * for the p99 of a read while something else runs (a retention run).
 */
export async function latencyWhile(
  base: string,
  key: string,
  path: string,
  stop: { seconds?: number; until?: Promise<unknown> },
): Promise<{ requests: number; p50Ms: number; p99Ms: number; maxMs: number }> {
  let done = false;
  void stop.until?.finally(() => (done = true));
  const deadline = stop.seconds === undefined ? Infinity : performance.now() + stop.seconds * 1000;
  const ms: number[] = [];
  while (!done && performance.now() < deadline) ms.push((await httpGet(base, key, path)).ms);
  const sorted = ms.sort((a, b) => a - b);
  const at = (p: number) => round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0, 1);
  return { requests: ms.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: round(sorted[sorted.length - 1] ?? 0, 1) };
}
