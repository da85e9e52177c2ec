import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { RETENTION_ENV_HELP } from '../../retention/retention-config';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./sessions.actions')>(require, './sessions.actions');

/** What `sessions purge` reads of retention's settings: its transactions are bounded alike. */
const ERASURE_ENV_TEXT = `\nTransactions, as retention's (environment):\n${RETENTION_ENV_HELP.filter(([name]) =>
  ['RETENTION_MAX_ROWS', 'RETENTION_REQUEST_TIMEOUT'].includes(name),
)
  .map(([name, help]) => `  ${name.padEnd(26)}${help}`)
  .join('\n')}`;

/** `sessions active|history`: what a chat application restores after a restart. */
export function registerSessions(program: Command, context: () => CliContext): Command {
  const sessions = program
    .command('sessions')
    .description("a session's plan in progress and its finished plans (restore after a restart)");

  sessions
    .command('active')
    .description("the session's plan still planning or executing, with its steps")
    .argument('<sessionId>', "the executor's session id")
    .option('--json', 'print { sessionId, activePlan, otherActivePlanIds } as JSON (activePlan null when none)')
    .addHelpText('after', '\nExit code 0 with "no plan in progress" when the session exists but has none.')
    .action(async (sessionId: string, opts: { json?: boolean }) => actions().activeCommand(context(), sessionId, opts));

  sessions
    .command('history')
    .description("the session's finished plans (completed, failed, cancelled), newest first")
    .argument('<sessionId>', "the executor's session id")
    .option('--limit <n>', 'how many plans, 1-1000 (default: 10, what a chat keeps in view)')
    .option('--json', 'print { sessionId, plans } as JSON')
    .action(async (sessionId: string, opts: { limit?: string; json?: boolean }) =>
      actions().historyCommand(context(), sessionId, opts),
    );

  sessions
    .command('purge')
    .description(
      'erase a session for good: every row of its plans (any status, soft-deleted too), its session row, its dead letters in Redis',
    )
    .argument('<sessionId>', "the executor's session id")
    .option('--dry-run', 'count what would be removed; change nothing')
    .option(
      '--include-forks',
      'also erase the forks and replays of its plans in other sessions, at any depth (without it, such a session is refused)',
    )
    .option('--json', 'print { sessionId, dryRun, plans, tables, deadLetters, forks, durationMs } as JSON')
    .addHelpText(
      'after',
      `\nNo undo (unlike retention's soft delete). Needs the database and Redis (REDIS_URL, QUEUE_PREFIX).\nExit code 1 with one line when neither knows the session, or when plans of it have forks in other sessions\n(they read their inherited steps from its plans) and --include-forks is not given: nothing is erased then.\n${ERASURE_ENV_TEXT}\n\nExamples:\n  plan-ledger sessions purge sess-42 --dry-run\n  plan-ledger sessions purge sess-42 --json`,
    )
    .action(async (sessionId: string, opts: { dryRun?: boolean; includeForks?: boolean; json?: boolean }) =>
      actions().purgeCommand(context(), sessionId, opts),
    );

  return sessions;
}
