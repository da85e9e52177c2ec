import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { getActivePlan, getPlanHistory, SessionActivePlan } from '../../queries/session-plans.query';
import { formatPlanHeader } from '../../queries/plan-timeline.format';
import { parseLimit, requireId } from '../../queries/query-args';
import { formatInt, renderTable } from '../../queries/text-output';
import { parseArgs, printJson, withReadSource } from './read-command';
import { openDeadLetterService } from '../../dead-letters/dead-letter-connections';
import { eraseSession, formatErasureReport } from '../../retention/session-erasure';
import { withDataSource } from '../with-data-source';

/** `sessions active|history`: what a chat application restores after a restart (seed 001). */
export function registerSessions(program: Command, context: () => CliContext): Command {
  const sessions = program.command('sessions').description("a session's plan in progress and its finished plans (restore after a restart)");

  sessions
    .command('active')
    .description("the session's plan still planning or executing, with its steps")
    .argument('<sessionId>', "the executor's session id")
    .option('--json', 'print { sessionId, activePlan, otherActivePlanIds } as JSON (activePlan null when none)')
    .addHelpText('after', '\nExit code 0 with "no plan in progress" when the session exists but has none.')
    .action(async (sessionId: string, opts: { json?: boolean }) => activeCommand(context(), sessionId, opts));

  sessions
    .command('history')
    .description("the session's finished plans (completed, failed, cancelled), newest first")
    .argument('<sessionId>', "the executor's session id")
    .option('--limit <n>', 'how many plans, 1-1000 (default: 10, as seed 001 keeps)')
    .option('--json', 'print { sessionId, plans } as JSON')
    .action(async (sessionId: string, opts: { limit?: string; json?: boolean }) => historyCommand(context(), sessionId, opts));

  sessions
    .command('purge')
    .description('erase a session for good: every row of its plans (any status, soft-deleted too), its session row, its dead letters in Redis')
    .argument('<sessionId>', "the executor's session id")
    .option('--dry-run', 'count what would be removed; change nothing')
    .option('--json', 'print { sessionId, dryRun, plans, tables, deadLetters, durationMs } as JSON')
    .addHelpText('after', '\nNo undo (unlike retention\'s soft delete). Needs the database and Redis (REDIS_URL, QUEUE_PREFIX).\nExit code 1 with one line when neither knows the session.\n\nExamples:\n  plan-ledger sessions purge sess-42 --dry-run\n  plan-ledger sessions purge sess-42 --json')
    .action(async (sessionId: string, opts: { dryRun?: boolean; json?: boolean }) => purgeCommand(context(), sessionId, opts));

  return sessions;
}

export async function purgeCommand(ctx: CliContext, rawId: string, opts: { dryRun?: boolean; json?: boolean }): Promise<void> {
  const sessionId = parseArgs(() => requireId('sessionId', rawId));
  // Redis first: when it is unreachable, nothing is erased
  const redis = await openDeadLetterService(ctx.config, ctx.logger);
  try {
    const report = await withDataSource(ctx, (ds) => eraseSession(ds, sessionId, { dryRun: opts.dryRun ?? false, deadLetters: redis.service, logger: ctx.logger }));
    if (opts.json) return printJson(ctx, report);
    for (const line of formatErasureReport(report)) ctx.out(line);
  } finally {
    await redis.close();
  }
}

export async function activeCommand(ctx: CliContext, rawId: string, opts: { json?: boolean }): Promise<void> {
  const sessionId = parseArgs(() => requireId('sessionId', rawId));
  const result = await withReadSource(ctx, 'sessions active', (ds) => getActivePlan(ds, sessionId));
  if (opts.json) return printJson(ctx, result);
  for (const line of formatActivePlan(result)) ctx.out(line);
}

export function formatActivePlan(result: SessionActivePlan): string[] {
  const plan = result.activePlan;
  if (!plan) return [`session ${result.sessionId} has no plan in progress`];
  const steps = plan.steps.map((s) => [s.index, s.stepId, s.agentId, s.status, s.title ?? '']);
  const others = result.otherActivePlanIds.length > 0 ? [`also in progress: ${result.otherActivePlanIds.join(', ')}`] : [];
  return [...formatPlanHeader(plan), ...others, '', ...renderTable(['#', 'STEP', 'AGENT', 'STATUS', 'TITLE'], steps)];
}

export async function historyCommand(ctx: CliContext, rawId: string, opts: { limit?: string; json?: boolean }): Promise<void> {
  const { sessionId, limit } = parseArgs(() => ({ sessionId: requireId('sessionId', rawId), limit: parseLimit(opts.limit, 10) }));
  const result = await withReadSource(ctx, 'sessions history', (ds) => getPlanHistory(ds, sessionId, limit));
  if (opts.json) return printJson(ctx, result);
  if (result.plans.length === 0) return ctx.out(`session ${sessionId} has no finished plans`);
  const rows = result.plans.map((p) => [p.planId, p.status, `${p.completedSteps}/${p.totalSteps}`, `${formatInt(p.inputTokens)}/${formatInt(p.outputTokens)}`, p.createdAt, p.completedAt, p.query]);
  for (const line of renderTable(['PLAN', 'STATUS', 'DONE', 'TOKENS in/out', 'CREATED', 'ENDED', 'QUERY'], rows, 50)) ctx.out(line);
}
