import type { CliContext } from '../cli-context';
import { isExternalId } from '../../contracts/field-formats';
import { restorePlan, RestoreOutcome } from '../../retention/plan-restore';
import { CliError } from '../exit-codes';
import { retentionPolicyFromEnv, withRetentionSource } from './retention.actions';

export async function plansRestore(ctx: CliContext, rawId: string, opts: { json?: boolean }): Promise<void> {
  const planId = (rawId ?? '').trim();
  if (!isExternalId(planId))
    throw new CliError(
      `planId: "${rawId}" is not a plan id (1-64 letters, digits, _ . : -, starting with a letter or digit)`,
      'usage',
    );
  const policy = retentionPolicyFromEnv(ctx.env);
  const outcome = await withRetentionSource(ctx, (ds) => restorePlan(ds, planId, policy, { logger: ctx.logger }));
  if (outcome.status !== 'restored') throw new CliError(failureText(outcome));
  if (opts.json) return ctx.raw(JSON.stringify(outcome));
  const rows = Object.entries(outcome.rows).filter(([, n]) => (n ?? 0) > 0);
  const total = rows.reduce((sum, [, n]) => sum + (n ?? 0), 0);
  // a fork's soft-deleted ancestors come back with it: it reads its inherited steps from them
  const ancestors = outcome.ancestors.map((a) => `${a.planId} (${rowCount(a.rows)} rows)`);
  ctx.out(
    `restored plan ${planId} (soft-deleted at ${outcome.deletedAt}): ${total} rows (${rows.map(([t, n]) => `${t} ${n}`).join(', ')})${ancestors.length > 0 ? `; with its soft-deleted ancestors ${ancestors.join(', ')}` : ''}`,
  );
}

function rowCount(rows: Partial<Record<string, number>>): number {
  return Object.values(rows).reduce<number>((sum, n) => sum + (n ?? 0), 0);
}

function failureText(outcome: Exclude<RestoreOutcome, { status: 'restored' }>): string {
  switch (outcome.status) {
    case 'not-found':
      return `plan "${outcome.planId}" not found: it was never stored, or it has already been purged`;
    case 'not-deleted':
      return `plan "${outcome.planId}" is not soft-deleted; nothing to restore`;
    case 'grace-expired':
      return `plan "${outcome.planId}" was soft-deleted at ${outcome.deletedAt} and its grace period ended at ${outcome.graceEndedAt}: it is due for purge and can no longer be restored`;
  }
}
