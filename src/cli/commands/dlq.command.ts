import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { CliError, EXIT, EXIT_HELP } from '../exit-codes';
import {
  DEFAULT_REPLAY_BATCH,
  DeadLetterInputError,
  DeadLetterService,
  OpenDeadLetterOptions,
  RawSelectionOptions,
  ReplayProgress,
  createProgressReporter,
  formatDeadLetterTable,
  formatDetail,
  formatList,
  formatReplaySummary,
  formatStats,
  openDeadLetterService,
  parseFilter,
  parsePositiveInt,
  parseSelection,
} from '../../dead-letters';

/** Rows `dlq list` shows unless --limit says otherwise. */
const DEFAULT_LIST_LIMIT = 100;
/** How long `replay --wait` waits for the replayed jobs. */
const DEFAULT_WAIT_SECONDS = 120;

interface JsonOption {
  json?: boolean;
}
type ListOptions = RawSelectionOptions & JsonOption;
interface ReplayCliOptions extends RawSelectionOptions, JsonOption {
  dryRun?: boolean;
  batch?: string;
  rate?: string;
  wait?: boolean;
  waitTimeout?: string;
}
interface PurgeCliOptions extends RawSelectionOptions, JsonOption {
  yes?: boolean;
}

const FILTER_HELP = `
Filters (combine freely; all must hold):
  --type, --kind take a comma-separated list; --since/--until compare with the time the event was
  dead-lettered (since inclusive, until exclusive; ISO-8601, UTC unless an offset is given).
  Entries come oldest first; --limit keeps the first N.
Kinds: invalid (breaks the event contract; replaying it unchanged fails again), retries-exhausted
  (a transient failure such as the database being down outlasted the retries), unprocessable (the
  database refused a valid event for good), conflict (its id is already stored for a different
  event; the error names the stored one).`;

function addFilterOptions(cmd: Command, limitHelp: string): Command {
  return cmd
    .option('--type <types>', 'event type(s), e.g. step.completed,step.failed')
    .option('--kind <kinds>', 'failure kind(s): invalid, retries-exhausted, unprocessable, conflict')
    .option('--plan <id>', 'plan id')
    .option('--since <iso>', 'dead-lettered at or after this time')
    .option('--until <iso>', 'dead-lettered before this time')
    .option('--limit <n>', limitHelp);
}

/** Opens what the command needs, runs it, always closes; bad input becomes exit 2. */
async function withService(ctx: CliContext, opts: OpenDeadLetterOptions, fn: (service: DeadLetterService) => Promise<void>): Promise<void> {
  const opened = await openDeadLetterService(ctx.config, ctx.logger, opts);
  try {
    await fn(opened.service);
  } catch (err) {
    if (err instanceof DeadLetterInputError) throw new CliError(err.message, EXIT.usage);
    throw err;
  } finally {
    await opened.close();
  }
}

/** Parses flags before anything connects, so a typo costs no connection and gives exit 2. */
function parsed<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof DeadLetterInputError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
}

function printJson(ctx: CliContext, value: unknown): void {
  ctx.raw(JSON.stringify(value, null, 2));
}

export function registerDlq(program: Command, context: () => CliContext): void {
  const dlq = program
    .command('dlq')
    .description('inspect, replay and purge dead letters: events the worker could not store')
    .addHelpText('after', `\nDead letters are jobs on the "plan-events-dead" queue under QUEUE_PREFIX; no worker consumes them,\nso they stay until replayed or purged.\nUnknown dead-letter ids, malformed dates or durations and conflicting flags are usage errors:\none line on stderr, exit 2, nothing done.\n${FILTER_HELP}`);

  addFilterOptions(dlq.command('list').description('list dead letters as a table (oldest first)'), `show at most N (default ${DEFAULT_LIST_LIMIT})`)
    .option('--json', 'print {"total", "deadLetters": [...full records]} instead of a table')
    .addHelpText('after', `${FILTER_HELP}\n\nExamples:\n  plan-ledger dlq list --kind invalid --since 2025-01-31\n  plan-ledger dlq list --plan plan-42 --json | jq '.deadLetters[].error.message'\n${EXIT_HELP}`)
    .action(async (opts: ListOptions) => {
      const filter = parsed(() => parseFilter(opts));
      filter.limit ??= DEFAULT_LIST_LIMIT;
      await withService(context(), {}, async (service) => {
        // the table shows no event: read none (only --json prints the listed entries whole)
        if (opts.json) return printJson(context(), await service.list(filter));
        const list = await service.listSummaries(filter);
        for (const line of formatList(list.total, list.deadLetters)) context().out(line);
      });
    });

  dlq
    .command('show')
    .description('show one dead letter: error, contract violations, stack, provenance and the original event')
    .argument('<id>', 'dead-letter id (dl-...), as listed by `dlq list`')
    .option('--json', 'print the full record as JSON')
    .addHelpText('after', `\nAn unknown id is a usage error (exit 2).\n${EXIT_HELP}`)
    .action(async (id: string, opts: JsonOption) => {
      await withService(context(), {}, async (service) => {
        const dl = await service.show(id);
        if (opts.json) return printJson(context(), dl);
        for (const line of formatDetail(dl)) context().out(line);
      });
    });

  registerReplay(dlq, context);
  registerPurge(dlq, context);

  dlq
    .command('stats')
    .description('count dead letters by kind and by event type; age of the oldest')
    .option('--json', 'print {"total", "byKind", "byType", "oldest"} as JSON')
    .addHelpText('after', EXIT_HELP)
    .action(async (opts: JsonOption) => {
      await withService(context(), {}, async (service) => {
        const stats = await service.stats();
        if (opts.json) return printJson(context(), stats);
        for (const line of formatStats(stats)) context().out(line);
      });
    });
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
Opens DATABASE_URL (reads only) for the "already stored" count, REDIS_URL for the queues.
${FILTER_HELP}

Examples:
  plan-ledger dlq replay dl-3f2a... dl-9c41...
  plan-ledger dlq replay --kind retries-exhausted --since 2025-01-31T08:00:00Z --dry-run
  plan-ledger dlq replay --all --rate 500 --wait
${EXIT_HELP}`;

function registerReplay(dlq: Command, context: () => CliContext): void {
  addFilterOptions(
    dlq.command('replay').description('put dead-lettered events back on the main queue (idempotent)').argument('[ids...]', 'dead-letter ids; or use --all, or filters'),
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
    .action(async (ids: string[], opts: ReplayCliOptions) => {
      const selection = parsed(() => parseSelection({ ...opts, ids }, 'dlq replay'));
      const batch = parsed(() => (opts.batch === undefined ? DEFAULT_REPLAY_BATCH : parsePositiveInt('--batch', opts.batch, 10_000)));
      const rate = parsed(() => (opts.rate === undefined ? undefined : parsePositiveInt('--rate', opts.rate)));
      const wait = opts.wait || opts.waitTimeout !== undefined;
      const waitSeconds = parsed(() => (opts.waitTimeout === undefined ? DEFAULT_WAIT_SECONDS : parsePositiveInt('--wait-timeout', opts.waitTimeout, 86_400)));
      const ctx = context();
      let reporter: ReturnType<typeof createProgressReporter> | undefined;
      const onProgress = (p: ReplayProgress) => {
        if (p.total <= batch || opts.dryRun) return; // one batch: over before a bar could help
        (reporter ??= createProgressReporter(process.stderr)).update(p);
      };
      await withService(ctx, { events: true, store: true }, async (service) => {
        const summary = await service
          .replay(selection, { dryRun: opts.dryRun, batch, rate, waitMs: wait ? waitSeconds * 1000 : undefined, onProgress })
          .finally(() => reporter?.finish());
        if (opts.json) printJson(ctx, summary);
        else for (const line of formatReplaySummary(summary)) ctx.out(line);
        if (summary.pending > 0) throw new CliError(`${summary.pending} replayed job(s) unfinished after ${waitSeconds}s`, EXIT.failed);
        if (summary.failedAgain) throw new CliError(`${summary.failedAgain} replayed event(s) failed again; see plan-ledger dlq list`, EXIT.failed);
      });
    });
}

function registerPurge(dlq: Command, context: () => CliContext): void {
  addFilterOptions(
    dlq.command('purge').description('remove dead letters for good (their events are not replayed)').argument('[ids...]', 'dead-letter ids; or use --all, or filters'),
    'purge at most N, oldest first (default: all matching)',
  )
    .option('--all', 'purge every dead letter')
    .option('--older-than <age>', 'only entries dead-lettered longer ago than this: 90s, 45m, 12h, 30d, 2w')
    .option('--yes', 'really remove; without it, purge prints what it would remove and exits 2')
    .option('--json', 'print {"dryRun", "removed", "deadLetters": [...]} as JSON')
    .addHelpText('after', `${FILTER_HELP}\n\nExamples:\n  plan-ledger dlq purge --kind invalid --older-than 30d          # preview\n  plan-ledger dlq purge --kind invalid --older-than 30d --yes    # remove\n${EXIT_HELP}`)
    .action(async (ids: string[], opts: PurgeCliOptions) => {
      const selection = parsed(() => parseSelection({ ...opts, ids }, 'dlq purge'));
      const ctx = context();
      await withService(ctx, {}, async (service) => {
        const result = await service.purge(selection, { dryRun: !opts.yes });
        const n = result.deadLetters.length;
        if (opts.json) printJson(ctx, { dryRun: result.dryRun, removed: result.dryRun ? 0 : n, deadLetters: result.deadLetters });
        else if (n === 0) ctx.out('no dead letters match; nothing removed');
        else {
          ctx.out(result.dryRun ? `would remove ${n} dead letter${n === 1 ? '' : 's'}:` : `removed ${n} dead letter${n === 1 ? '' : 's'}:`);
          for (const line of formatDeadLetterTable(result.deadLetters)) ctx.out(line);
        }
        if (result.dryRun) throw new CliError(`refusing to purge without --yes; nothing removed (${n} would be)`, EXIT.usage);
      });
    });
}
