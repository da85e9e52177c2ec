/**
 * The traffic of `npm run bench:volume`: a month of realistic sessions, as executors publish it.
 *
 * - sessions of 1-8 plans (4.5 on average), one after the other, its events 1-30 s apart; the
 *   sessions start in time order over the window (`from`..`to`, 30 days by default), spread in
 *   proportion to the events published, so the store is ingested in the order a live ledger
 *   receives it (its event ids are UUIDv7 of the publish time);
 * - plans of 3-8 steps (80 %), 9-30 (19.8 %) or 200-500 (0.2 %), in DAG layers of 1-3 steps,
 *   given to 2-4 of 10 agents and to 6 models (one unknown to the price table: unpriced steps);
 * - 30 % need an approval (80 % approved, 15 % edited with one more step, 5 % rejected);
 * - 5 % fail at a random step (the later steps are skipped); 2 % are still running at the end;
 * - a handoff whenever the next step's agent differs (a step keeps its predecessor's agent 60 % of
 *   the time), a checkpoint per layer;
 * - 20 % of the completed steps carry an output of 1-20 KB (the others a one-line result).
 *
 * Deterministic for a seed. Events come as publisher inputs with `occurredAt` set (the publisher
 * stamps `eventId` and `seq`), interleaved over `window` plans in flight at once, as concurrent
 * executors would send them: each event when it happens (the plan in flight whose next event is
 * the earliest goes first), a session entering the flight in the order of its start.
 */
import type { PlanEventInput, StepSpec } from '../../src/contracts';
import { rng } from '../../test/support/event-factory';

export const VOLUME_AGENTS = [
  'planner',
  'researcher',
  'coder',
  'reviewer',
  'tester',
  'writer',
  'analyst',
  'designer',
  'ops',
  'critic',
];
export const VOLUME_MODELS = [
  'gpt-4o',
  'gpt-4o-mini',
  'claude-sonnet-4',
  'claude-3-5-haiku',
  'gemini-1.5-pro',
  'internal-llm-7b',
];
const WORDS =
  'the plan step agent result review check data model query source output draft code test report summary table index page value error retry cache token cost budget layer graph node edge'.split(
    ' ',
  );

export interface VolumeOptions {
  /** Seeds everything; two phases of one run use two seeds (their ids differ). */
  seed: number;
  /** Prefix of the phase's plan and session ids. */
  tag: string;
  /** The window the sessions start in. */
  from: Date;
  to: Date;
  /** Plans in flight at once (their events interleave). @defaultValue 200 */
  window?: number;
}

type Input = PlanEventInput;

/** A plan's events in seq order (without seq: the publisher stamps it). */
function planEvents(planId: string, sessionId: string, startMs: number, random: () => number): Input[] {
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)];
  const roll = random();
  const stepCount =
    roll < 0.002
      ? 200 + Math.floor(random() * 301)
      : roll < 0.2
        ? 9 + Math.floor(random() * 22)
        : 3 + Math.floor(random() * 6);
  // a plan works with 2-4 of the agents, a step often with the same agent as the one before
  const crew = Array.from({ length: 2 + Math.floor(random() * 3) }, () => pick(VOLUME_AGENTS));
  let steps = stepsOf(stepCount, random, crew, '');
  let time = startMs;
  const events: Input[] = [];
  const emit = (type: Input['type'], payload: unknown) => {
    events.push({ type, planId, sessionId, occurredAt: new Date(time).toISOString(), payload } as Input);
    time += 1_000 + Math.floor(random() * 29_000);
  };
  const requiresApproval = random() < 0.3;
  emit('plan.created', {
    query: `${sentence(random, 8 + Math.floor(random() * 20))} (${planId})`,
    steps,
    requiresApproval,
    complexity: 1 + Math.floor(random() * 5),
  });
  if (requiresApproval) {
    const d = random();
    if (d < 0.05) {
      emit('plan.decision', { decision: 'reject', feedback: 'Out of scope for this sprint', decidedBy: 'alice' });
      emit('plan.finalized', { status: 'cancelled', summary: 'Rejected at approval' });
      return events;
    }
    if (d < 0.2) {
      steps = stepsOf(steps.length + 1, random, crew, 'e');
      emit('plan.decision', { decision: 'edit', steps, feedback: 'Add a verification step', decidedBy: 'bob' });
    } else emit('plan.decision', { decision: 'approve', decidedBy: 'alice' });
  }
  const failAt = random() < 0.05 ? Math.floor(random() * steps.length) : -1;
  const running = failAt < 0 && random() < 0.02 ? Math.floor(random() * steps.length) : -1;
  const layers = layersOf(steps);
  let previousAgent: string | undefined;
  let failed = false;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    if (i === running) return events; // still running when the benchmark reads
    if (failed) {
      emit('step.skipped', { stepId: step.stepId, reason: 'an earlier step failed' });
      continue;
    }
    if (previousAgent && previousAgent !== step.agentId)
      emit('handoff.recorded', {
        handoffId: `h${i}`,
        stepId: step.stepId,
        fromAgentId: previousAgent,
        toAgentId: step.agentId,
        reason: pick(['next step', 'needs review', 'specialist', 'escalation']),
        explanation: `${step.agentId} takes over ${step.stepId}`,
      });
    emit('step.started', { stepId: step.stepId, agentId: step.agentId });
    const model = pick(VOLUME_MODELS);
    const inputTokens = 200 + Math.floor(random() * 8_000);
    if (i === failAt) {
      emit('step.failed', { stepId: step.stepId, error: 'tool call timed out after 120 s', inputTokens, model });
      failed = true;
    } else {
      const output = random() < 0.2 ? { outputContent: document(random, 1_024 + Math.floor(random() * 19_456)) } : {};
      emit('step.completed', {
        stepId: step.stepId,
        result: `done: ${step.task}`,
        ...output,
        inputTokens,
        outputTokens: 50 + Math.floor(random() * 2_000),
        model,
      });
    }
    previousAgent = step.agentId;
    const layer = layers[i];
    if ((i === steps.length - 1 || layers[i + 1] !== layer) && !failed) {
      const completed: string[] = [];
      for (let j = i; j >= 0 && layers[j] === layer; j--) completed.unshift(steps[j].stepId);
      emit('checkpoint.saved', { checkpointId: `cp${layer}`, layer, state: { layer, completed } });
    }
  }
  emit(
    'plan.finalized',
    failed
      ? { status: 'failed', failureReason: `step ${steps[failAt].stepId} failed` }
      : { status: 'completed', summary: `All ${steps.length} steps done` },
  );
  return events;
}

/** Steps in layers of 1-3: each depends on the previous layer's first step. */
function stepsOf(count: number, random: () => number, crew: string[], tag: string): StepSpec[] {
  const steps: StepSpec[] = [];
  let inLayer = 0;
  let width = 1 + Math.floor(random() * 3);
  let previousFirst: string | undefined;
  let first: string | undefined;
  for (let i = 0; i < count; i++) {
    if (inLayer === width) {
      inLayer = 0;
      width = 1 + Math.floor(random() * 3);
      previousFirst = first;
    }
    const stepId = `s${i + 1}${tag}`;
    if (inLayer === 0) first = stepId;
    const agentId = i > 0 && random() < 0.6 ? steps[i - 1].agentId : crew[Math.floor(random() * crew.length)];
    steps.push({
      stepId,
      index: i,
      agentId,
      task: `${sentence(random, 6 + Math.floor(random() * 10))}`,
      title: `Step ${i + 1}`,
      ...(previousFirst ? { dependsOn: [previousFirst] } : {}),
    });
    inLayer++;
  }
  return steps;
}

/** Each step's DAG layer (a step depends on the first step of the layer before its own). */
function layersOf(steps: StepSpec[]): number[] {
  const byId = new Map<string, number>();
  return steps.map((s) => {
    const dep = s.dependsOn?.[0];
    const layer = dep === undefined ? 0 : byId.get(dep)! + 1;
    byId.set(s.stepId, layer);
    return layer;
  });
}

function sentence(random: () => number, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(WORDS[Math.floor(random() * WORDS.length)]);
  const text = out.join(' ');
  return text[0].toUpperCase() + text.slice(1);
}

/** About `bytes` of markdown-like text (compressible as real model output is, roughly 2-3x). */
function document(random: () => number, bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  while (size < bytes) {
    const line =
      random() < 0.1 ? `\n## ${sentence(random, 4)}\n` : `${sentence(random, 8 + Math.floor(random() * 16))}. `;
    parts.push(line);
    size += line.length;
  }
  return parts.join('').slice(0, bytes);
}

/** When a plan's next event (the last of its reversed list) happens: ISO strings of one format compare as times. */
const nextAt = (reversed: Input[]): string => reversed[reversed.length - 1].occurredAt!;

/**
 * Publisher inputs of one phase, in publish order, `count` events at least (the last plans are
 * complete), produced lazily a chunk at a time so a million events never sit in memory at once.
 */
export function* volumeTraffic(count: number, options: VolumeOptions): Generator<Input> {
  const random = rng(options.seed);
  const window = options.window ?? 200;
  const span = options.to.getTime() - options.from.getTime();
  const inFlight: Input[][] = [];
  let produced = 0;
  let session = 0;
  let queuedEvents = 0;
  let lastStart = options.from.getTime();
  const queued: Input[][] = [];
  const nextPlans = () => {
    const sessionId = `${options.tag}-s${session}`;
    const plans = 1 + Math.floor(random() * 8);
    // sessions start in time order, at the share of the window the events queued so far are of
    // `count` (a minute of jitter, never before the previous start); a session's plans follow each
    // other, and sessions starting near the window's end stay inside it
    const usable = span - 6 * 3_600_000;
    const share = Math.min(1, queuedEvents / count);
    const jitter = Math.floor(random() * 60_000);
    lastStart = Math.max(lastStart, options.from.getTime() + Math.floor(share * usable) + jitter);
    let at = lastStart;
    for (let p = 0; p < plans; p++) {
      const events = planEvents(`${options.tag}-p${session}-${p}`, sessionId, at, random);
      at += 5 * 60_000 + Math.floor(random() * 40 * 60_000);
      queuedEvents += events.length;
      queued.push(events);
    }
    session++;
  };
  while (produced < count || inFlight.length > 0) {
    while (produced < count && inFlight.length < window) {
      if (queued.length === 0) nextPlans();
      const plan = queued.shift()!;
      produced += plan.length;
      inFlight.push(plan.reverse());
    }
    // the plan in flight whose next event happens first: the traffic arrives in time order
    let i = 0;
    for (let j = 1; j < inFlight.length; j++) if (nextAt(inFlight[j]) < nextAt(inFlight[i])) i = j;
    const plan = inFlight[i];
    yield plan.pop()!;
    if (plan.length === 0) {
      inFlight[i] = inFlight[inFlight.length - 1];
      inFlight.pop();
    }
  }
}
