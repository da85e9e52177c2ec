/**
 * The Vercel AI SDK's own telemetry (`experimental_telemetry`): `ai.operationId` says what a span
 * is. A generate/stream call is an agent (named by its `functionId`), its provider calls are LLM
 * calls, `ai.toolCall` a tool. Its spans also carry GenAI usage attributes, which the GenAI
 * convention reads; a span that the GenAI conventions or OpenInference mark is theirs.
 */
import type { OtlpSpan } from '../otlp-span';
import { SpanConvention, SpanRole, str } from './convention';

export const AI_SDK = Object.freeze({
  operationId: 'ai.operationId',
  functionId: 'ai.telemetry.functionId',
  sessionId: 'ai.telemetry.metadata.sessionId',
  prompt: 'ai.prompt',
  responseText: 'ai.response.text',
  toolCallName: 'ai.toolCall.name',
  toolCallResult: 'ai.toolCall.result',
});

const AGENT_OPERATION = /^ai\.(generateText|streamText|generateObject|streamObject)$/;
const LLM_OPERATION = /^ai\.(generateText|streamText|generateObject|streamObject)\.(doGenerate|doStream)$/;
const TOOL_OPERATION = 'ai.toolCall';

export const aiSdkConvention: SpanConvention = {
  name: 'Vercel AI SDK',
  defer: true,
  marks: (span) => str(span.attributes[AI_SDK.operationId]) !== undefined,
  role(span: OtlpSpan): SpanRole | undefined {
    const op = str(span.attributes[AI_SDK.operationId]);
    if (op === undefined) return undefined;
    if (LLM_OPERATION.test(op)) return 'llm';
    if (op === TOOL_OPERATION) return 'tool';
    if (AGENT_OPERATION.test(op)) return 'agent';
    return undefined;
  },
  agentName: (span) => str(span.attributes[AI_SDK.functionId]),
  workflowName: () => undefined,
  sessionId: (span) => str(span.attributes[AI_SDK.sessionId]),
  usage: () => ({}),
  input: (span) => str(span.attributes[AI_SDK.prompt]),
  output: (span) => str(span.attributes[AI_SDK.responseText]) ?? str(span.attributes[AI_SDK.toolCallResult]),
  tool: (span) => str(span.attributes[AI_SDK.toolCallName]),
  handoff: () => undefined,
};
