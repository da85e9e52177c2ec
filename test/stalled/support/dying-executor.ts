/**
 * An executor that starts a plan and its first step through the publisher, prints `stored` once
 * the worker has stored both, then hangs until it is killed (the test sends SIGKILL: nothing of it
 * runs afterwards, no failure hook, no last event).
 *
 * env: REDIS_URL, QUEUE_PREFIX, JOURNAL_DIR, PLAN_ID, STEP_DEADLINE_MS (optional).
 */
import { PlanEventPublisher } from '../../../src/publisher';
import { createLogger } from '../../../src/shared/logger';

async function main(): Promise<void> {
  const env = process.env;
  const publisher = new PlanEventPublisher({
    redisUrl: env.REDIS_URL!,
    queuePrefix: env.QUEUE_PREFIX!,
    journalDir: env.JOURNAL_DIR!,
    logger: createLogger({ level: 'warn' }),
  });
  const plan = { planId: env.PLAN_ID!, sessionId: `session-${env.PLAN_ID!}` };
  const steps = [
    { stepId: 'fetch', index: 0, agentId: 'researcher', task: 'fetch the sources' },
    { stepId: 'write', index: 1, agentId: 'writer', task: 'write the report', dependsOn: ['fetch'] },
  ];
  const check = (r: { ok: boolean }) => {
    if (!r.ok) throw new Error(`publish refused: ${JSON.stringify(r)}`);
  };
  check(publisher.planCreated(plan, { query: 'a report', steps }));
  const deadline = env.STEP_DEADLINE_MS ? Number(env.STEP_DEADLINE_MS) : undefined;
  check(publisher.stepStarted(plan, { stepId: 'fetch', ...(deadline ? { deadlineMs: deadline } : {}) }));
  if (!(await publisher.stored(30_000))) throw new Error('the events were not stored within 30 s');
  process.stdout.write('stored\n');
  setInterval(() => undefined, 60_000); // working on the step, until killed
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
