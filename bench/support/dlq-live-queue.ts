/**
 * A live events queue beside a dead-letter replay (bench:dlq): one process that keeps a queue fed
 * and a worker with a no-op processor draining it, printing the jobs completed every 250 ms as a
 * JSON line on stdout. Its own process, so the replay's CPU in the bench process does not count.
 * Usage: tsx bench/support/dlq-live-queue.ts <redisUrl> <prefix>
 */
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

async function main(): Promise<void> {
  const [url, prefix] = process.argv.slice(2);
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const queue = new Queue('live-events', { connection, prefix });
  let completed = 0;
  const worker = new Worker('live-events', async () => undefined, {
    connection: new IORedis(url, { maxRetriesPerRequest: null }),
    prefix,
    concurrency: 20,
  });
  worker.on('completed', () => (completed += 1));
  let running = true;
  process.on('SIGTERM', () => (running = false));
  const tick = setInterval(() => process.stdout.write(`${JSON.stringify({ t: Date.now(), completed })}\n`), 250);
  // keep ~1,000 jobs waiting: the worker is never starved by the feeder
  while (running) {
    const waiting = await queue.count();
    if (waiting < 1_000)
      await queue.addBulk(
        Array.from({ length: 200 }, (_, i) => ({ name: 'e', data: { i }, opts: { removeOnComplete: true } })),
      );
    else await new Promise((r) => setTimeout(r, 20));
  }
  clearInterval(tick);
  await worker.close();
  await queue.close();
  connection.disconnect();
  process.exit(0);
}

void main();
