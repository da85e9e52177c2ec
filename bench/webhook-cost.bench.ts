/**
 * What one webhook delivery costs the delivering process in CPU, outside the database: signing its
 * body (Standard Webhooks' library, as the delivery loop calls it: a new Webhook per delivery; and
 * one Webhook kept per secret) against an HMAC-SHA256 of the same text by node:crypto (the
 * baseline, the same signature), and POSTing it over kept-open connections (WebhookAgents, 64 in
 * flight, as a delivery round sends) to a receiver in another process that answers 204.
 *
 *   npx tsx bench/webhook-cost.bench.ts [--count N]
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import * as os from 'node:os';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../test/publisher/support/redis-process';
import { sendWebhook, signedHeaders, WebhookAgents } from '../src/webhooks/webhook-sender';
import { newSecret } from '../src/webhooks/webhook-subscriptions';
import type { ResolvedTarget } from '../src/webhooks/webhook-target';

const countArg = process.argv.indexOf('--count');
const N = countArg > 0 ? Number(process.argv[countArg + 1]) : 20_000;
if (!Number.isInteger(N) || N < 64) throw new Error('--count: a whole number of at least 64');

/** A body the size of a plan.finalized webhook's. */
const BODY = JSON.stringify({
  type: 'plan.finalized',
  timestamp: new Date().toISOString(),
  data: {
    planId: '7b0c1f3e-8a55-4d8e-9a53-0c6f6c0d2a11',
    sessionId: 'a9a4b2f0-3f1c-4a5e-8d7b-2b6f1f9c4e22',
    eventId: '0f3c9d8e-6b1a-4c2d-9e8f-7a6b5c4d3e33',
    seq: 12,
    occurredAt: new Date().toISOString(),
    status: 'completed',
    summary: 'done '.repeat(20),
  },
});

/** CPU microseconds per call of `f`, after a warm-up. */
async function cpuPerCall(count: number, f: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < Math.min(2_000, count); i++) await f(i);
  const start = process.cpuUsage();
  for (let i = 0; i < count; i++) await f(i);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / count;
}

async function main(): Promise<void> {
  const load = os.loadavg().map((l) => l.toFixed(2));
  const secret = newSecret();
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const at = new Date();
  const seconds = Math.floor(at.getTime() / 1000);
  const baseline = await cpuPerCall(N, (i) =>
    createHmac('sha256', key).update(`id-${i}.${seconds}.${BODY}`).digest('base64'),
  );
  const fresh = await cpuPerCall(N, (i) => signedHeaders(secret, `id-${i}`, BODY, at));
  const kept = new Webhook(secret);
  const cached = await cpuPerCall(N, (i) => kept.sign(`id-${i}`, at, BODY));

  const port = await freePort();
  const server = `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => { s.statusCode = 204; s.end(); }); }).listen(${port}, '127.0.0.1', () => console.log('up'))`;
  const receiver = spawn(process.execPath, ['-e', server], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise((resolve) => receiver.stdout.once('data', resolve));
    const url = new URL(`http://127.0.0.1:${port}/hook`);
    const target: ResolvedTarget = { url, address: '127.0.0.1', family: 4 };
    const agents = new WebhookAgents(64);
    const headers = signedHeaders(secret, 'id', BODY, at);
    const rounds = Math.floor(N / 64);
    const send = await cpuPerCall(rounds, async () => {
      const results = await Promise.all(
        Array.from({ length: 64 }, () => sendWebhook(target, headers, BODY, 10_000, agents.for(target))),
      );
      if (results.some((r) => !r.ok)) throw new Error('the receiver refused a webhook');
    });
    agents.destroy();
    const perSend = send / 64;
    const line = (name: string, us: number) =>
      `  ${name.padEnd(44)} ${us.toFixed(1).padStart(6)} us (${(us / baseline).toFixed(1)}x)`;
    console.log(
      `webhook cost: ${N} webhooks, body ${BODY.length} bytes, load average ${load.join(' ')}; CPU per webhook (x node:crypto HMAC):`,
    );
    console.log(line('sign, node:crypto HMAC-SHA256 (baseline)', baseline));
    console.log(line('sign, standardwebhooks, new Webhook each', fresh));
    console.log(line('sign, standardwebhooks, one Webhook kept', cached));
    console.log(line('POST over keep-alive, 64 in flight', perSend));
  } finally {
    receiver.kill();
  }
}

void main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
