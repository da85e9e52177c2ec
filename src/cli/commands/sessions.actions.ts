import { type CliContext, printJson } from '../cli-context';
import { getActivePlan, getPlanHistory, SessionActivePlan } from '../../queries/session-plans.query';
import { formatPlanHeader } from '../../queries/plan-timeline.format';
import { parseLimit, requireId } from '../../queries/query-args';
import { formatInt, renderTable } from '../../queries/text-output';
import { withReadSource } from './read-command';
import { openDeadLetterService } from '../../dead-letters/dead-letter-connections';
import { eraseSession, formatErasureReport } from '../../retention/session-erasure';
import { loadTransactionLimits } from '../../retention/retention-config';
import { withDataSource } from '../with-data-source';

export async function activeCommand(ctx: CliContext, rawId: string, opts: { json?: boolean }): Promise<void> {
  const sessionId = requireId('sessionId', rawId);
  const result = await withReadSource(ctx, 'sessions active', (ds) => getActivePlan(ds, sessionId));
  if (opts.json) return printJson(ctx, result);
  for (const line of formatActivePlan(result)) ctx.out(line);
}

export function formatActivePlan(result: SessionActivePlan): string[] {
  const plan = result.activePlan;
  if (!plan) return [`session ${result.sessionId} has no plan in progress`];
  const steps = plan.steps.map((s) => [s.index, s.stepId, s.agentId, s.status, s.title ?? '']);
  const others =
    result.otherActivePlanIds.length > 0 ? [`also in progress: ${result.otherActivePlanIds.join(', ')}`] : [];
  return [...formatPlanHeader(plan), ...others, '', ...renderTable(['#', 'STEP', 'AGENT', 'STATUS', 'TITLE'], steps)];
}

export async function historyCommand(
  ctx: CliContext,
  rawId: string,
  opts: { limit?: string; json?: boolean },
): Promise<void> {
  const { sessionId, limit } = {
    sessionId: requireId('sessionId', rawId),
    limit: parseLimit(opts.limit, 10),
  };
  const result = await withReadSource(ctx, 'sessions history', (ds) => getPlanHistory(ds, sessionId, limit));
  if (opts.json) return printJson(ctx, result);
  if (result.plans.length === 0) return ctx.out(`session ${sessionId} has no finished plans`);
  const rows = result.plans.map((p) => [
    p.planId,
    p.status,
    `${p.completedSteps}/${p.totalSteps}`,
    `${formatInt(p.inputTokens)}/${formatInt(p.outputTokens)}`,
    p.unpricedSteps > 0 ? `$${p.cost} + ${p.unpricedSteps} unpriced` : `$${p.cost}`,
    p.createdAt,
    p.completedAt,
    p.query,
  ]);
  const headers = ['PLAN', 'STATUS', 'DONE', 'TOKENS in/out', 'COST USD', 'CREATED', 'ENDED', 'QUERY'];
  for (const line of renderTable(headers, rows, 50)) ctx.out(line);
  const unpriced = result.unpricedSteps > 0 ? ` + ${result.unpricedSteps} steps unpriced` : '';
  ctx.out(`session cost: $${result.cost} USD${unpriced} (every plan of the session)`);
}

export async function purgeCommand(
  ctx: CliContext,
  rawId: string,
  opts: { dryRun?: boolean; includeForks?: boolean; json?: boolean },
): Promise<void> {
  const sessionId = requireId('sessionId', rawId);
  const limits = loadTransactionLimits(ctx.env);
  // Redis first: when it is unreachable, nothing is erased
  const redis = await openDeadLetterService(ctx.config, ctx.logger);
  try {
    const report = await withDataSource(ctx, (ds) =>
      eraseSession(ds, sessionId, {
        dryRun: opts.dryRun ?? false,
        includeForks: opts.includeForks ?? false,
        deadLetters: redis.service,
        logger: ctx.logger,
        ...limits,
      }),
    );
    if (opts.json) return printJson(ctx, report);
    for (const line of formatErasureReport(report)) ctx.out(line);
  } finally {
    await redis.close();
  }
}
