/**
 * OpenLLMetry (Traceloop's SDKs and instrumentations): `traceloop.span.kind` (workflow, task,
 * agent, tool) says what a framework span is and `traceloop.entity.name` names it; the model calls
 * under them carry the GenAI usage attributes, which the GenAI convention reads. A task is a unit
 * of work: a step when it runs right under the workflow, like a graph node.
 */
import type { OtlpSpan } from '../otlp-span';
import { first, SpanConvention, SpanRole, str } from './convention';

export const OPENLLMETRY = Object.freeze({
  spanKind: 'traceloop.span.kind',
  entityName: 'traceloop.entity.name',
  entityInput: 'traceloop.entity.input',
  entityOutput: 'traceloop.entity.output',
  workflowName: 'traceloop.workflow.name',
  /** Association properties the application sets (`Traceloop.withAssociationProperties`): a session or conversation. */
  sessionIds: [
    'traceloop.association.properties.session_id',
    'traceloop.association.properties.sessionId',
    'traceloop.association.properties.conversation_id',
    'traceloop.association.properties.thread_id',
  ],
});

/** `traceloop.span.kind` values, by the role they give a span. */
const KINDS: Record<string, SpanRole> = {
  workflow: 'plan',
  agent: 'agent',
  tool: 'tool',
  task: 'chain',
};

const kindOf = (span: OtlpSpan) => str(span.attributes[OPENLLMETRY.spanKind])?.toLowerCase();

export const openLlmetryConvention: SpanConvention = {
  name: 'OpenLLMetry',
  marks: (span) => kindOf(span) !== undefined,
  role: (span) => KINDS[kindOf(span) ?? ''],
  agentName: (span) => (kindOf(span) === 'tool' ? undefined : str(span.attributes[OPENLLMETRY.entityName])),
  workflowName: (span) => str(span.attributes[OPENLLMETRY.workflowName]),
  sessionId: (span) => first(span.attributes, OPENLLMETRY.sessionIds),
  usage: () => ({}),
  input: (span) => str(span.attributes[OPENLLMETRY.entityInput]),
  output: (span) => str(span.attributes[OPENLLMETRY.entityOutput]),
  tool: (span) => (kindOf(span) === 'tool' ? str(span.attributes[OPENLLMETRY.entityName]) : undefined),
  handoff: () => undefined,
  handoffTo: () => undefined,
  nodeId: () => undefined,
};
