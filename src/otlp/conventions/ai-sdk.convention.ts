/**
 * The Vercel AI SDK's own telemetry (`experimental_telemetry`): `ai.operationId` says what a span
 * is. A generate/stream call is an agent (named by its `functionId`), its provider calls are LLM
 * calls, `ai.toolCall` a tool. Its spans also carry GenAI usage attributes, which the GenAI
 * convention reads; a span that the GenAI conventions or OpenInference mark is theirs.
 */
import type { OtlpSpan } from '../otlp-span';
import { first, normaliseTokens, SpanConvention, SpanRole, SpanUsage, str, tokens } from './convention';
import { GENAI, genAiUsage } from './genai.convention';

export const AI_SDK = Object.freeze({
  operationId: 'ai.operationId',
  functionId: 'ai.telemetry.functionId',
  sessionId: 'ai.telemetry.metadata.sessionId',
  prompt: 'ai.prompt',
  responseText: 'ai.response.text',
  toolCallName: 'ai.toolCall.name',
  toolCallResult: 'ai.toolCall.result',
  inputTokens: 'ai.usage.inputTokens',
  outputTokens: 'ai.usage.outputTokens',
  /** AI SDK 4's names of the two above. */
  promptTokens: 'ai.usage.promptTokens',
  completionTokens: 'ai.usage.completionTokens',
  cachedInputTokens: 'ai.usage.cachedInputTokens',
  reasoningTokens: 'ai.usage.reasoningTokens',
  /** `<provider>.<api>`, e.g. `openai.chat`, `anthropic.messages`. */
  modelProvider: 'ai.model.provider',
  modelId: 'ai.model.id',
  /** The provider's own extra answer as JSON, e.g. Anthropic's usage with its cache counts. */
  providerMetadata: 'ai.response.providerMetadata',
});

const INPUT_TOKENS_KEYS = [AI_SDK.inputTokens, AI_SDK.promptTokens, GENAI.inputTokens, GENAI.promptTokens];
const OUTPUT_TOKENS_KEYS = [AI_SDK.outputTokens, AI_SDK.completionTokens, GENAI.outputTokens, GENAI.completionTokens];
const CACHED_INPUT_TOKENS_KEYS = [AI_SDK.cachedInputTokens];
const REASONING_TOKENS_KEYS = [AI_SDK.reasoningTokens];
const MODEL_KEYS = [GENAI.responseModel, GENAI.requestModel, AI_SDK.modelId];
/**
 * Providers whose AI SDK input count leaves out the cache: the SDK passes on the provider's own
 * count, and Anthropic's `input_tokens` excludes cache reads and writes.
 */
const INPUT_WITHOUT_CACHE = new Set(['anthropic', 'amazon-bedrock', 'google-vertex-anthropic']);

const AGENT_OPERATION = /^ai\.(generateText|streamText|generateObject|streamObject)$/;
const LLM_OPERATION = /^ai\.(generateText|streamText|generateObject|streamObject)\.(doGenerate|doStream)$/;
const TOOL_OPERATION = 'ai.toolCall';

/** A count in a JSON object at `path`, when it holds one. */
function countAt(json: unknown, path: readonly string[]): number | undefined {
  let at = json;
  for (const key of path) at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined;
  return typeof at === 'number' && Number.isInteger(at) && at >= 0 ? at : undefined;
}

/**
 * Cache counts the AI SDK leaves out of its usage attributes but keeps in the provider's metadata:
 * Anthropic's `usage.cache_read_input_tokens` and `cache_creation_input_tokens` (AI SDK 5 records
 * no `ai.usage.cachedInputTokens` and never a cache write), OpenAI's `cachedPromptTokens` (AI SDK 4).
 */
function metadataCache(span: OtlpSpan): { cacheRead?: number; cacheWrite?: number } {
  const text = str(span.attributes[AI_SDK.providerMetadata]);
  if (text === undefined) return {};
  let meta: unknown;
  try {
    meta = JSON.parse(text);
  } catch {
    return {};
  }
  return {
    cacheRead:
      countAt(meta, ['anthropic', 'usage', 'cache_read_input_tokens']) ??
      countAt(meta, ['openai', 'cachedPromptTokens']),
    cacheWrite:
      countAt(meta, ['anthropic', 'usage', 'cache_creation_input_tokens']) ??
      countAt(meta, ['anthropic', 'cacheCreationInputTokens']),
  };
}

/** Usage by the AI SDK's own attributes (its GenAI ones as a fallback), input meaning as the provider's. */
function aiSdkUsage(span: OtlpSpan): SpanUsage {
  const a = span.attributes;
  const provider = str(a[AI_SDK.modelProvider])?.split('.')[0]?.toLowerCase();
  const fromMetadata = metadataCache(span);
  const counts = normaliseTokens(
    {
      input: tokens(a, INPUT_TOKENS_KEYS),
      output: tokens(a, OUTPUT_TOKENS_KEYS),
      cacheRead: tokens(a, CACHED_INPUT_TOKENS_KEYS) ?? fromMetadata.cacheRead,
      cacheWrite: fromMetadata.cacheWrite,
      reasoning: tokens(a, REASONING_TOKENS_KEYS),
    },
    provider === undefined || !INPUT_WITHOUT_CACHE.has(provider),
  );
  if (counts.input === undefined && counts.output === undefined) return genAiUsage(span);
  const model = first(a, MODEL_KEYS);
  return { ...counts, ...(model ? { model } : {}), ...(provider ? { provider } : {}) };
}

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
  usage: aiSdkUsage,
  input: (span) => str(span.attributes[AI_SDK.prompt]),
  output: (span) => str(span.attributes[AI_SDK.responseText]) ?? str(span.attributes[AI_SDK.toolCallResult]),
  tool: (span) => str(span.attributes[AI_SDK.toolCallName]),
  handoff: () => undefined,
  handoffTo: () => undefined,
  nodeId: () => undefined,
};
