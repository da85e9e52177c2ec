import { InitialSchema1795219200000 } from './1795219200000-initial-schema';
import { IndexHandoffStep1795219300000 } from './1795219300000-index-handoff-step';
import { IncrementalStore1795219400000 } from './1795219400000-incremental-store';
import { DatabasesAlike1795219500000 } from './1795219500000-databases-alike';
import { PlanRestoredAt1795219600000 } from './1795219600000-plan-restored-at';
import { StepCost1795219700000 } from './1795219700000-step-cost';
import { PriceOverrides1795219800000 } from './1795219800000-price-overrides';
import { PlanLineage1795219900000 } from './1795219900000-plan-lineage';
import { IdentifierCollations1795220000000 } from './1795220000000-identifier-collations';
import { PlanList1795221000000 } from './1795221000000-plan-list';
import { AnalyticsRollups1795224400000 } from './1795224400000-analytics-rollups';
import { RollupSessionTokens1795224800000 } from './1795224800000-rollup-session-tokens';
import { Webhooks1795225000000 } from './1795225000000-webhooks';
import { Approvals1795225100000 } from './1795225100000-approvals';
import { OutputsStoredOnce1795225200000 } from './1795225200000-outputs-stored-once';
import { StalledPlans1795226450000 } from './1795226450000-stalled-plans';
import { ApprovalExpired1795227060000 } from './1795227060000-approval-expired';
import { ReportedCostSteps1795227080000 } from './1795227080000-reported-cost-steps';
import { HandoffRollups1795227090000 } from './1795227090000-handoff-rollups';
import { TokenPages1795227120000 } from './1795227120000-token-pages';
import { ExactPlanAgents1795227130000 } from './1795227130000-exact-plan-agents';
import { SessionTotalRollups1795227140000 } from './1795227140000-session-total-rollups';
import { PlanStepParts1795227141000 } from './1795227141000-plan-step-parts';
import { StoredTokenTotals1795227170000 } from './1795227170000-stored-token-totals';
import { StallCheckTimes1795227200000 } from './1795227200000-stall-check-times';
import { RollupHotUpdates1795227210000 } from './1795227210000-rollup-hot-updates';
import { HotPlanStepUpdates1795227220000 } from './1795227220000-hot-plan-step-updates';

/** Every migration, oldest first. A new migration is appended here, never edited in place. */
export const MIGRATIONS = [
  InitialSchema1795219200000,
  IndexHandoffStep1795219300000,
  IncrementalStore1795219400000,
  DatabasesAlike1795219500000,
  PlanRestoredAt1795219600000,
  StepCost1795219700000,
  PriceOverrides1795219800000,
  PlanLineage1795219900000,
  IdentifierCollations1795220000000,
  PlanList1795221000000,
  AnalyticsRollups1795224400000,
  RollupSessionTokens1795224800000,
  Webhooks1795225000000,
  Approvals1795225100000,
  OutputsStoredOnce1795225200000,
  StalledPlans1795226450000,
  ApprovalExpired1795227060000,
  ReportedCostSteps1795227080000,
  HandoffRollups1795227090000,
  TokenPages1795227120000,
  ExactPlanAgents1795227130000,
  SessionTotalRollups1795227140000,
  PlanStepParts1795227141000,
  StoredTokenTotals1795227170000,
  StallCheckTimes1795227200000,
  RollupHotUpdates1795227210000,
  HotPlanStepUpdates1795227220000,
];
