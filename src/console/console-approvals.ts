import type { FastifyInstance } from 'fastify';
import type { DataSource } from 'typeorm';
import { ENTITY, type ApprovalRow } from '../store/entities';
import { APPROVAL_STATUSES, whereApprovals, type ApprovalView } from '../store/approvals/approval-ledger';
import { QueryArgumentError } from '../queries/query-errors';

/** The console's route to its approvals summary (the header's count, the pages' change check). */
export const APPROVALS_SUMMARY_ROUTE = '/console/approvals/summary';

const STATUSES: ReadonlyArray<ApprovalView['status'] | 'all'> = [...APPROVAL_STATUSES, 'all'];

/**
 * What the console polls about approvals: how many are pending (the header's count), how many match
 * the page's filter, and a marker that changes whenever an approval is requested, decided or
 * consumed. It holds no age, so its ETag stays the same until one of those changes (or an
 * approval expires, which changes the counts).
 */
export interface ApprovalsSummary {
  pending: number;
  matching: number;
  marker: string;
}

export async function approvalsSummary(
  ds: DataSource,
  filter: { status: ApprovalView['status'] | 'all'; assignee?: string },
  now = new Date(),
): Promise<ApprovalsSummary> {
  const repo = ds.getRepository<ApprovalRow>(ENTITY.approval);
  const count = (f: Parameters<typeof whereApprovals>[1]) =>
    whereApprovals(repo.createQueryBuilder('a'), f, now).getCount();
  const status = filter.status === 'all' ? undefined : filter.status;
  const [pending, matching, last] = await Promise.all([
    count({ status: 'pending' }),
    count({ status, assignee: filter.assignee }),
    repo
      .createQueryBuilder('a')
      .select('COUNT(*)', 'total')
      .addSelect('MAX(a.requestedAt)', 'requested')
      .addSelect('MAX(a.decidedAt)', 'decided')
      .addSelect('MAX(a.consumedAt)', 'consumed')
      .getRawOne<Record<string, unknown>>(),
  ]);
  const marker = [last?.total, last?.requested, last?.decided, last?.consumed]
    .map((v) => (v instanceof Date ? v.toISOString() : String(v ?? '')))
    .join('|');
  return { pending, matching, marker };
}

/**
 * `GET /console/approvals/summary?status=pending|expired|decided|consumed|all&assignee=` (read or
 * approve scope; hidden from the OpenAPI document: the console's own). Console sessions share its answer
 * and get 304 while it is unchanged (shared-reads.ts).
 */
export function registerConsoleApprovalRoutes(app: FastifyInstance, ds: DataSource): void {
  app.get(APPROVALS_SUMMARY_ROUTE, { config: { scope: ['read', 'approve'] }, schema: { hide: true } }, async (req) => {
    const q = req.query as Record<string, string | undefined>;
    const status = (q.status === undefined || q.status === '' ? 'pending' : q.status) as ApprovalView['status'];
    if (!STATUSES.includes(status)) throw new QueryArgumentError('status', `must be one of ${STATUSES.join(', ')}`);
    const assignee = q.assignee === undefined || q.assignee === '' ? undefined : q.assignee;
    return approvalsSummary(ds, { status, assignee });
  });
}
