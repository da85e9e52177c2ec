import { displayMoney, moneyFromColumn, type CostSource } from '../pricing';
import type { ExecutionPlanRow, ForkKind, PlanStepRow } from '../store/entities';
import { durationMs, parseJson, toIso, toNum } from './row-normalize';

/**
 * The read side's view of stored rows: external ids instead of row ids, ISO-8601 UTC instants
 * with milliseconds, plain numbers, JSON columns parsed. No database-assigned value appears (row
 * uuids of handoffs, `updated_at`, `recorded_at`), so the same events read the same everywhere.
 */
export interface PlanSummary {
  planId: string;
  sessionId: string;
  query: string;
  status: ExecutionPlanRow['status'];
  approvalStatus: ExecutionPlanRow['approvalStatus'];
  requiresApproval: boolean;
  complexity: number | null;
  totalSteps: number;
  completedSteps: number;
  failedSteps: number;
  skippedSteps: number;
  inputTokens: number;
  outputTokens: number;
  /** What the plan's priced steps cost, in USD as an exact decimal string ("0.0215"). */
  cost: string;
  /** Steps that used tokens at no known price: `cost` leaves them out. */
  unpricedSteps: number;
  createdAt: string;
  completedAt: string | null;
  /** From creation to finalization; null while the plan runs. */
  durationMs: number | null;
  summary: string | null;
  failureReason: string | null;
  /**
   * Where a fork or replay came from (docs/fork-and-lineage.md#what-a-fork-is); null for a plan an
   * executor created.
   */
  forkOf: { planId: string; kind: ForkKind; layer: number; checkpointId: string | null } | null;
}

export function toPlanSummary(row: ExecutionPlanRow): PlanSummary {
  const createdAt = toIso(row.createdAt)!;
  const completedAt = toIso(row.completedAt);
  return {
    planId: row.id,
    sessionId: row.sessionId,
    query: row.query,
    status: row.status,
    approvalStatus: row.approvalStatus ?? null,
    requiresApproval: Boolean(row.requiresApproval),
    complexity: row.complexity === null || row.complexity === undefined ? null : toNum(row.complexity),
    totalSteps: toNum(row.totalSteps),
    completedSteps: toNum(row.completedSteps),
    failedSteps: toNum(row.failedSteps),
    skippedSteps: toNum(row.skippedSteps),
    inputTokens: toNum(row.totalInputTokens),
    outputTokens: toNum(row.totalOutputTokens),
    cost: displayMoney(moneyFromColumn(row.totalCost) ?? 0n),
    unpricedSteps: toNum(row.unpricedSteps ?? 0),
    createdAt,
    completedAt,
    durationMs: durationMs(createdAt, completedAt),
    summary: row.summary ?? null,
    failureReason: row.failureReason ?? null,
    forkOf: row.parentPlanId
      ? {
          planId: row.parentPlanId,
          kind: row.forkKind ?? 'fork',
          layer: toNum(row.forkLayer ?? 0),
          checkpointId: row.forkCheckpoint ?? null,
        }
      : null,
  };
}

export interface StepView {
  stepId: string;
  index: number;
  title: string | null;
  agentId: string;
  task: string;
  expectedOutput: string | null;
  dependsOn: string[];
  status: PlanStepRow['status'];
  model: string | null;
  /** The model's provider, as the step's event said. */
  provider: string | null;
  inputTokens: number;
  outputTokens: number;
  /** Parts of inputTokens: read from and written to the provider's prompt cache. */
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Part of outputTokens. */
  reasoningTokens: number;
  /** USD as an exact decimal string; null when unpriced or with nothing to price (see costSource). */
  cost: string | null;
  /** The provider's own cost (USD) the step's event carried; when set it is `cost` (costSource `reported`). */
  reportedCost: string | null;
  /**
   * For a step whose cost is the reported one: what the price table or an override gives for its
   * tokens, so the two can be compared (null when unpriced); null for every other step.
   */
  pricedCost: string | null;
  costSource: CostSource | null;
  /** The price used: `genai-prices@<version>:<provider>/<model>` or `override:<id>`. */
  priceRef: string | null;
  startedAt: string | null;
  completedAt: string | null;
  durationMs: number | null;
  result: string | null;
  error: string | null;
  /** Whether `steps output` has content to print for this step. */
  hasOutput: boolean;
  /** A fork's step it inherits as it ran there: the ancestor plan whose row it is; null for the plan's own. */
  inheritedFrom: string | null;
}

export function toStepView(row: PlanStepRow & { inheritedFrom?: string | null }): StepView {
  const startedAt = toIso(row.startedAt);
  const completedAt = toIso(row.completedAt);
  return {
    stepId: row.stepKey,
    index: toNum(row.stepIndex),
    title: row.title ?? null,
    agentId: row.agentId,
    task: row.task,
    expectedOutput: row.expectedOutput ?? null,
    dependsOn: parseJson<string[]>(row.dependsOn, []),
    status: row.status,
    model: row.model ?? null,
    provider: row.provider ?? null,
    inputTokens: toNum(row.inputTokens),
    outputTokens: toNum(row.outputTokens),
    cacheReadTokens: toNum(row.cacheReadTokens),
    cacheWriteTokens: toNum(row.cacheWriteTokens),
    reasoningTokens: toNum(row.reasoningTokens),
    cost: costText(row.cost),
    reportedCost: costText(row.reportedCost),
    pricedCost: null,
    costSource: row.costSource ?? null,
    priceRef: row.priceRef ?? null,
    startedAt,
    completedAt,
    durationMs: durationMs(startedAt, completedAt),
    result: row.result ?? null,
    error: row.error ?? null,
    hasOutput: Boolean(row.outputEventId) || (row.outputContent !== null && row.outputContent !== undefined),
    inheritedFrom: row.inheritedFrom ?? null,
  };
}

/** A cost column's value for a reader: an exact decimal string without trailing zeros past the cents. */
export function costText(value: unknown): string | null {
  const units = moneyFromColumn(value);
  return units === null ? null : displayMoney(units);
}
