/**
 * OpenInference (Arize Phoenix's conventions, used by its LangChain, LlamaIndex, OpenAI and other
 * instrumentations): `openinference.span.kind` says what a span is.
 */
import type { OtlpSpan } from '../otlp-span';
import { first, normaliseTokens, SpanConvention, SpanRole, SpanUsage, str, tokens, usdOf } from './convention';

export const OPENINFERENCE = Object.freeze({
  spanKind: 'openinference.span.kind',
  agentName: 'agent.name',
  sessionId: 'session.id',
  modelName: 'llm.model_name',
  promptTokens: 'llm.token_count.prompt',
  completionTokens: 'llm.token_count.completion',
  /** Parts of the prompt tokens. */
  cacheReadTokens: 'llm.token_count.prompt_details.cache_read',
  cacheWriteTokens: 'llm.token_count.prompt_details.cache_write',
  /** An older name of cache_read. */
  cacheInputTokens: 'llm.token_count.prompt_details.cache_input',
  /** Part of the completion tokens. */
  reasoningTokens: 'llm.token_count.completion_details.reasoning',
  provider: 'llm.provider',
  system: 'llm.system',
  /** The call's cost in USD, as the instrumentation computed it. */
  costTotal: 'llm.cost.total',
  inputValue: 'input.value',
  outputValue: 'output.value',
  toolName: 'tool.name',
  /** The span's node in the agent graph (the OpenAI Agents SDK's instrumentation: the agent's name). */
  graphNodeId: 'graph.node.id',
  /** The node that handed control to this one. */
  graphNodeParentId: 'graph.node.parent_id',
});

/**
 * The name the OpenAI Agents SDK's instrumentation gives a handoff's span (a TOOL span under the
 * agent handing off), the agent handed to after it.
 */
const HANDOFF_SPAN_NAME = /^handoff to (.+)$/s;

const PROMPT_TOKENS_KEYS = [OPENINFERENCE.promptTokens];
const COMPLETION_TOKENS_KEYS = [OPENINFERENCE.completionTokens];
const CACHE_READ_TOKENS_KEYS = [OPENINFERENCE.cacheReadTokens, OPENINFERENCE.cacheInputTokens];
const CACHE_WRITE_TOKENS_KEYS = [OPENINFERENCE.cacheWriteTokens];
const REASONING_TOKENS_KEYS = [OPENINFERENCE.reasoningTokens];
const MODEL_NAME_KEYS = [OPENINFERENCE.modelName];
const PROVIDER_KEYS = [OPENINFERENCE.provider, OPENINFERENCE.system];
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
    // OpenInference's prompt count includes its prompt_details (cache reads and writes)
    const counts = normaliseTokens(
      {
        input: tokens(a, PROMPT_TOKENS_KEYS),
        output: tokens(a, COMPLETION_TOKENS_KEYS),
        cacheRead: tokens(a, CACHE_READ_TOKENS_KEYS),
        cacheWrite: tokens(a, CACHE_WRITE_TOKENS_KEYS),
        reasoning: tokens(a, REASONING_TOKENS_KEYS),
      },
      true,
    );
    const model = first(a, MODEL_NAME_KEYS);
    const provider = first(a, PROVIDER_KEYS)?.toLowerCase();
    const reportedCost = usdOf(a[OPENINFERENCE.costTotal]);
    return {
      ...counts,
      ...(model ? { model } : {}),
      ...(provider ? { provider } : {}),
      ...(reportedCost !== undefined ? { reportedCost } : {}),
    };
  },
  input: (span) => str(span.attributes[OPENINFERENCE.inputValue]),
  output: (span) => str(span.attributes[OPENINFERENCE.outputValue]),
  tool: (span) => str(span.attributes[OPENINFERENCE.toolName]),
  handoff(span) {
    const from = str(span.attributes[OPENINFERENCE.graphNodeParentId]);
    return from === undefined ? undefined : { from, reason: 'handoff', fromNode: true };
  },
  handoffTo(span) {
    if (str(span.attributes[OPENINFERENCE.spanKind])?.toUpperCase() !== 'TOOL') return undefined;
    return HANDOFF_SPAN_NAME.exec(span.name)?.[1]?.trim() || undefined;
  },
  nodeId: (span) => str(span.attributes[OPENINFERENCE.graphNodeId]),
};
