import { bigint, defineEntity, ext, label, moneyTotal, str, uuid } from './define-entity';

/**
 * What a rollup row sums: a plan (`plan`), a step (`step`), a step's cost per session
 * (`session-cost`), or a step's cache and reasoning tokens per session (`session-tokens`).
 */
export const ROLLUP_KINDS = ['plan', 'step', 'session-cost', 'session-tokens', 'session-total', 'handoff'] as const;
export type RollupKind = (typeof ROLLUP_KINDS)[number];

/**
 * `analytics_rollups`: the analytics' sums per UTC day of the plans' creation and per key, kept
 * by every writer of plans in the transaction that changes the rows they sum (docs/store.md,
 * "Analytics rollups"). Rows of soft-deleted plans and steps are not in them. The id is derived
 * from the kind, the day and the key (rollup-rows.ts), so two keys that differ only in case or
 * trailing spaces stay two rows on every database. A row whose sums came back to zero stays.
 *
 * - `plan`: one per day, session and plan status: plans, and their token totals;
 * - `step`: one per day, agent, model and step status: steps, their tokens and costs;
 * - `session-cost`: one per day and session: the costs of its plans' steps;
 * - `session-tokens`: one per day and session: the cache read, cache write and reasoning tokens of
 *   its plans' steps (the tokens report per session);
 * - `session-total`: one per session, of every day (`day` 0000-00-00): its plans and their token
 *   totals, as its `plan` rows summed over all days and statuses (the tokens report's session page
 *   reads the largest first, IX_analytics_rollups_total);
 * - `handoff`: one per day, from-agent, to-agent and reason: the handoffs of its plans in `items`
 *   (the from-agent in `agent_id`, the to-agent in `model`, the reason in `session_id`, the one
 *   column of the table as wide as a reason).
 */
export interface AnalyticsRollupRow {
  id: string;
  /** UTC day of the plans' `created_at`, `YYYY-MM-DD` (`session-total` rows: 0000-00-00, all days). */
  day: string;
  kind: RollupKind;
  /** `plan`, `session-cost`, `session-tokens` and `session-total` rows; `handoff` rows: the reason; null otherwise. */
  sessionId: string | null;
  /** `step` rows; `handoff` rows: the from-agent; null otherwise. */
  agentId: string | null;
  /** `step` rows: the steps' model (null for steps that named none); `handoff` rows: the to-agent. */
  model: string | null;
  /** `plan` rows: the plan status; `step` rows: the step status; null otherwise. */
  status: string | null;
  /** Plans (`plan`, `session-total`), steps (`step`) or handoffs (`handoff`) summed. */
  items: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  /** Steps with input or output tokens. */
  tokenSteps: number;
  /** Steps with a cost source (priced, reported, override or unpriced). */
  costedSteps: number;
  /** Of those, steps with a cost. */
  pricedSteps: number;
  /** Of those, steps that used tokens at no known price. */
  unpricedSteps: number;
  /** Sum of the priced steps' costs (USD, 12 decimals). */
  cost: string;
}

export const AnalyticsRollupEntity = defineEntity<AnalyticsRollupRow>('AnalyticsRollup', 'analytics_rollups', {
  id: uuid('id', { primary: true }),
  day: label('day', 10),
  kind: label('kind', 20),
  sessionId: ext('session_id', { nullable: true }),
  agentId: str('agent_id', 100, true),
  model: str('model', 100, true),
  status: label('status', 20, true),
  items: bigint('items'),
  inputTokens: bigint('input_tokens'),
  outputTokens: bigint('output_tokens'),
  cacheReadTokens: bigint('cache_read_tokens'),
  cacheWriteTokens: bigint('cache_write_tokens'),
  reasoningTokens: bigint('reasoning_tokens'),
  tokenSteps: bigint('token_steps'),
  costedSteps: bigint('costed_steps'),
  pricedSteps: bigint('priced_steps'),
  unpricedSteps: bigint('unpriced_steps'),
  cost: moneyTotal('cost'),
});
