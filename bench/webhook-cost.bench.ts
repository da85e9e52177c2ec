/**
 * What one webhook delivery costs the delivering process in CPU. Outside the database: signing its
 * body (Standard Webhooks' library, as the delivery loop calls it: a new Webhook per delivery; and
 * one Webhook kept per secret) against an HMAC-SHA256 of the same text by node:crypto (the
 * baseline, the same signature), and POSTing it over kept-open connections (WebhookAgents, 64 in
 * flight, as a delivery round sends) to a receiver in another process that answers 204.
 * With the database (`--db`, PostgreSQL by default; `--db none` leaves it out): a backlog of
 * `--count` outbox rows in a fresh database, delivered to the same receiver by
 * WebhookDeliveryLoop.round() (claim, subscriptions, sign, POST, record) one round after another,
 * with rounds of 64 (a backlog) and of 8 (a trickle); the whole round's CPU per webhook, and
 * minus the sign and POST figures above, what the database work costs. `--profile` adds a V8 CPU
 * profile of the 64-row rounds, summarised by area and function.
 *
 *   npx tsx bench/webhook-cost.bench.ts [--count N] [--db postgres|sqlite|mariadb|none] [--profile]
 */
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { Webhook } from 'standardwebhooks';
import type { DataSource } from 'typeorm';
import { freePort } from '../test/publisher/support/redis-process';
import { createMigratedDb, type TestDb } from '../test/support/databases';
import { createLogger } from '../src/shared/logger';
import type { WebhookDeliveryRow } from '../src/store/entities';
import { pendingDelivery, writeDeliveries } from '../src/store/outbox/webhook-outbox';
import { sqlDialectOf } from '../src/store/sql/dialects';
import { DEFAULT_WEBHOOK_CONFIG } from '../src/webhooks/webhook-config';
import { WebhookDeliveryLoop } from '../src/webhooks/webhook-delivery';
import { sendWebhook, signedHeaders, WebhookAgents } from '../src/webhooks/webhook-sender';
import { addSubscription, newSecret } from '../src/webhooks/webhook-subscriptions';
import { parseAllowance, type ResolvedTarget } from '../src/webhooks/webhook-target';
import { summariseProfile } from './support/e2e-processes';

const argOf = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const N = Number(argOf('--count') ?? 20_000);
if (!Number.isInteger(N) || N < 64) throw new Error('--count: a whole number of at least 64');
const DB = (argOf('--db') ?? 'postgres') as TestDb | 'none';
if (!['postgres', 'sqlite', 'mariadb', 'none'].includes(DB)) throw new Error('--db: postgres, sqlite, mariadb or none');
const PROFILE = process.argv.includes('--profile');

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
    const rounds64 = DB === 'none' ? undefined : await roundsCost(DB, url, secret, 64, PROFILE);
    const rounds8 = DB === 'none' ? undefined : await roundsCost(DB, url, secret, 8, false);
    const line = (name: string, us: number) =>
      `  ${name.padEnd(44)} ${us.toFixed(1).padStart(6)} us (${(us / baseline).toFixed(1)}x)`;
    console.log(
      `webhook cost: ${N} webhooks, body ${BODY.length} bytes, load average ${load.join(' ')}; CPU per webhook (x node:crypto HMAC):`,
    );
    console.log(line('sign, node:crypto HMAC-SHA256 (baseline)', baseline));
    console.log(line('sign, standardwebhooks, new Webhook each', fresh));
    console.log(line('sign, standardwebhooks, one Webhook kept', cached));
    console.log(line('POST over keep-alive, 64 in flight', perSend));
    for (const r of [rounds64, rounds8]) {
      if (!r) continue;
      console.log(line(`${DB}: delivery rounds of ${r.batch} (${r.rounds} rounds)`, r.perWebhook));
      console.log(line(`${DB}: of which in the kernel (system time)`, r.systemPerWebhook));
      console.log(line(`${DB}: of which not sign nor POST (database, loop)`, r.perWebhook - fresh - perSend));
    }
    if (rounds64?.profile) {
      const p = rounds64.profile;
      console.log(`  profile of the rounds of 64 (${p.totalMs} ms sampled, ${p.file}):`);
      console.log(`    by area: ${p.byArea.map((a) => `${a.area} ${a.pct}%`).join(', ')}`);
      for (const fn of p.top) console.log(`    ${String(fn.pct).padStart(5)}%  ${fn.fn}  ${fn.where}`);
    }
  } finally {
    receiver.kill();
  }
}

/** `count` pending outbox rows of one subscription, written in transactions of 1,000. */
async function backlog(ds: DataSource, subscriptionId: string, count: number): Promise<void> {
  const now = new Date();
  for (let from = 0; from < count; from += 1_000) {
    const rows: WebhookDeliveryRow[] = [];
    for (let i = from; i < Math.min(count, from + 1_000); i++)
      rows.push(
        pendingDelivery(
          {
            id: randomUUID(),
            subscriptionId,
            eventType: 'plan.finalized',
            eventId: randomUUID(),
            planId: `plan-${i}`,
            payload: BODY,
          },
          now,
        ),
      );
    await sqlDialectOf(ds).transaction(ds, (m) => writeDeliveries(m, rows));
  }
}

/**
 * CPU per webhook of WebhookDeliveryLoop.round() delivering a backlog of N rows in rounds of
 * `batch`, one round after another, in a fresh database of `kind`; with `profile`, a V8 CPU
 * profile of those rounds.
 */
async function roundsCost(kind: TestDb, url: URL, secret: string, batch: number, profile: boolean) {
  const db = await createMigratedDb(kind);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhook-cost-'));
  try {
    const sub = await addSubscription(db.ds, { url: url.href, eventTypes: '*', secret });
    const config = { ...DEFAULT_WEBHOOK_CONFIG, allowPrivate: parseAllowance('127.0.0.1'), batchSize: batch };
    const loop = new WebhookDeliveryLoop(db.ds, config, createLogger({ level: 'silent' }));
    // warm-up: compiled statements, connections, kept-open sockets
    await backlog(db.ds, sub.id, 256);
    while ((await loop.round()).claimed > 0);
    await backlog(db.ds, sub.id, N);
    const session = profile ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    const start = process.cpuUsage();
    let rounds = 0;
    let delivered = 0;
    for (;;) {
      const r = await loop.round();
      if (r.claimed === 0) break;
      rounds++;
      delivered += r.delivered;
    }
    const used = process.cpuUsage(start);
    let summary: ReturnType<typeof summariseProfile>;
    if (session) {
      const { profile: taken } = await session.post('Profiler.stop');
      fs.writeFileSync(path.join(dir, 'rounds.cpuprofile'), JSON.stringify(taken));
      session.disconnect();
      summary = summariseProfile(dir);
    }
    await loop.close();
    if (delivered !== N) throw new Error(`${kind}: ${delivered} of ${N} webhooks delivered`);
    return {
      batch,
      rounds,
      perWebhook: (used.user + used.system) / N,
      systemPerWebhook: used.system / N,
      profile: summary,
    };
  } finally {
    if (!profile) fs.rmSync(dir, { recursive: true, force: true });
    await db.close();
  }
}

void main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
