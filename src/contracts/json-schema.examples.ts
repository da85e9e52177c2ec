import type { PlanEventTypeName } from './event-types';
import type { PlanEvent } from './types';

const base = { specVersion: 1 as const, planId: 'plan_todo_42', sessionId: 'session_7' };
const at = (s: number) => `2026-03-01T10:00:${String(s).padStart(2, '0')}.000Z`;
const id = (n: number) => `3f1b6a52-8c4e-4c1a-9d3e-${String(n).padStart(12, '0')}`;

/** One valid event per type (schemas/examples/<type>.json): what an executor in any language sends. */
export const SCHEMA_EXAMPLES: Readonly<Record<PlanEventTypeName, PlanEvent>> = Object.freeze({
  'plan.created': {
    ...base,
    eventId: id(1),
    type: 'plan.created',
    seq: 0,
    occurredAt: at(0),
    payload: {
      query: 'Create a TODO app',
      requiresApproval: true,
      complexity: 3,
      steps: [
        { stepId: 'design', index: 0, agentId: 'architect', task: 'Design the data model', title: 'Data model' },
        {
          stepId: 'code',
          index: 1,
          agentId: 'coder',
          task: 'Write the API',
          dependsOn: ['design'],
          expectedOutput: 'code',
        },
      ],
    },
  },
  'plan.decision': {
    ...base,
    eventId: id(2),
    type: 'plan.decision',
    seq: 1,
    occurredAt: at(1),
    payload: { decision: 'approve', decidedBy: 'alice', feedback: 'Looks good' },
  },
  'step.started': {
    ...base,
    eventId: id(3),
    type: 'step.started',
    seq: 2,
    occurredAt: at(2),
    payload: { stepId: 'design' },
  },
  'step.completed': {
    ...base,
    eventId: id(4),
    type: 'step.completed',
    seq: 3,
    occurredAt: at(3),
    payload: {
      stepId: 'design',
      inputTokens: 1200,
      outputTokens: 300,
      model: 'gpt-4o',
      provider: 'openai',
      cacheReadTokens: 1024,
      result: 'done',
      outputContent: '# Model\n\nTodo(id, title, done)\n',
    },
  },
  'handoff.recorded': {
    ...base,
    eventId: id(5),
    type: 'handoff.recorded',
    seq: 4,
    occurredAt: at(4),
    payload: {
      handoffId: 'h1',
      stepId: 'code',
      fromAgentId: 'architect',
      toAgentId: 'coder',
      reason: 'design_done',
      explanation: 'The model is ready',
    },
  },
  'checkpoint.saved': {
    ...base,
    eventId: id(6),
    type: 'checkpoint.saved',
    seq: 5,
    occurredAt: at(5),
    payload: { checkpointId: 'layer-0', layer: 0, state: { outputs: { design: 'Todo(id, title, done)' } } },
  },
  'step.failed': {
    ...base,
    eventId: id(7),
    type: 'step.failed',
    seq: 6,
    occurredAt: at(6),
    payload: {
      stepId: 'code',
      error: 'compiler crashed',
      inputTokens: 800,
      outputTokens: 20,
      model: 'gpt-4o',
      reportedCost: '0.0022',
    },
  },
  'step.skipped': {
    ...base,
    eventId: id(8),
    type: 'step.skipped',
    seq: 7,
    occurredAt: at(7),
    payload: { stepId: 'code', reason: 'an earlier step failed' },
  },
  'plan.finalized': {
    ...base,
    eventId: id(9),
    type: 'plan.finalized',
    seq: 8,
    occurredAt: at(8),
    payload: { status: 'failed', failureReason: 'step code failed' },
  },
});
