import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { EXIT_HELP } from '../exit-codes';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM) is loaded when a subcommand runs (see main.ts).
const actions = lazyRequire<typeof import('./approvals.actions')>(require, './approvals.actions');

type ApprovalsOpts = Record<string, string | boolean | undefined>;

/** `approvals list|show|decide`: the inbox of approvals and the human's decision (docs/approvals.md). */
export function registerApprovals(program: Command, context: () => CliContext): Command {
  const approvals = program
    .command('approvals')
    .description('approvals of steps and tool calls: the inbox, one approval, a decision');
  approvals
    .command('list')
    .description('approvals across plans, oldest request first, with their age')
    .option('--status <status>', 'pending (default), expired, decided or consumed')
    .option('--assignee <name>', 'only those assigned to this name')
    .option('--older-than <age>', 'only those requested longer ago than this: 90s, 10m, 12h, 2d')
    .option('--limit <n>', 'at most this many (1-1000)', '100')
    .option('--json', 'print JSON ({"approvals": [...]}, as GET /v1/approvals)')
    .addHelpText(
      'after',
      `\nExamples:\n  plan-ledger approvals list\n  plan-ledger approvals list --assignee ops --older-than 10m --json\n${EXIT_HELP}`,
    )
    .action(async (opts: ApprovalsOpts) => actions().approvalsList(context(), opts));
  approvals
    .command('show')
    .description('one approval: its request, its decision, its consume')
    .argument('<approvalId>', 'the approval')
    .option('--json', 'print JSON (as GET /v1/approvals/{approvalId})')
    .action(async (id: string, opts: ApprovalsOpts) => actions().approvalsShow(context(), id, opts));
  approvals
    .command('decide')
    .description('decide a pending approval: approve, edit or reject (stored as an approval.decided event)')
    .argument('<approvalId>', 'the approval')
    .argument('<decision>', 'approve, edit or reject')
    .requiredOption('--by <name>', 'who decides, for the audit (1-64 of A-Z a-z 0-9 . _ @ -)')
    .option('--feedback <text>', 'why (at most 4000 characters)')
    .option('--edited-args-digest <hex>', 'for edit: the SHA-256 of the edited arguments (64 lower-case hex)')
    .option('--json', 'print JSON (as the 202 of POST /v1/approvals/{approvalId}/decide)')
    .addHelpText(
      'after',
      `
The decision goes to Redis, like every event, and the worker stores it; the command ends once
Redis has it (exit 1, nothing decided, when it does not within 10 s). Refused with exit 1: an
approval never requested, one decided before, one expired.

Examples:
  plan-ledger approvals decide appr_send_mail_1 approve --by alice --feedback "checked the recipient"
  plan-ledger approvals decide appr_send_mail_1 edit --by alice --edited-args-digest 3c9e...f1e0
${EXIT_HELP}`,
    )
    .action(async (id: string, decision: string, opts: ApprovalsOpts) =>
      actions().approvalsDecide(context(), id, decision, opts),
    );
  return approvals;
}
