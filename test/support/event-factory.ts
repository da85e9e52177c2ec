/**
 * Valid, realistic plan events for tests and benchmarks: a multi-agent plan with a step DAG,
 * an optional approval (approve or edit), handoffs between agents, per-layer checkpoints, tokens,
 * an optional failed step (later steps skipped), and a final status. Deterministic for a seed.
 *
 *   const events = planRun({ seed: 1, steps: 5, requiresApproval: true, edit: true, failAt: 3 });
 *   const many = manyPlanRuns(20_000, { seed: 7 });      // about 20k events over many plans
 *   const jobs = toJobData(many, 50);                     // EventBatchJobData, 50 events each
 */
import { createHash } from 'node:crypto';
import type { PlanEvent, PlanEventTypeName, StepSpec } from '../../src/contracts';
import type { EventBatchJobData } from '../../src/queue/queue-names';

export interface PlanRunOptions {
  /** Seeds ids, agents, texts and tokens. @defaultValue 1 */
  seed?: number;
  /** @defaultValue `plan-<hash of seed>` */
  planId?: string;
  /** @defaultValue `sess-<hash of seed>` */
  sessionId?: string;
  /** Steps of the plan, spread over DAG layers. @defaultValue 4 */
  steps?: number;
  /** Agents the steps are given to, round robin. @defaultValue planner, researcher, coder, reviewer */
  agents?: string[];
  /** Emit a plan.decision before execution. @defaultValue false */
  requiresApproval?: boolean;
  /** With requiresApproval: the decision is `edit` with a changed step list (else `approve`). @defaultValue false */
  edit?: boolean;
  /** With requiresApproval: the decision is `reject`, nothing runs, the plan is cancelled. @defaultValue false */
  reject?: boolean;
  /** Index (in run order) of the step that fails; later steps are skipped. @defaultValue none */
  failAt?: number;
  /** First event's time; each next event is 1-3 s later. @defaultValue 2026-01-05T09:00:00Z */
  startAt?: Date;
  /** Emit plan.finalized. @defaultValue true */
  finalize?: boolean;
}

const DEFAULT_AGENTS = ['planner', 'researcher', 'coder', 'reviewer'];
const MODELS = ['gpt-4o', 'claude-sonnet-4', 'llama-3.1-70b'];
const TASKS = [
  'Collect the sources',
  'Draft the outline',
  'Write the code',
  'Review the result',
  'Summarise findings',
  'Check the numbers',
];

/** Small deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A UUID (v4 layout) derived from a string: the same input always gives the same id. */
export function stableUuid(input: string): string {
  const h = createHash('sha256').update(input).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Steps in layers of up to two; each step depends on every step of the previous layer. */
export function stepList(count: number, agents: string[], tag = ''): StepSpec[] {
  const steps: StepSpec[] = [];
  for (let i = 0; i < count; i++) {
    const layer = Math.floor(i / 2);
    const dependsOn = layer === 0 ? [] : steps.filter((_, j) => Math.floor(j / 2) === layer - 1).map((s) => s.stepId);
    steps.push({
      stepId: `s${i + 1}${tag}`,
      index: i,
      agentId: agents[i % agents.length],
      task: `${TASKS[i % TASKS.length]}${tag ? ' (revised)' : ''}`,
      title: `Step ${i + 1}`,
      expectedOutput: i % 2 === 0 ? 'markdown' : 'json',
      ...(dependsOn.length ? { dependsOn } : {}),
    });
  }
  return steps;
}

/** Every event of one plan run, valid against the contract, in `seq` order (seq from 0). */
export function planRun(options: PlanRunOptions = {}): PlanEvent[] {
  const seed = options.seed ?? 1;
  const random = rng(seed);
  const tag = createHash('sha256').update(`plan-${seed}`).digest('hex').slice(0, 12);
  const planId = options.planId ?? `plan-${tag}`;
  const sessionId = options.sessionId ?? `sess-${tag.slice(0, 8)}`;
  const agents = options.agents ?? DEFAULT_AGENTS;
  let time = (options.startAt ?? new Date('2026-01-05T09:00:00Z')).getTime();
  const events: PlanEvent[] = [];
  const emit: Emit = (type, payload) => {
    const seq = events.length;
    events.push({
      specVersion: 1,
      eventId: stableUuid(`${planId}#${seq}#${seed}`),
      type,
      planId,
      sessionId,
      seq,
      occurredAt: new Date(time).toISOString(),
      payload,
    } as PlanEvent);
    time += 1000 + Math.floor(random() * 2000);
  };
  let steps = stepList(options.steps ?? 4, agents);
  emit('plan.created', {
    query: `Plan ${tag}: research and implement feature ${seed}`,
    steps,
    requiresApproval: !!options.requiresApproval,
    complexity: 1 + (seed % 5),
  });
  if (options.requiresApproval) {
    if (options.reject) {
      emit('plan.decision', { decision: 'reject', feedback: 'Out of scope', decidedBy: 'alice' });
      if (options.finalize ?? true) emit('plan.finalized', { status: 'cancelled', summary: 'Rejected at approval' });
      return events;
    }
    if (options.edit) {
      steps = stepList(steps.length + 1, agents, 'e');
      emit('plan.decision', { decision: 'edit', steps, feedback: 'Add a verification step', decidedBy: 'alice' });
    } else {
      emit('plan.decision', { decision: 'approve', decidedBy: 'alice' });
    }
  }
  runSteps(steps, options.failAt, random, emit);
  if (options.finalize ?? true) {
    const failed = options.failAt !== undefined && options.failAt < steps.length;
    emit(
      'plan.finalized',
      failed
        ? { status: 'failed', failureReason: `step s${options.failAt! + 1} failed` }
        : { status: 'completed', summary: `All ${steps.length} steps done` },
    );
  }
  return events;
}

type PayloadOf<T extends PlanEventTypeName> = Extract<PlanEvent, { type: T }>['payload'];
type Emit = <T extends PlanEventTypeName>(type: T, payload: PayloadOf<T>) => void;

function runSteps(steps: StepSpec[], failAt: number | undefined, random: () => number, emit: Emit): void {
  let previousAgent: string | undefined;
  let failed = false;
  const layers = Math.ceil(steps.length / 2);
  for (let layer = 0; layer < layers; layer++) {
    const inLayer = steps.filter((_, i) => Math.floor(i / 2) === layer);
    for (const step of inLayer) {
      const i = steps.indexOf(step);
      if (failed) {
        emit('step.skipped', { stepId: step.stepId, reason: 'an earlier step failed' });
        continue;
      }
      if (previousAgent && previousAgent !== step.agentId) {
        emit('handoff.recorded', {
          handoffId: `h${i}`,
          stepId: step.stepId,
          fromAgentId: previousAgent,
          toAgentId: step.agentId,
          reason: 'next step',
          explanation: `${step.agentId} owns ${step.title}`,
        });
      }
      emit('step.started', { stepId: step.stepId, agentId: step.agentId });
      const inputTokens = 100 + Math.floor(random() * 900);
      const outputTokens = 50 + Math.floor(random() * 450);
      const model = MODELS[i % MODELS.length];
      if (i === failAt) {
        emit('step.failed', { stepId: step.stepId, error: 'tool call timed out', inputTokens, outputTokens: 0, model });
        failed = true;
      } else {
        emit('step.completed', {
          stepId: step.stepId,
          result: `done: ${step.task}`,
          outputContent: `# ${step.title}\n\nOutput of ${step.task}.`,
          inputTokens,
          outputTokens,
          model,
        });
      }
      previousAgent = step.agentId;
    }
    if (!failed)
      emit('checkpoint.saved', {
        checkpointId: `cp${layer}`,
        layer,
        state: { completed: inLayer.map((s) => s.stepId), layer },
      });
  }
}

/**
 * About `total` events (never fewer; the last plan is complete, so a little more) over as many
 * plans as needed; plan shapes vary (approval, edit, failure). Events are grouped plan by plan.
 */
export function manyPlanRuns(
  total: number,
  options: { seed?: number; steps?: number; startAt?: Date } = {},
): PlanEvent[] {
  const out: PlanEvent[] = [];
  for (let n = 0; out.length < total; n++) {
    const seed = (options.seed ?? 1) * 1_000_003 + n;
    out.push(
      ...planRun({
        seed,
        steps: options.steps ?? 4,
        requiresApproval: n % 3 === 0,
        edit: n % 6 === 0,
        failAt: n % 7 === 3 ? 1 : undefined,
        startAt: options.startAt,
      }),
    );
  }
  return out;
}

/**
 * Exactly `total` events: `manyPlanRuns` cut to size (the last plan may be incomplete, which is fine:
 * order-independence).
 */
export function exactlyEvents(total: number, options: { seed?: number; steps?: number } = {}): PlanEvent[] {
  return manyPlanRuns(total, options).slice(0, total);
}

/** An event that breaks the contract in a visible way (missing planId, negative tokens). */
export function invalidEvent(seed = 1): Record<string, unknown> {
  const [valid] = planRun({ seed });
  const { planId: _dropped, ...rest } = valid as unknown as Record<string, unknown>;
  return {
    ...rest,
    eventId: stableUuid(`invalid-${seed}`),
    type: 'step.completed',
    payload: { stepId: 's1', inputTokens: -5, outputTokens: 1 },
  };
}

/** Splits events into EventBatchJobData of `perJob` events (the shape the publisher enqueues). */
export function toJobData(events: unknown[], perJob: number): EventBatchJobData[] {
  const jobs: EventBatchJobData[] = [];
  for (let i = 0; i < events.length; i += perJob) jobs.push({ v: 1, events: events.slice(i, i + perJob) });
  return jobs;
}

/** Deterministic shuffle (Fisher-Yates), for order-independence tests. */
export function shuffled<T>(items: readonly T[], seed = 1): T[] {
  const random = rng(seed);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/**
 * A wide workflow: `layers` layers of `perLayer` steps `t<layer>-<i>`, each depending on two steps
 * of the layer before it (`t<l-1>-<i>` and `t<l-1>-<i+1 mod perLayer>`), agents `agent-0..5`.
 */
export function layeredSteps(layers: number, perLayer: number): StepSpec[] {
  const steps: StepSpec[] = [];
  for (let l = 0; l < layers; l++) {
    for (let i = 0; i < perLayer; i++) {
      const deps = l === 0 ? [] : [`t${l - 1}-${i}`, `t${l - 1}-${(i + 1) % perLayer}`];
      steps.push({
        stepId: `t${l}-${i}`,
        index: steps.length,
        agentId: `agent-${i % 6}`,
        task: `task ${l}.${i}`,
        ...(deps.length ? { dependsOn: deps } : {}),
      });
    }
  }
  return steps;
}
