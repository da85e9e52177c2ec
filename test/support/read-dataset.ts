import { keepingRollups } from '../../src/store/rollups/rollup-measure';
import { createHash } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { parsePlanEvent, PlanEvent, PlanEventInput, StepSpec } from '../../src/contracts';
import { ENTITY } from '../../src/store/entities';
import { PLAN_TABLES, stampRows } from '../../src/retention/retention-sql';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { startWorker } from '../../src/worker';
import {
  countRows,
  dropPrefix,
  openRedis,
  publish,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
  waitFor,
} from '../worker/helpers/queue-harness';

/**
 * One realistic dataset for the read side, built from events only and written through
 * `PlanEventStore.persist` (the worker's code path), so every database holds what the worker
 * would have written. Deterministic: same event ids, times and payloads on every run.
 *
 * Sessions and plans (created times are UTC, February 2026):
 * - sess-alpha: plan-a1 completed (handoffs, outputs), plan-a2 failed (a failed and a skipped
 *   step), plan-a3 executing after an edit decision (the session's active plan).
 * - sess-beta: plan-b1 rejected (cancelled), plan-b2 awaiting approval (planning), plan-b3 completed.
 * - sess-gamma: plan-c1 cancelled by finalization, plan-c2 completed then soft-deleted
 *   (huge token counts, so a leak shows), plan-c3 executing whose DAG row was removed.
 * - sess-dag: plan-dag, 120 steps in 6 layers, layers 0-2 checkpointed, layer 3 partly run;
 *   plan-dag-done, a small checkpointed DAG that completed.
 */

export const DAG_LAYER_SIZES = [10, 20, 30, 30, 20, 10];
export const DELETED_PLAN = 'plan-c2';
export const NO_DAG_PLAN = 'plan-c3';

function uuidFrom(name: string): string {
  const h = createHash('sha1').update(`read-dataset:${name}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

type Payload<T extends PlanEventInput['type']> = Extract<PlanEventInput, { type: T }>['payload'];

/** Writes one plan's events in order, each a few seconds after the previous one. */
export class PlanScript {
  readonly events: PlanEventInput[] = [];
  private clock: number;

  constructor(
    readonly planId: string,
    readonly sessionId: string,
    start: string,
  ) {
    this.clock = Date.parse(start);
  }

  private push<T extends PlanEventInput['type']>(type: T, payload: Payload<T>, afterSeconds: number): this {
    this.clock += afterSeconds * 1000;
    const seq = this.events.length;
    this.events.push({
      specVersion: 1,
      eventId: uuidFrom(`${this.planId}:${seq}`),
      type,
      planId: this.planId,
      sessionId: this.sessionId,
      seq,
      occurredAt: new Date(this.clock).toISOString(),
      payload,
    } as PlanEventInput);
    return this;
  }

  created(payload: Payload<'plan.created'>): this {
    return this.push('plan.created', payload, 0);
  }
  decision(payload: Payload<'plan.decision'>, after = 30): this {
    return this.push('plan.decision', payload, after);
  }
  started(stepId: string, after = 1): this {
    return this.push('step.started', { stepId }, after);
  }
  completed(
    stepId: string,
    tokens: [number, number],
    extra: Partial<Payload<'step.completed'>> = {},
    after = 20,
  ): this {
    return this.push('step.completed', { stepId, inputTokens: tokens[0], outputTokens: tokens[1], ...extra }, after);
  }
  failed(stepId: string, error: string, extra: Partial<Payload<'step.failed'>> = {}, after = 20): this {
    return this.push('step.failed', { stepId, error, ...extra }, after);
  }
  skipped(stepId: string, reason: string, after = 1): this {
    return this.push('step.skipped', { stepId, reason }, after);
  }
  handoff(payload: Payload<'handoff.recorded'>, after = 1): this {
    return this.push('handoff.recorded', payload, after);
  }
  checkpoint(checkpointId: string, layer: number, state: Record<string, unknown>, after = 1): this {
    return this.push('checkpoint.saved', { checkpointId, layer, state }, after);
  }
  finalized(payload: Payload<'plan.finalized'>, after = 2): this {
    return this.push('plan.finalized', payload, after);
  }
  /** Start then complete, the common case. */
  ran(stepId: string, tokens: [number, number], extra: Partial<Payload<'step.completed'>> = {}): this {
    return this.started(stepId).completed(stepId, tokens, extra);
  }
}

const step = (
  stepId: string,
  index: number,
  agentId: string,
  task: string,
  dependsOn: string[] = [],
  title?: string,
): StepSpec => ({
  stepId,
  index,
  agentId,
  task,
  ...(title ? { title } : {}),
  ...(dependsOn.length ? { dependsOn } : {}),
});

function alpha(): PlanScript[] {
  const a1 = new PlanScript('plan-a1', 'sess-alpha', '2026-02-02T09:00:00.000Z')
    .created({
      query: 'Add a bibliography section to the thesis',
      complexity: 3,
      steps: [
        step('read', 0, 'researcher', 'Read the existing structure', [], 'Read existing structure'),
        step('draft', 1, 'writer', 'Draft the bibliography', ['read'], 'Draft bibliography'),
        step('review', 2, 'reviewer', 'Review citations', ['draft'], 'Review citations'),
      ],
    })
    .ran('read', [1200, 300], {
      model: 'gpt-4o',
      result: 'structure read',
      outputContent: '# Plan\n\n1. Add references.bib\n2. Cite in chapter 2\n',
    })
    .handoff({
      handoffId: 'h-a1-1',
      stepId: 'draft',
      fromAgentId: 'researcher',
      toAgentId: 'writer',
      reason: 'needs_writing',
      explanation: 'sources collected',
    })
    .ran('draft', [2000, 1500], {
      model: 'claude-sonnet',
      result: 'draft written',
      outputContent: 'bibliography draft',
    })
    .handoff({ handoffId: 'h-a1-2', stepId: 'review', fromAgentId: 'writer', toAgentId: 'reviewer', reason: 'review' })
    .ran('review', [800, 200], { model: 'gpt-4o', result: 'approved' })
    .finalized({ status: 'completed', summary: 'bibliography added' });
  const a2 = new PlanScript('plan-a2', 'sess-alpha', '2026-02-03T10:00:00.000Z')
    .created({
      query: 'Summarise last week of issues',
      steps: [
        step('fetch', 0, 'researcher', 'Fetch issues'),
        step('search', 1, 'researcher', 'Search related discussions', ['fetch']),
        step('summarise', 2, 'writer', 'Write the summary', ['search']),
        step('publish', 3, 'publisher', 'Post the summary', ['summarise']),
      ],
    })
    .ran('fetch', [500, 100], { model: 'gpt-4o-mini' })
    .started('search')
    .failed(
      'search',
      'timeout calling search API after 30s',
      { inputTokens: 300, outputTokens: 0, model: 'gpt-4o-mini' },
      30,
    )
    .handoff({
      handoffId: 'h-a2-1',
      stepId: 'search',
      fromAgentId: 'researcher',
      toAgentId: 'writer',
      reason: 'escalation',
      explanation: 'search failed',
    })
    .skipped('summarise', 'upstream step search failed')
    .skipped('publish', 'upstream step search failed')
    .finalized({ status: 'failed', failureReason: 'step search failed: timeout calling search API after 30s' });
  const a3 = new PlanScript('plan-a3', 'sess-alpha', '2026-02-05T11:00:00.000Z')
    .created({
      query: 'Refactor the citation parser',
      requiresApproval: true,
      complexity: 4,
      steps: [step('design', 0, 'planner', 'Design the parser'), step('code', 1, 'coder', 'Implement it', ['design'])],
    })
    .decision({
      decision: 'edit',
      decidedBy: 'alice',
      feedback: 'add tests before merging',
      steps: [
        step('design', 0, 'planner', 'Design the parser'),
        step('code', 1, 'coder', 'Implement it', ['design']),
        step('test', 2, 'tester', 'Write tests', ['code']),
      ],
    })
    .ran('design', [900, 400], { model: 'claude-sonnet', outputContent: 'parser design v1' })
    .handoff({ handoffId: 'h-a3-1', stepId: 'code', fromAgentId: 'planner', toAgentId: 'coder', reason: 'needs_code' })
    .started('code');
  return [a1, a2, a3];
}

function beta(): PlanScript[] {
  const b1 = new PlanScript('plan-b1', 'sess-beta', '2026-02-03T15:00:00.000Z')
    .created({
      query: 'Delete old branches',
      requiresApproval: true,
      steps: [step('list', 0, 'git-agent', 'List branches'), step('delete', 1, 'git-agent', 'Delete them', ['list'])],
    })
    .decision({ decision: 'reject', decidedBy: 'bob', feedback: 'too risky' });
  const b2 = new PlanScript('plan-b2', 'sess-beta', '2026-02-04T08:00:00.000Z').created({
    query: 'Upgrade dependencies',
    requiresApproval: true,
    steps: [step('audit', 0, 'coder', 'Audit versions'), step('bump', 1, 'coder', 'Bump versions', ['audit'])],
  });
  const b3 = new PlanScript('plan-b3', 'sess-beta', '2026-02-04T12:00:00.000Z')
    .created({
      query: 'Answer the support ticket',
      steps: [step('triage', 0, 'support', 'Triage'), step('answer', 1, 'writer', 'Answer', ['triage'])],
    })
    .ran('triage', [400, 120], { model: 'gpt-4o-mini' })
    .handoff({
      handoffId: 'h-b3-1',
      stepId: 'answer',
      fromAgentId: 'support',
      toAgentId: 'writer',
      reason: 'needs_writing',
    })
    .ran('answer', [700, 650], { model: 'gpt-4o' })
    .finalized({ status: 'completed' });
  return [b1, b2, b3];
}

function gamma(): PlanScript[] {
  const c1 = new PlanScript('plan-c1', 'sess-gamma', '2026-02-04T13:00:00.000Z')
    .created({ query: 'Translate the README', steps: [step('translate', 0, 'writer', 'Translate')] })
    .started('translate')
    .finalized({ status: 'cancelled', summary: 'user stopped the plan' }, 10);
  const c2 = new PlanScript(DELETED_PLAN, 'sess-gamma', '2026-02-05T09:30:00.000Z')
    .created({ query: 'Secret retired plan', steps: [step('only', 0, 'ghost-agent', 'Spend tokens')] })
    .ran('only', [999_000, 999_000], { model: 'ghost-model', outputContent: 'must never be read' })
    .handoff({ handoffId: 'h-c2-1', fromAgentId: 'ghost-agent', toAgentId: 'writer', reason: 'ghost' })
    .checkpoint('ck-c2-0', 0, { done: ['only'] })
    .finalized({ status: 'completed' });
  const c3 = new PlanScript(NO_DAG_PLAN, 'sess-gamma', '2026-02-05T10:00:00.000Z')
    .created({
      query: 'Index the wiki',
      steps: [step('crawl', 0, 'crawler', 'Crawl pages'), step('index', 1, 'indexer', 'Index them', ['crawl'])],
    })
    .started('crawl');
  return [c1, c2, c3];
}

const AGENTS = ['planner', 'coder', 'tester', 'reviewer'];

/** A DAG of `sizes[l]` steps per layer; each step depends on two steps of the previous layer. */
export function dagSteps(prefix: string, sizes: number[]): StepSpec[] {
  const out: StepSpec[] = [];
  sizes.forEach((size, layer) => {
    for (let i = 0; i < size; i++) {
      const prev = sizes[layer - 1];
      const deps = layer === 0 ? [] : [...new Set([i % prev, (i + 1) % prev])].map((j) => dagKey(prefix, layer - 1, j));
      out.push(
        step(
          dagKey(prefix, layer, i),
          out.length,
          AGENTS[out.length % AGENTS.length],
          `task ${layer}.${i}`,
          deps,
          `Layer ${layer} task ${i}`,
        ),
      );
    }
  });
  return out;
}

export const dagKey = (prefix: string, layer: number, i: number) => `${prefix}${layer}-${String(i).padStart(2, '0')}`;

function dag(): PlanScript[] {
  const steps = dagSteps('t', DAG_LAYER_SIZES);
  const big = new PlanScript('plan-dag', 'sess-dag', '2026-02-06T08:00:00.000Z').created({
    query: 'Migrate 120 services to the new API',
    complexity: 9,
    steps,
  });
  for (let layer = 0; layer < 3; layer++) {
    const keys = Array.from({ length: DAG_LAYER_SIZES[layer] }, (_, i) => dagKey('t', layer, i));
    for (const key of keys)
      big.ran(key, [100 + layer * 10, 50 + layer], { model: layer % 2 === 0 ? 'gpt-4o' : 'claude-sonnet' });
    big.checkpoint(`ck-dag-${layer}`, layer, { layer, completed: keys, context: { branch: `migrate-l${layer}` } });
  }
  big.handoff({
    handoffId: 'h-dag-1',
    stepId: dagKey('t', 3, 0),
    fromAgentId: 'reviewer',
    toAgentId: 'coder',
    reason: 'needs_code',
  });
  for (let i = 0; i < 5; i++) big.ran(dagKey('t', 3, i), [130, 53], { model: 'gpt-4o' });
  big
    .started(dagKey('t', 3, 5))
    .failed(dagKey('t', 3, 5), 'compile error in service 35', { inputTokens: 90, outputTokens: 10, model: 'gpt-4o' });
  for (let i = 6; i < 9; i++) big.started(dagKey('t', 3, i));

  const small = new PlanScript('plan-dag-done', 'sess-dag', '2026-02-05T20:00:00.000Z').created({
    query: 'Rotate two keys',
    steps: dagSteps('k', [2, 1]),
  });
  small
    .ran(dagKey('k', 0, 0), [10, 5], { model: 'gpt-4o-mini' })
    .ran(dagKey('k', 0, 1), [10, 5], { model: 'gpt-4o-mini' })
    .checkpoint('ck-done-0', 0, { layer: 0 });
  small
    .ran(dagKey('k', 1, 0), [20, 8], { model: 'gpt-4o-mini' })
    .checkpoint('ck-done-1', 1, { layer: 1 })
    .finalized({ status: 'completed' });
  return [big, small];
}

/** Every event of the dataset, validated by the contract exactly as the worker does. */
export function readDatasetEvents(): PlanEvent[] {
  const inputs = [...alpha(), ...beta(), ...gamma(), ...dag()].flatMap((s) => s.events);
  return inputs.map((input) => {
    const parsed = parsePlanEvent(input);
    if (!parsed.ok)
      throw new Error(
        `dataset event ${input.planId}#${input.seq} is invalid: ${JSON.stringify(parsed.error.violations)}`,
      );
    return parsed.event;
  });
}

/** Marks every row of a plan deleted, with retention's own table list and statement, and takes it out of the rollups as retention does. */
export async function softDeletePlan(ds: DataSource, planId: string): Promise<void> {
  const now = new Date();
  await ds.transaction(async (m) => {
    await keepingRollups(m, [planId], async () => {
      for (const spec of PLAN_TABLES) await stampRows(m, spec, [planId], now).execute();
    });
  });
}

/**
 * Persists the dataset in worker-sized batches, in arrival order (by time across plans), then
 * applies what only maintenance does: soft-deletes DELETED_PLAN and drops NO_DAG_PLAN's DAG
 * (an expired DAG removed by cleanup).
 */
export async function loadReadDataset(ds: DataSource, batchSize = 60): Promise<PlanEvent[]> {
  const events = datasetInTimeOrder();
  const store = new PlanEventStore(ds);
  for (let i = 0; i < events.length; i += batchSize) await store.persist(events.slice(i, i + batchSize));
  return finishDataset(ds, events);
}

function datasetInTimeOrder(): PlanEvent[] {
  return readDatasetEvents().sort(
    (a, b) => a.occurredAt.localeCompare(b.occurredAt) || a.planId.localeCompare(b.planId) || a.seq - b.seq,
  );
}

/**
 * The same dataset, through the real worker: jobs of `batchSize` events on a queue prefix of its
 * own, consumed by an in-process worker (startWorker) writing to `url`'s database, as in production.
 */
export async function loadReadDatasetThroughWorker(ds: DataSource, url: string, batchSize = 60): Promise<PlanEvent[]> {
  const events = datasetInTimeOrder();
  const prefix = uniquePrefix('read');
  const redis = openRedis();
  const worker = await startWorker({
    config: { redisUrl: REDIS_URL, queuePrefix: prefix, database: parseDatabaseUrl(url) },
    logger: silentLogger(),
    dataSource: ds,
    settings: { healthPort: null },
  });
  try {
    const jobs = [];
    for (let i = 0; i < events.length; i += batchSize)
      jobs.push({ v: 1 as const, events: events.slice(i, i + batchSize) });
    await publish(redis, prefix, jobs);
    await waitFor(
      'the worker stored the dataset',
      async () => (await countRows(ds, 'plan_events')) === events.length,
      60_000,
    );
    expect(worker.stats().deadLettered).toBe(0);
  } finally {
    await worker.close(10_000);
    await dropPrefix(redis, prefix);
    await redis.quit();
  }
  return finishDataset(ds, events);
}

async function finishDataset(ds: DataSource, events: PlanEvent[]): Promise<PlanEvent[]> {
  await softDeletePlan(ds, DELETED_PLAN);
  await ds.getRepository(ENTITY.dag).delete({ workflowId: NO_DAG_PLAN });
  return events;
}
