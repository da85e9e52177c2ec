/**
 * The OpenTelemetry semantic conventions for generative AI (`gen_ai.*`), current and deprecated
 * attribute names: `gen_ai.operation.name` says what a span is.
 */
import type { OtlpSpan } from '../otlp-span';
import { eventText, first, normaliseTokens, SpanConvention, SpanRole, SpanUsage, str, tokens } from './convention';

export const GENAI = Object.freeze({
  operationName: 'gen_ai.operation.name',
  agentName: 'gen_ai.agent.name',
  workflowName: 'gen_ai.workflow.name',
  conversationId: 'gen_ai.conversation.id',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  /** Deprecated names of the two above. */
  promptTokens: 'gen_ai.usage.prompt_tokens',
  completionTokens: 'gen_ai.usage.completion_tokens',
  /** Parts of the input tokens: read from and written to the provider's prompt cache. */
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheWriteTokens: 'gen_ai.usage.cache_creation.input_tokens',
  /** Deprecated names of the two above. */
  cacheReadTokensOld: 'gen_ai.usage.cache_read_input_tokens',
  cacheWriteTokensOld: 'gen_ai.usage.cache_creation_input_tokens',
  /** The name `@anthropic-ai/sdk`'s own OpenTelemetry tracing gives the cache write. */
  cacheWriteTokensSdk: 'gen_ai.usage.cache_write.input_tokens',
  /** Part of the output tokens. */
  reasoningTokens: 'gen_ai.usage.reasoning.output_tokens',
  /** OpenLLMetry's name for the one above. */
  reasoningTokensOld: 'gen_ai.usage.reasoning_tokens',
  providerName: 'gen_ai.provider.name',
  /** Deprecated name of the provider. */
  system: 'gen_ai.system',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  /** Deprecated: the prompt and completion as attributes, or as events of these names. */
  prompt: 'gen_ai.prompt',
  completion: 'gen_ai.completion',
  promptEvent: 'gen_ai.content.prompt',
  completionEvent: 'gen_ai.content.completion',
  toolName: 'gen_ai.tool.name',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
});

const INPUT_TOKENS_KEYS = [GENAI.inputTokens, GENAI.promptTokens];
const OUTPUT_TOKENS_KEYS = [GENAI.outputTokens, GENAI.completionTokens];
const CACHE_READ_TOKENS_KEYS = [GENAI.cacheReadTokens, GENAI.cacheReadTokensOld];
const CACHE_WRITE_TOKENS_KEYS = [GENAI.cacheWriteTokens, GENAI.cacheWriteTokensOld, GENAI.cacheWriteTokensSdk];
const REASONING_TOKENS_KEYS = [GENAI.reasoningTokens, GENAI.reasoningTokensOld];
const RESPONSE_MODEL_KEYS = [GENAI.responseModel, GENAI.requestModel];
/**
 * Instrumentation scopes whose `gen_ai.usage.input_tokens` is the provider's own count where that
 * leaves the cache out: OpenLLMetry's Anthropic instrumentation passes on Anthropic's
 * `input_tokens`, which excludes cache reads and writes.
 */
const SCOPES_INPUT_WITHOUT_CACHE = new Set(['@traceloop/instrumentation-anthropic']);
/** `gen_ai.operation.name` values, by the role they give a span. */
const OPERATIONS: Record<Exclude<SpanRole, 'chain' | 'none'>, ReadonlySet<string>> = {
  plan: new Set(['invoke_workflow', 'workflow', 'create_plan', 'plan']),
  agent: new Set(['invoke_agent']),
  tool: new Set(['execute_tool']),
  llm: new Set(['chat', 'text_completion', 'generate_content', 'embeddings']),
};

/** The provider a span names (`gen_ai.provider.name`, formerly `gen_ai.system`), lower-cased. */
export function genAiProvider(span: OtlpSpan): string | undefined {
  const name = first(span.attributes, [GENAI.providerName, GENAI.system])?.toLowerCase();
  // the conventions' `x_ai` is the price table's `x-ai`; its other names the table matches itself
  return name === 'x_ai' ? 'x-ai' : name;
}

/**
 * Usage by the GenAI conventions, whose input count includes the cache reads and writes ("SHOULD
 * include all types of input tokens, including cached tokens"), whatever the provider, except from
 * the instrumentations of SCOPES_INPUT_WITHOUT_CACHE.
 */
export function genAiUsage(span: OtlpSpan): SpanUsage {
  const a = span.attributes;
  const counts = normaliseTokens(
    {
      input: tokens(a, INPUT_TOKENS_KEYS),
      output: tokens(a, OUTPUT_TOKENS_KEYS),
      cacheRead: tokens(a, CACHE_READ_TOKENS_KEYS),
      cacheWrite: tokens(a, CACHE_WRITE_TOKENS_KEYS),
      reasoning: tokens(a, REASONING_TOKENS_KEYS),
    },
    span.scope === undefined || !SCOPES_INPUT_WITHOUT_CACHE.has(span.scope),
  );
  const model = first(a, RESPONSE_MODEL_KEYS);
  const provider = genAiProvider(span);
  if (model) counts.model = model;
  if (provider) counts.provider = provider;
  return counts;
}

export const genAiConvention: SpanConvention = {
  name: 'OpenTelemetry GenAI',
  marks: (span) => str(span.attributes[GENAI.operationName]) !== undefined,
  role(span: OtlpSpan): SpanRole | undefined {
    const op = str(span.attributes[GENAI.operationName]);
    if ((op && OPERATIONS.plan.has(op)) || span.attributes[GENAI.workflowName] !== undefined) return 'plan';
    if (op === undefined) return undefined;
    for (const role of ['agent', 'tool', 'llm'] as const) if (OPERATIONS[role].has(op)) return role;
    return undefined;
  },
  agentName: (span) => str(span.attributes[GENAI.agentName]),
  workflowName: (span) => str(span.attributes[GENAI.workflowName]),
  sessionId: (span) => str(span.attributes[GENAI.conversationId]),
  usage: genAiUsage,
  input: (span) =>
    first(span.attributes, [GENAI.inputMessages, GENAI.prompt, GENAI.toolArguments]) ??
    eventText(span, GENAI.promptEvent, GENAI.prompt),
  output: (span) =>
    first(span.attributes, [GENAI.outputMessages, GENAI.completion, GENAI.toolResult]) ??
    eventText(span, GENAI.completionEvent, GENAI.completion),
  tool: (span) => str(span.attributes[GENAI.toolName]),
  handoff: () => undefined,
  handoffTo: () => undefined,
  nodeId: () => undefined,
};
