/**
 * Child process for the crash test: publishes `count` events to a Redis that is down, until most of
 * them sit in the spill journal, prints their eventIds (one JSON line), then hangs until killed.
 * argv: <redisUrl> <journalDir> <count> <maxBufferedEvents|default> [<waitMs> [<journalCommitMs>]]
 * With `waitMs`, it waits that long after publishing before reporting (the group-commit test).
 */
import pino from 'pino';
import { PlanEventPublisher } from '../../../src/publisher';
import { exactlyEvents } from '../../support/event-factory';

async function main(): Promise<void> {
  const [redisUrl, journalDir, count, maxBufferedEvents, waitMs, journalCommitMs] = process.argv.slice(2);
  const publisher = new PlanEventPublisher({
    redisUrl,
    journalDir,
    queuePrefix: 'unused',
    maxBufferedEvents: maxBufferedEvents === 'default' ? undefined : Number(maxBufferedEvents),
    journalCommitMs: journalCommitMs ? Number(journalCommitMs) : undefined,
    logger: pino({ level: 'silent' }),
  });
  const events = exactlyEvents(Number(count), { seed: 41 });
  for (const event of events) {
    const result = publisher.publish(event);
    if (!result.ok) throw new Error(`not accepted: ${JSON.stringify(result)}`);
  }
  // The pump writes what is staged on its next turn.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  if (waitMs) await new Promise((resolve) => setTimeout(resolve, Number(waitMs)));
  process.stdout.write(`${JSON.stringify({ eventIds: events.map((e) => e.eventId), stats: publisher.stats() })}\n`);
  setInterval(() => undefined, 1_000);
}

main().catch((err) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
