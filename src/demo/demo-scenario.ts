import { randomUUID } from 'node:crypto';
import type { PlanEventPublisher } from '../publisher';
import type { StepSpec } from '../contracts';

/** One action of the scripted executor: a label for progress, and the publish call. */
export interface ScenarioAction {
  label: string;
  publish(publisher: PlanEventPublisher): void;
}

export interface DemoIds {
  planId: string;
  sessionId: string;
}

const STEPS: StepSpec[] = [
  {
    stepId: 'collect',
    index: 0,
    agentId: 'researcher',
    title: 'Collect sources',
    task: 'Collect every work cited in chapters 1-4',
    expectedOutput: 'list of references',
  },
  {
    stepId: 'style',
    index: 1,
    agentId: 'architect',
    title: 'Pick a style',
    task: 'Choose a citation style and the section layout',
    dependsOn: ['collect'],
  },
  {
    stepId: 'write',
    index: 2,
    agentId: 'writer',
    title: 'Write the section',
    task: 'Write the bibliography section',
    expectedOutput: 'markdown',
    dependsOn: ['style'],
  },
  {
    stepId: 'review',
    index: 3,
    agentId: 'reviewer',
    title: 'Check citations',
    task: 'Check that every in-text citation resolves',
    dependsOn: ['write'],
  },
  {
    stepId: 'build',
    index: 4,
    agentId: 'publisher',
    title: 'Rebuild the PDF',
    task: 'Rebuild the thesis PDF',
    dependsOn: ['review'],
  },
];

/** The user's edit: APA 7, and a fact-checker verifying quotes beside the reviewer. */
const EDITED: StepSpec[] = [
  STEPS[0],
  { ...STEPS[1], task: 'Use APA 7th edition; lay the section out by chapter' },
  STEPS[2],
  STEPS[3],
  {
    stepId: 'quotes',
    index: 4,
    agentId: 'fact-checker',
    title: 'Verify quotes',
    task: 'Verify every direct quote against its source page',
    dependsOn: ['write'],
  },
  { ...STEPS[4], index: 5, dependsOn: ['review', 'quotes'] },
];

const BIBLIOGRAPHY = `## Bibliography

Bengio, Y., Courville, A., & Goodfellow, I. (2016). *Deep learning*. MIT Press.
Sutton, R. S., & Barto, A. G. (2018). *Reinforcement learning: An introduction* (2nd ed.). MIT Press.
Vaswani, A., et al. (2017). Attention is all you need. *NeurIPS 30*, 5998-6008.
`;

const a = (label: string, publish: (p: PlanEventPublisher) => void): ScenarioAction => ({ label, publish });

/** What a demo step's completion reports. */
interface DemoRun {
  inputTokens: number;
  outputTokens: number;
  model: string;
  result?: string;
  outputContent?: string;
}

/** A step started, then completed by `agent`. */
function run(ref: DemoIds, stepId: string, agent: string, done: DemoRun): ScenarioAction[] {
  const { inputTokens, outputTokens, model } = done;
  return [
    a(`${agent} starts ${stepId}`, (p) => p.stepStarted(ref, { stepId })),
    a(`${agent} completes ${stepId}`, (p) =>
      p.stepCompleted(ref, {
        stepId,
        inputTokens,
        outputTokens,
        model,
        result: done.result ?? 'done',
        ...(done.outputContent ? { outputContent: done.outputContent } : {}),
      }),
    ),
  ];
}

function handoff(
  ref: DemoIds,
  h: { handoffId: string; stepId: string; from: string; to: string; explanation: string },
): ScenarioAction {
  return a(`handoff ${h.from} -> ${h.to}`, (p) =>
    p.handoffRecorded(ref, {
      handoffId: h.handoffId,
      stepId: h.stepId,
      fromAgentId: h.from,
      toAgentId: h.to,
      reason: 'delegation',
      explanation: h.explanation,
    }),
  );
}

function checkpoint(ref: DemoIds, layer: number, done: string[]): ScenarioAction {
  return a(`checkpoint after layer ${layer}`, (p) =>
    p.checkpointSaved(ref, {
      checkpointId: `layer-${layer}`,
      layer,
      state: { completed: done, notes: `layer ${layer} validated` },
    }),
  );
}

/**
 * A realistic multi-agent run: a plan that waits for approval, an edit decision,
 * steps across five agents with tokens and models, handoffs, a checkpoint per DAG layer, two steps
 * running side by side, a failed step, a skipped one, and the plan finalized as failed.
 */
export function demoScenario(ids: DemoIds): ScenarioAction[] {
  const ref = ids;
  return [
    a('planner creates the plan (approval required)', (p) =>
      p.planCreated(ref, {
        query: 'Add a bibliography section to the thesis and check every citation',
        steps: STEPS,
        requiresApproval: true,
        complexity: 3,
      }),
    ),
    a('user edits the plan', (p) =>
      p.planDecision(ref, {
        decision: 'edit',
        steps: EDITED,
        feedback: 'Use APA 7 and verify the quotes too',
        decidedBy: 'alice@example.com',
      }),
    ),
    ...run(ref, 'collect', 'researcher', {
      inputTokens: 1200,
      outputTokens: 640,
      model: 'gpt-4o-mini',
      result: '23 references found',
    }),
    checkpoint(ref, 0, ['collect']),
    handoff(ref, {
      handoffId: 'h1',
      stepId: 'style',
      from: 'researcher',
      to: 'architect',
      explanation: 'references collected; style decision needed',
    }),
    ...run(ref, 'style', 'architect', {
      inputTokens: 900,
      outputTokens: 310,
      model: 'claude-sonnet-4-5',
      result: 'APA 7, grouped by chapter',
    }),
    checkpoint(ref, 1, ['collect', 'style']),
    handoff(ref, { handoffId: 'h2', stepId: 'write', from: 'architect', to: 'writer', explanation: 'layout agreed' }),
    ...run(ref, 'write', 'writer', {
      inputTokens: 3100,
      outputTokens: 2200,
      model: 'claude-sonnet-4-5',
      result: 'section written',
      outputContent: BIBLIOGRAPHY,
    }),
    checkpoint(ref, 2, ['collect', 'style', 'write']),
    handoff(ref, {
      handoffId: 'h3',
      stepId: 'review',
      from: 'writer',
      to: 'reviewer',
      explanation: 'ready for review',
    }),
    handoff(ref, {
      handoffId: 'h4',
      stepId: 'quotes',
      from: 'writer',
      to: 'fact-checker',
      explanation: 'quotes need verification',
    }),
    a('reviewer starts review', (p) => p.stepStarted(ref, { stepId: 'review' })),
    a('fact-checker starts quotes', (p) => p.stepStarted(ref, { stepId: 'quotes' })),
    a('reviewer completes review', (p) =>
      p.stepCompleted(ref, {
        stepId: 'review',
        inputTokens: 2600,
        outputTokens: 400,
        model: 'gpt-4o',
        result: 'all 23 citations resolve',
      }),
    ),
    a('fact-checker fails quotes', (p) =>
      p.stepFailed(ref, {
        stepId: 'quotes',
        error: '2 quotes could not be verified: page numbers missing in Sutton & Barto (2018)',
        inputTokens: 1800,
        outputTokens: 150,
        model: 'gpt-4o',
      }),
    ),
    a('publisher skips build', (p) => p.stepSkipped(ref, { stepId: 'build', reason: 'dependency "quotes" failed' })),
    a('executor finalizes the plan', (p) =>
      p.planFinalized(ref, {
        status: 'failed',
        summary: 'Bibliography written and reviewed; quote verification failed',
        failureReason: 'step "quotes" failed: 2 quotes could not be verified',
      }),
    ),
  ];
}

/**
 * An event an older or buggy producer might put straight on the queue, bypassing the publisher's
 * checks: negative tokens and no stepId. The worker must dead-letter it and keep the rest.
 */
export function poisonEvent(ids: DemoIds): Record<string, unknown> {
  return {
    specVersion: 1,
    eventId: randomUUID(),
    type: 'step.completed',
    planId: ids.planId,
    sessionId: ids.sessionId,
    seq: 9999,
    occurredAt: new Date().toISOString(),
    payload: { inputTokens: -5, outputTokens: 10 },
  };
}
