import { createProgressReporter } from '../../dead-letters/replay-progress';
import { approvalChangesMessage, approvalChannel } from '../../queue/approval-signals';
import { connectRedis, type RedisClient } from '../../queue/connect-redis';
import { parseCount } from '../../queries/query-args';
import {
  countUndecidedApprovals,
  REPAIR_PAGE_SIZE,
  repairApprovals,
  type ApprovalRepairResult,
} from '../../store/approvals/approval-repair';
import { type CliContext, printJson } from '../cli-context';
import { withDataSource } from '../with-data-source';

export interface RepairOptions {
  dryRun?: boolean;
  json?: boolean;
  pageSize?: string;
}

/** How long the repair waits for Redis, to wake the waiters of what it decides, before going on without it. */
const REDIS_CONNECT_MS = 3_000;

/**
 * `approvals repair`: the approvals an earlier version left pending although the log holds their
 * decision (one that reached the worker before its request), decided as the worker decides them
 * now, a page per transaction under the plans' head locks (repairApprovals); progress on stderr.
 * After each page commits, its approvals are announced on the approvals channel, as the worker
 * announces what it decides, so `GET /v1/approvals/{id}?waitMs=` answers at once; without Redis the
 * waiters find the decision at their next read (within 10 s).
 */
export async function runApprovalsRepair(ctx: CliContext, opts: RepairOptions): Promise<void> {
  const dryRun = opts.dryRun === true;
  const pageSize = parseCount('--page-size', opts.pageSize, { min: 1, max: 1000, default: REPAIR_PAGE_SIZE });
  const redis = dryRun ? undefined : await announcer(ctx);
  let result: ApprovalRepairResult;
  try {
    result = await withDataSource(ctx, async (ds) => {
      const total = await countUndecidedApprovals(ds.manager);
      const reporter = total > 0 ? createProgressReporter(process.stderr, { label: 'approvals repair' }) : undefined;
      try {
        return await repairApprovals(ds, {
          dryRun,
          pageSize,
          onPage: async ({ scanned, changes }) => {
            // approvals requested meanwhile can make the scan pass the count taken before it
            reporter?.update({ done: Math.min(scanned, total), total });
            if (redis && changes.length > 0)
              await redis
                .publish(approvalChannel(ctx.config.queuePrefix), approvalChangesMessage(changes))
                .catch(() => undefined);
          },
        });
      } finally {
        reporter?.finish();
      }
    });
  } finally {
    redis?.disconnect();
  }
  if (opts.json)
    return printJson(ctx, {
      dryRun,
      scanned: result.scanned,
      repaired: result.repaired.length,
      approvals: result.repaired,
    });
  const verb = dryRun ? 'would decide' : 'decided';
  for (const a of result.repaired)
    ctx.out(
      `${verb} approval ${a.approvalId} of plan ${a.planId}: ${a.decision} by ${a.decidedBy} (event ${a.decisionEventId})`,
    );
  const count = `${result.repaired.length} of ${result.scanned} undecided approval(s)`;
  ctx.out(
    dryRun
      ? `dry run: ${count} would be decided by a decision stored before their request; nothing written`
      : `repaired ${count}: decided by a decision stored before their request`,
  );
}

/** A Redis connection to announce decisions on, or undefined (one line on stderr) when Redis cannot be reached. */
async function announcer(ctx: CliContext): Promise<RedisClient | undefined> {
  try {
    return await connectRedis(ctx.config, REDIS_CONNECT_MS);
  } catch (err) {
    ctx.err(
      `plan-ledger: ${(err as Error).message}; repairing without announcing: waiters see each decision at their next read (within 10 s)`,
    );
    return undefined;
  }
}
