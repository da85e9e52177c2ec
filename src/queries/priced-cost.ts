import type { DataSource } from 'typeorm';
import { displayMoney, priceStep } from '../pricing';
import { listPriceOverrides, toPriceOverride } from '../store/price-overrides';
import type { StepView } from './plan-rows';

/**
 * Fills `pricedCost` of the steps whose cost is the provider's reported one: what the overrides or
 * the bundled price table give for the same tokens at the step's time (its completion, as the
 * worker priced it), so a reader sees both when they differ. Reads the overrides only when a step
 * has a reported cost.
 */
export async function addPricedCosts(ds: DataSource, steps: StepView[]): Promise<void> {
  const reported = steps.filter((s) => s.reportedCost !== null && (s.completedAt ?? s.startedAt) !== null);
  if (reported.length === 0) return;
  const overrides = (await listPriceOverrides(ds)).map(toPriceOverride);
  for (const view of reported) {
    const { model, provider, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, reasoningTokens } = view;
    const usage = { model, provider, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, reasoningTokens };
    const priced = priceStep(
      { ...usage, reportedCost: null },
      new Date((view.completedAt ?? view.startedAt)!),
      overrides,
    );
    view.pricedCost = priced.cost === null ? null : displayMoney(priced.cost);
  }
}
