/**
 * OpenInference (Arize Phoenix's conventions, used by its LangChain, LlamaIndex, OpenAI and other
 * instrumentations): `openinference.span.kind` says what a span is.
 */
import type { OtlpSpan } from '../otlp-span';
import { first, SpanConvention, SpanRole, SpanUsage, str, tokens } from './convention';

export const OPENINFERENCE = Object.freeze({
  spanKind: 'openinference.span.kind',
  agentName: 'agent.name',
  sessionId: 'session.id',
  modelName: 'llm.model_name',
  promptTokens: 'llm.token_count.prompt',
  completionTokens: 'llm.token_count.completion',
  inputValue: 'input.value',
  outputValue: 'output.value',
  toolName: 'tool.name',
});

/** `openinference.span.kind` values (upper-cased), by the role they give a span. */
const KINDS: Record<string, SpanRole> = {
  AGENT: 'agent',
  TOOL: 'tool',
  LLM: 'llm',
  EMBEDDING: 'llm',
  CHAIN: 'chain',
};

export const openInferenceConvention: SpanConvention = {
  name: 'OpenInference',
  marks: (span) => str(span.attributes[OPENINFERENCE.spanKind]) !== undefined,
  role: (span: OtlpSpan) => KINDS[str(span.attributes[OPENINFERENCE.spanKind])?.toUpperCase() ?? ''],
  agentName: (span) => str(span.attributes[OPENINFERENCE.agentName]),
  workflowName: () => undefined,
  sessionId: (span) => str(span.attributes[OPENINFERENCE.sessionId]),
  usage(span: OtlpSpan): SpanUsage {
    const a = span.attributes;
    return {
      input: tokens(a, [OPENINFERENCE.promptTokens]),
      output: tokens(a, [OPENINFERENCE.completionTokens]),
      model: first(a, [OPENINFERENCE.modelName]),
    };
  },
  input: (span) => str(span.attributes[OPENINFERENCE.inputValue]),
  output: (span) => str(span.attributes[OPENINFERENCE.outputValue]),
  tool: (span) => str(span.attributes[OPENINFERENCE.toolName]),
  handoff: () => undefined,
};
