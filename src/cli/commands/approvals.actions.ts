import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { decideApproval, checkDecideInput, type DecideOutcome } from '../../approvals/decide-approval';
import { parseDuration } from '../../dead-letters/dead-letter-filter';
import { formatAge } from '../../dead-letters/dead-letter-format';
import { PlanEventPublisher } from '../../publisher';
import { parseCount, requireId } from '../../queries/query-args';
import { QueryArgumentError } from '../../queries/query-errors';
import { renderTable } from '../../queries/text-output';
import { APPROVAL_STATUSES, ApprovalLedger, type ApprovalView } from '../../store/approvals/approval-ledger';
import { type CliContext, printJson } from '../cli-context';
import { CliError } from '../exit-codes';
import { withDataSource } from '../with-data-source';

type ApprovalsOpts = Record<string, string | boolean | undefined>;

/** How long `approvals decide` waits for Redis to take the decision. */
const DECIDE_FLUSH_MS = 10_000;

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export async function approvalsList(ctx: CliContext, opts: ApprovalsOpts): Promise<void> {
  const status = (text(opts.status) ?? 'pending') as ApprovalView['status'];
  if (!APPROVAL_STATUSES.includes(status))
    throw new QueryArgumentError('--status', `"${status}" is not one of ${APPROVAL_STATUSES.join(', ')}`);
  const olderThan = text(opts.olderThan);
  const filter = {
    status,
    assignee: text(opts.assignee),
    olderThanMs: olderThan === undefined ? undefined : parseDuration('--older-than', olderThan),
    limit: parseCount('--limit', text(opts.limit), { min: 1, max: 1000, default: 100 }),
  };
  const approvals = await withDataSource(ctx, (ds) => new ApprovalLedger(ds).list(filter));
  if (opts.json) return printJson(ctx, { approvals });
  if (approvals.length === 0) return ctx.out(`no ${status} approvals`);
  const rows = approvals.map((a) => [
    a.approvalId,
    a.status,
    formatAge(a.ageMs / 1000),
    a.planId,
    a.stepId,
    a.tool ?? '-',
    a.assignee ?? '-',
    a.decision === null ? '-' : `${a.decision} by ${a.decidedBy}`,
    a.expiresAt,
  ]);
  const headers = ['APPROVAL', 'STATUS', 'AGE', 'PLAN', 'STEP', 'TOOL', 'ASSIGNEE', 'DECISION', 'EXPIRES'];
  for (const line of renderTable(headers, rows, 40)) ctx.out(line);
}

export async function approvalsShow(ctx: CliContext, rawId: string, opts: ApprovalsOpts): Promise<void> {
  const id = requireId('approvalId', rawId);
  const approval = await withDataSource(ctx, (ds) => new ApprovalLedger(ds).get(id));
  if (!approval) throw new CliError(`no approval ${id} was requested (or its request is not stored yet)`, 'not-found');
  if (opts.json) return printJson(ctx, approval);
  for (const line of showLines(approval)) ctx.out(line);
}

function showLines(a: ApprovalView): string[] {
  const lines = [
    `approval ${a.approvalId}: ${a.status}`,
    `  plan ${a.planId} (session ${a.sessionId}), step ${a.stepId}${a.tool ? `, tool ${a.tool}` : ''}`,
    `  requested ${a.requestedAt} (${formatAge(a.ageMs / 1000)} ago), expires ${a.expiresAt}`,
    `  argsDigest ${a.argsDigest}`,
  ];
  if (a.assignee !== null) lines.push(`  assignee ${a.assignee}`);
  if (a.reason !== null) lines.push(`  reason: ${a.reason}`);
  if (a.decision !== null) lines.push(`  decided ${a.decision} by ${a.decidedBy} at ${a.decidedAt}`);
  if (a.editedArgsDigest !== null) lines.push(`  editedArgsDigest ${a.editedArgsDigest}`);
  if (a.feedback !== null) lines.push(`  feedback: ${a.feedback}`);
  if (a.consumedAt !== null) lines.push(`  consumed by ${a.consumedBy} at ${a.consumedAt}`);
  return lines;
}

/**
 * Decides through decideApproval, as POST /v1/approvals/:approvalId/decide does; the event goes to Redis
 * through a publisher of this process, whose journal is its own and removed when it ends: the
 * command succeeds only once Redis has the event.
 */
export async function approvalsDecide(
  ctx: CliContext,
  rawId: string,
  decision: string,
  opts: ApprovalsOpts,
): Promise<void> {
  const input = checkDecideInput(
    {
      approvalId: requireId('approvalId', rawId),
      decision,
      decidedBy: text(opts.by)?.trim(),
      feedback: text(opts.feedback),
      editedArgsDigest: text(opts.editedArgsDigest)?.trim(),
    },
    { decision: 'decision', decidedBy: '--by', feedback: '--feedback', editedArgsDigest: '--edited-args-digest' },
  );
  const outcome = await withDataSource(ctx, async (ds) => {
    const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-decide-'));
    const publisher = new PlanEventPublisher({
      redisUrl: ctx.config.redisUrl,
      redisClusterNodes: ctx.config.redisClusterNodes,
      queuePrefix: ctx.config.queuePrefix,
      queueShards: ctx.config.queueShards,
      journalDir,
      logger: ctx.logger,
    });
    try {
      return await decideApproval(
        { approvals: new ApprovalLedger(ds), publisher, durable: () => publisher.flush(DECIDE_FLUSH_MS) },
        input,
      );
    } finally {
      await publisher.close(1_000).catch(() => undefined);
      fs.rmSync(journalDir, { recursive: true, force: true });
    }
  });
  const decided = decidedOrThrow(outcome, input.approvalId);
  if (opts.json) return printJson(ctx, decided);
  ctx.out(
    `decided approval ${decided.approvalId} of plan ${decided.planId}: ${decided.decision} by ${decided.decidedBy} (event ${decided.eventId}; the worker stores it next)`,
  );
}

function decidedOrThrow(outcome: DecideOutcome, id: string) {
  if (outcome.ok) return outcome.decided;
  switch (outcome.reason) {
    case 'not_found':
      throw new CliError(outcome.error, 'not-found');
    case 'already_decided':
    case 'expired':
      throw new CliError(outcome.error, 'conflict');
    case 'unavailable':
      throw new CliError(outcome.error);
    default:
      throw new CliError(
        `the decision of approval ${id} did not reach Redis within ${DECIDE_FLUSH_MS / 1000} s (is Redis up?); nothing was decided, run the command again`,
      );
  }
}
