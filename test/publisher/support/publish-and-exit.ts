/**
 * Child process for the read-your-writes test: publishes one plan run (seed from argv) on
 * `journalDir`, closes the publisher (it must report `flushed`), prints the plan id, and exits.
 * argv: <redisUrl> <queuePrefix> <journalDir> <seed>
 */
import pino from 'pino';
import { PlanEventPublisher } from '../../../src/publisher';
import { planRun } from '../../support/event-factory';

async function main(): Promise<void> {
  const [redisUrl, queuePrefix, journalDir, seed] = process.argv.slice(2);
  const publisher = new PlanEventPublisher({ redisUrl, queuePrefix, journalDir, logger: pino({ level: 'silent' }) });
  const events = planRun({ seed: Number(seed), steps: 4 });
  for (const event of events) if (!publisher.publish(event).ok) throw new Error('not accepted');
  const closed = await publisher.close(10_000);
  process.stdout.write(`${JSON.stringify({ planId: events[0].planId, events: events.length, ...closed })}\n`);
}

main().catch((err) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
