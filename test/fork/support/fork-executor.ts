/**
 * A second executor, in its own process: it continues forks it did not create, knowing only their
 * ids. For each, it reads the resume point from the database, continues the plan's seqs from
 * `nextSeq` and runs the remaining layers through the publisher (step started and completed, a
 * checkpoint per layer), then finalizes the plan. Prints one JSON line: the events it published.
 *
 * env: DATABASE_URL, REDIS_URL, QUEUE_PREFIX, FORK_IDS (comma-separated), JOURNAL_DIR.
 */
import { parseDatabaseUrl } from '../../../src/config/database-url';
import { PlanEventPublisher } from '../../../src/publisher';
import { getResumePoint } from '../../../src/queries';
import { createLogger } from '../../../src/shared/logger';
import { createDataSource } from '../../../src/store/data-source';
import { ENTITY, type ExecutionPlanRow } from '../../../src/store/entities';

async function main(): Promise<void> {
  const env = process.env;
  const ds = createDataSource(parseDatabaseUrl(env.DATABASE_URL!));
  await ds.initialize();
  const publisher = new PlanEventPublisher({
    redisUrl: env.REDIS_URL!,
    queuePrefix: env.QUEUE_PREFIX!,
    journalDir: env.JOURNAL_DIR!,
    logger: createLogger({ level: 'warn' }),
  });
  let published = 0;
  const ok = (r: { ok: boolean }) => {
    if (!r.ok) throw new Error(`publish refused: ${JSON.stringify(r)}`);
    published++;
  };
  for (const planId of env.FORK_IDS!.split(',')) {
    const point = await getResumePoint(ds, planId);
    if (!point.resumable) throw new Error(`${planId} cannot be resumed because ${point.reason}`);
    const row = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOneByOrFail({ id: planId });
    const plan = { planId, sessionId: row.sessionId };
    publisher.continuePlan(plan, point.nextSeq);
    const byId = new Map(point.dag.steps.map((s) => [s.stepId, s]));
    const tasks = new Map(point.nextSteps.map((s) => [s.stepId, s.task]));
    for (let layer = point.nextLayer ?? point.dag.layers.length; layer < point.dag.layers.length; layer++) {
      for (const stepId of point.dag.layers[layer]) {
        ok(publisher.stepStarted(plan, { stepId, agentId: byId.get(stepId)!.agentId }));
        const task = tasks.get(stepId);
        ok(
          publisher.stepCompleted(plan, {
            stepId,
            inputTokens: 10,
            outputTokens: 5,
            outputContent: `${planId}/${stepId}${task !== undefined ? `: ${task}` : ''}`,
          }),
        );
      }
      ok(publisher.checkpointSaved(plan, { checkpointId: `${planId}-cp${layer}`, layer, state: { layer } }));
    }
    ok(publisher.planFinalized(plan, { status: 'completed', summary: 'run again by the second executor' }));
  }
  const closed = await publisher.close(30_000);
  await ds.destroy();
  process.stdout.write(`${JSON.stringify({ published, closed })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
