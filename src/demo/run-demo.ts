import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '../config/config';
import type { DeadLetter } from '../dead-letters/dead-letter';
import { connectRedis, describeRedis, redisVariable } from '../queue/connect-redis';
import { PlanEventPublisher } from '../publisher';
import { formatPlanCost, formatPlanView, getPlanView } from '../queries';
import { EVENT_BATCH_JOB, EVENTS_QUEUE, EventBatchJobData } from '../queue/queue-names';
import type { Logger } from '../shared/logger';
import { openDataSource } from '../store/data-source';
import { runMigrations } from '../store/migrator';
import { startWorker } from '../worker';
import { demoScenario, poisonEvent } from './demo-scenario';

export interface DemoOptions {
  config: Readonly<AppConfig>;
  logger: Logger;
  out: (line: string) => void;
  /** Progress lines (stderr in the CLI). */
  progress: (line: string) => void;
  /** Pause between the executor's events, so progress can be watched. @defaultValue 25 ms */
  paceMs?: number;
  /** Give up waiting for the worker after this long. @defaultValue 30 s */
  timeoutMs?: number;
  /** Print JSON instead of the timeline. @defaultValue false */
  json?: boolean;
}

export interface DemoResult {
  planId: string;
  sessionId: string;
  published: number;
  persisted: number;
  deadLetters: DeadLetter[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The whole flow in one process on the configured (by default embedded) setup: migrate, start a
 * worker, publish a multi-agent run through the real publisher plus one poison event, wait until
 * everything is stored or dead-lettered, then print the plan's timeline and a summary.
 */
export async function runDemo(opts: DemoOptions): Promise<DemoResult> {
  const { config, logger, progress } = opts;
  // Fail in one line before anything else when Redis is not there.
  const probe = await connectRedis(config, 3_000).catch((err: Error) => {
    throw new Error(`${err.message}. Start it with: redis-server --daemonize yes (or set ${redisVariable(config)})`);
  });
  await probe.quit();

  progress(`[1/4] database ${config.database.redacted}: applying migrations`);
  const ds = await openDataSource(config.database, { poolSize: 4 });
  const closers: Array<() => Promise<unknown>> = [() => ds.destroy()];
  try {
    await runMigrations(ds);
    const suffix = randomBytes(3).toString('hex');
    const ids = { planId: `demo-plan-${suffix}`, sessionId: `demo-session-${suffix}` };
    const deadLetters: DeadLetter[] = [];
    let persisted = 0;

    progress(`[2/4] starting a worker on ${describeRedis(config)} (queue prefix "${config.queuePrefix}")`);
    const worker = await startWorker({
      config,
      logger,
      dataSource: ds,
      settings: { healthPort: null },
      onCommit: (info) => (persisted += info.inserted),
      onDeadLetter: (letter) => deadLetters.push(letter),
    });
    closers.unshift(() => worker.close(10_000));
    // its own spill journal, so two demos (or a demo beside a real executor) never share one
    const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-demo-'));
    const publisher = new PlanEventPublisher({
      redisUrl: config.redisUrl,
      redisClusterNodes: config.redisClusterNodes,
      queuePrefix: config.queuePrefix,
      logger,
      journalDir,
    });
    closers.unshift(async () => {
      await publisher.close(10_000);
      fs.rmSync(journalDir, { recursive: true, force: true });
    });

    const actions = demoScenario(ids);
    progress(
      `[3/4] an executor publishes ${actions.length} events for plan ${ids.planId}, and a buggy producer one poison event`,
    );
    for (const [i, action] of actions.entries()) {
      action.publish(publisher);
      progress(`      ${String(i + 1).padStart(2)}/${actions.length} ${action.label}`);
      await sleep(opts.paceMs ?? 25);
    }
    await injectPoison(config, ids);
    await publisher.flush(10_000);

    progress(`[4/4] waiting for the worker to store ${actions.length} events and dead-letter 1`);
    const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
    let last = -1;
    while ((persisted < actions.length || deadLetters.length < 1) && Date.now() < deadline) {
      if (persisted !== last)
        progress(`      stored ${persisted}/${actions.length}, dead letters ${deadLetters.length}`);
      last = persisted;
      await sleep(100);
    }
    progress(`      stored ${persisted}/${actions.length}, dead letters ${deadLetters.length}`);
    if (persisted < actions.length)
      throw new Error(
        `the worker stored ${persisted} of ${actions.length} events within ${(opts.timeoutMs ?? 30_000) / 1000}s; see the log above`,
      );

    await printReport(opts, ds, ids, actions.length, deadLetters);
    return { ...ids, published: actions.length, persisted, deadLetters };
  } finally {
    for (const close of closers) await close().catch((err: Error) => logger.warn({ err }, 'demo: closing failed'));
  }
}

/** Put one malformed event straight on the queue, as a producer bypassing the publisher would. */
async function injectPoison(config: Readonly<AppConfig>, ids: { planId: string; sessionId: string }): Promise<void> {
  const redis = await connectRedis(config);
  const queue = new Queue<EventBatchJobData>(EVENTS_QUEUE, { connection: redis, prefix: config.queuePrefix });
  try {
    await queue.add(EVENT_BATCH_JOB, { v: 1, events: [poisonEvent(ids)] });
  } finally {
    await queue.close();
    await redis.quit();
  }
}

async function printReport(
  opts: DemoOptions,
  ds: DataSource,
  ids: { planId: string; sessionId: string },
  published: number,
  deadLetters: DeadLetter[],
): Promise<void> {
  const view = await getPlanView(ds, ids.planId);
  if (opts.json) {
    opts.out(JSON.stringify({ ...ids, published, deadLetters, plan: view }, null, 2));
    return;
  }
  const out = opts.out;
  out('');
  for (const line of formatPlanView(view)) out(line);
  out('');
  out('Summary');
  const p = view.plan;
  out(`  events stored      ${published} of ${published} published (plan_events), 1 poison event dead-lettered`);
  out(
    `  plan               ${p.status}; ${p.completedSteps} completed, ${p.failedSteps} failed, ${p.skippedSteps} skipped of ${p.totalSteps} steps`,
  );
  out(`  tokens             ${p.inputTokens} in, ${p.outputTokens} out`);
  out(`  cost               ${formatPlanCost(p)}, each step at the price in force when it ran`);
  out(
    `  handoffs           ${view.handoffs.length}; decisions ${view.decisions.length}; checkpoints ${view.checkpoints.length}`,
  );
  for (const dl of deadLetters) {
    out(
      `  dead letter        ${dl.id} (${dl.kind}): ${dl.error.violations?.map((v) => v.message).join('; ') ?? dl.error.message}`,
    );
  }
  out('');
  out('Try next:');
  out(`  npx plan-ledger plans show ${ids.planId}`);
  out(`  npx plan-ledger steps output ${ids.planId} write`);
  out(`  npx plan-ledger workflows resume-point ${ids.planId}`);
  out(`  npx plan-ledger analytics tokens --by model`);
  out(`  npx plan-ledger dlq list`);
}
