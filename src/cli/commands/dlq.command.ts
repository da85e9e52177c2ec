import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { EXIT_HELP } from '../exit-codes';
import { DEFAULT_REPLAY_BATCH } from '../../dead-letters/replay-defaults';
import { DEFAULT_LIST_LIMIT, DEFAULT_WAIT_SECONDS } from './dlq.defaults';
import type { JsonOption, ListOptions, PurgeCliOptions, ReplayCliOptions } from './dlq.actions';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./dlq.actions')>(require, './dlq.actions');

const FILTER_HELP = `
Filters (combine freely; all must hold):
  --type, --kind take a comma-separated list; --since/--until compare with the time the event was
  dead-lettered (since inclusive, until exclusive; ISO-8601, UTC unless an offset is given).
  Entries come oldest first; --limit keeps the first N. Dead letters of every shard (QUEUE_SHARDS)
  are kept in one place; --shard n keeps those whose plan id routes to shard n, and replay sends
  each event to the shard of its plan.
Kinds: invalid (breaks the event contract; replaying it unchanged fails again), retries-exhausted
  (a transient failure such as the database being down outlasted the retries), unprocessable (the
  database refused a valid event for good), conflict (its id is already stored for a different
  event; the error names the stored one).`;

function addFilterOptions(cmd: Command, limitHelp: string): Command {
  return cmd
    .option('--type <types>', 'event type(s), e.g. step.completed,step.failed')
    .option('--kind <kinds>', 'failure kind(s): invalid, retries-exhausted, unprocessable, conflict')
    .option('--plan <id>', 'plan id')
    .option('--shard <n>', 'with QUEUE_SHARDS: dead letters of shard n (whose plan id routes there)')
    .option('--since <iso>', 'dead-lettered at or after this time')
    .option('--until <iso>', 'dead-lettered before this time')
    .option('--limit <n>', limitHelp);
}

export function registerDlq(program: Command, context: () => CliContext): void {
  const dlq = program
    .command('dlq')
    .description('inspect, replay and purge dead letters: events the worker could not store')
    .addHelpText(
      'after',
      `\nDead letters are jobs on the "plan-events-dead" queue under QUEUE_PREFIX; no worker consumes them,\nso they stay until replayed or purged.\nUnknown dead-letter ids, malformed dates or durations and conflicting flags are usage errors:\none line on stderr, exit 2, nothing done.\n${FILTER_HELP}`,
    );

  addFilterOptions(
    dlq.command('list').description('list dead letters as a table (oldest first)'),
    `show at most N (default ${DEFAULT_LIST_LIMIT})`,
  )
    .option('--json', 'print {"total", "deadLetters": [...full records]} instead of a table')
    .addHelpText(
      'after',
      `${FILTER_HELP}\n\nExamples:\n  plan-ledger dlq list --kind invalid --since 2025-01-31\n  plan-ledger dlq list --plan plan-42 --json | jq '.deadLetters[].error.message'\n${EXIT_HELP}`,
    )
    .action(async (opts: ListOptions) => actions().listCommand(context, opts));

  dlq
    .command('show')
    .description('show one dead letter: error, contract violations, stack, provenance and the original event')
    .argument('<id>', 'dead-letter id (dl-...), as listed by `dlq list`')
    .option('--json', 'print the full record as JSON')
    .addHelpText('after', `\nAn unknown id is a usage error (exit 2).\n${EXIT_HELP}`)
    .action(async (id: string, opts: JsonOption) => actions().showCommand(context, id, opts));

  registerReplay(dlq, context);
  registerPurge(dlq, context);

  dlq
    .command('stats')
    .description('count dead letters by kind and by event type; age of the oldest')
    .option('--json', 'print {"total", "byKind", "byType", "oldest"} as JSON')
    .addHelpText('after', EXIT_HELP)
    .action(async (opts: JsonOption) => actions().statsCommand(context, opts));
}

const REPLAY_HELP = `
Each event goes back on the "plan-events" queue with its original eventId, so replaying an event
that is already stored changes nothing. A dead letter is removed only after its event is queued;
if replay is interrupted, run it again: duplicates are harmless.
An event that fails again is dead-lettered anew with its replay count raised.

Summary: replayed = events queued; already stored = of those, events found in plan_events before
the replay (no-ops); failed again = events dead-lettered again, known only with --wait, which waits
(default ${DEFAULT_WAIT_SECONDS}s, --wait-timeout to change) for the replayed jobs to finish, then looks for new
dead letters coming from them. Needs a running worker. Exit 1 if any failed again or the wait timed out.
Progress goes to stderr when more than one batch is replayed: a bar on a terminal, else a line every 2s.
A replay runs at the lowest CPU priority (nice 19), so a worker or Redis on the same host keeps its share;
--rate also bounds what it asks of Redis.
Opens DATABASE_URL (reads only) for the "already stored" count, REDIS_URL for the queues.
${FILTER_HELP}

Examples:
  plan-ledger dlq replay dl-3f2a... dl-9c41...
  plan-ledger dlq replay --kind retries-exhausted --since 2025-01-31T08:00:00Z --dry-run
  plan-ledger dlq replay --all --rate 500 --wait
${EXIT_HELP}`;

function registerReplay(dlq: Command, context: () => CliContext): void {
  addFilterOptions(
    dlq
      .command('replay')
      .description('put dead-lettered events back on the main queue (idempotent)')
      .argument('[ids...]', 'dead-letter ids; or use --all, or filters'),
    'replay at most N, oldest first (default: all matching)',
  )
    .option('--all', 'replay every dead letter')
    .option('--dry-run', 'print what would be replayed (and how much is already stored); send nothing')
    .option('--batch <n>', `events per queued job (default ${DEFAULT_REPLAY_BATCH})`)
    .option('--rate <n>', 'at most N events per second (default: unlimited)')
    .option('--wait', 'wait for the replayed jobs to finish and count the events that failed again')
    .option('--wait-timeout <seconds>', `how long --wait waits (default ${DEFAULT_WAIT_SECONDS}); implies --wait`)
    .option('--json', 'print the summary as JSON')
    .addHelpText('after', REPLAY_HELP)
    .action(async (ids: string[], opts: ReplayCliOptions) => actions().replayCommand(context, ids, opts));
}

function registerPurge(dlq: Command, context: () => CliContext): void {
  addFilterOptions(
    dlq
      .command('purge')
      .description('remove dead letters for good (their events are not replayed)')
      .argument('[ids...]', 'dead-letter ids; or use --all, or filters'),
    'purge at most N, oldest first (default: all matching)',
  )
    .option('--all', 'purge every dead letter')
    .option('--older-than <age>', 'only entries dead-lettered longer ago than this: 90s, 45m, 12h, 30d, 2w')
    .option('--yes', 'really remove; without it, purge prints what it would remove and exits 2')
    .option('--json', 'print {"dryRun", "removed", "deadLetters": [...]} as JSON')
    .addHelpText(
      'after',
      `${FILTER_HELP}\n\nExamples:\n  plan-ledger dlq purge --kind invalid --older-than 30d          # preview\n  plan-ledger dlq purge --kind invalid --older-than 30d --yes    # remove\n${EXIT_HELP}`,
    )
    .action(async (ids: string[], opts: PurgeCliOptions) => actions().purgeCommand(context, ids, opts));
}
