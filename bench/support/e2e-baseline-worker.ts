/**
 * The plain-BullMQ baseline of `npm run bench:e2e`, run as its own process like the real worker:
 * one job per event, one single-row INSERT into plan_events per job (PostgreSQL or SQLite),
 * concurrency 10, no batching, no validation, no projection. Prints `{"msg":"done","at":<ms>}`
 * once BASELINE_TOTAL rows are in.
 *
 * env: REDIS_URL, QUEUE_PREFIX, DATABASE_URL, BASELINE_QUEUE, BASELINE_TOTAL
 */
import 'reflect-metadata';
import IORedis from 'ioredis';
import { Worker } from 'bullmq';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { openDataSource } from '../../src/store/data-source';

const COLUMNS = 'event_id, plan_id, session_id, type, seq, spec_version, occurred_at, recorded_at, payload';
const PG_INSERT = `INSERT INTO plan_events (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;
// better-sqlite3 binds positional parameters to `?` and cannot bind a Date: times go as ISO text
const SQLITE_INSERT = `INSERT INTO plan_events (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;

async function main(): Promise<void> {
  const total = Number(process.env.BASELINE_TOTAL);
  const target = parseDatabaseUrl(process.env.DATABASE_URL!);
  const ds = await openDataSource(target, { poolSize: 10 });
  const sqlite = target.dialect === 'sqlite';
  const insert = sqlite ? SQLITE_INSERT : PG_INSERT;
  const connection = new IORedis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
  let done = 0;
  const worker = new Worker(
    process.env.BASELINE_QUEUE!,
    async (job) => {
      const e = job.data as {
        eventId: string;
        planId: string;
        sessionId: string;
        type: string;
        seq: number;
        specVersion: number;
        occurredAt: string;
        payload: unknown;
      };
      const recordedAt = sqlite ? new Date().toISOString() : new Date();
      await ds.query(insert, [
        e.eventId,
        e.planId,
        e.sessionId,
        e.type,
        e.seq,
        e.specVersion,
        e.occurredAt,
        recordedAt,
        JSON.stringify(e.payload),
      ]);
      if (++done === total) process.stdout.write(`${JSON.stringify({ msg: 'done', at: Date.now() })}\n`);
    },
    { connection, prefix: process.env.QUEUE_PREFIX!, concurrency: 10, removeOnComplete: { count: 1000 } },
  );
  worker.on('error', () => undefined);
  await worker.waitUntilReady();
  process.stdout.write(`${JSON.stringify({ msg: 'ready' })}\n`);
  process.once('SIGTERM', () => {
    void worker
      .close()
      .then(() => connection.quit())
      .then(() => ds.destroy())
      .then(() => process.exit(0));
  });
}

main().catch((err) => {
  process.stderr.write(`baseline worker: ${(err as Error).message}\n`);
  process.exit(1);
});
