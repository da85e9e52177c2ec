import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { EXIT_HELP } from '../exit-codes';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM) is loaded when a subcommand runs (see main.ts).
const actions = lazyRequire<typeof import('./approvals.actions')>(require, './approvals.actions');
const repair = lazyRequire<typeof import('./approvals-repair.actions')>(require, './approvals-repair.actions');

type ApprovalsOpts = Record<string, string | boolean | undefined>;

/**
 * `approvals list|show|decide|repair`: the inbox of approvals, the human's decision, and the repair
 * of approvals an earlier version left pending (docs/approvals.md).
 */
export function registerApprovals(program: Command, context: () => CliContext): Command {
  const approvals = program
    .command('approvals')
    .description('approvals of steps and tool calls: the inbox, one approval, a decision, a repair');
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
  approvals
    .command('repair')
    .description(
      'decide the approvals an earlier version left pending although the log holds their decision (it came before the request)',
    )
    .option('--dry-run', 'only count and list them: nothing is written')
    .option(
      '--json',
      'print JSON: dryRun, scanned, repaired, approvals (each approvalId, planId, decision, decidedBy, decisionEventId, decidedAt)',
    )
    .option('--page-size <n>', 'undecided approvals read and decided per transaction (1-1000)', '500')
    .addHelpText(
      'after',
      `
A decision that reached the worker before its request decided nothing in versions before the fix
(the event is in the log, the approval stayed pending). The worker now decides the request by it
when the request is stored; this decides the approvals stored before, by the same rule: the first
approval.decided of the approval's plan and id under the request's seq, in the order stored. Other
approvals are left as they are; running it again decides nothing more.

Undecided approvals are read by approvalId a page at a time; each page is one transaction under
its plans' head locks (the lock the worker takes), so it may run beside a worker. What it decides is
announced on Redis as the worker announces its decisions (waiters answer at once; without Redis,
at their next read). No webhook is written: the decision's approval.decided webhook was written
when it was stored. Progress goes to stderr.

Examples:
  plan-ledger approvals repair --dry-run
  plan-ledger approvals repair --json
${EXIT_HELP}`,
    )
    .action(async (opts: ApprovalsOpts) => repair().runApprovalsRepair(context(), opts));
  return approvals;
}
