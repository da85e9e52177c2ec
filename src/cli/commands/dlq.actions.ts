import { type CliContext, printJson } from '../cli-context';
import { runAsBulkCommand } from '../../shared/process-tuning';
import { CliError } from '../exit-codes';
import {
  DEFAULT_REPLAY_BATCH,
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
import { DEFAULT_LIST_LIMIT, DEFAULT_WAIT_SECONDS } from './dlq.defaults';

export interface JsonOption {
  json?: boolean;
}
export type ListOptions = RawSelectionOptions & JsonOption;
export interface ReplayCliOptions extends RawSelectionOptions, JsonOption {
  dryRun?: boolean;
  batch?: string;
  rate?: string;
  wait?: boolean;
  waitTimeout?: string;
}
export interface PurgeCliOptions extends RawSelectionOptions, JsonOption {
  yes?: boolean;
}

/** Opens what the command needs, runs it, always closes; its errors end the command by their kind (exit-codes.ts). */
async function withService(
  ctx: CliContext,
  opts: OpenDeadLetterOptions,
  fn: (service: DeadLetterService) => Promise<void>,
): Promise<void> {
  const opened = await openDeadLetterService(ctx.config, ctx.logger, opts);
  try {
    await fn(opened.service);
  } finally {
    await opened.close();
  }
}

export async function listCommand(context: () => CliContext, opts: ListOptions): Promise<void> {
  const filter = parseFilter(opts, context().config.queueShards);
  filter.limit ??= DEFAULT_LIST_LIMIT;
  await withService(context(), {}, async (service) => {
    // the table shows no event: read none (only --json prints the listed entries whole)
    if (opts.json) return printJson(context(), await service.list(filter));
    const list = await service.listSummaries(filter);
    for (const line of formatList(list.total, list.deadLetters)) context().out(line);
  });
}

export async function showCommand(context: () => CliContext, id: string, opts: JsonOption): Promise<void> {
  await withService(context(), {}, async (service) => {
    const dl = await service.show(id);
    if (opts.json) return printJson(context(), dl);
    for (const line of formatDetail(dl)) context().out(line);
  });
}

export async function statsCommand(context: () => CliContext, opts: JsonOption): Promise<void> {
  await withService(context(), {}, async (service) => {
    const stats = await service.stats();
    if (opts.json) return printJson(context(), stats);
    for (const line of formatStats(stats)) context().out(line);
  });
}

export async function replayCommand(context: () => CliContext, ids: string[], opts: ReplayCliOptions): Promise<void> {
  const selection = parseSelection({ ...opts, ids }, 'dlq replay', new Date(), context().config.queueShards);
  const batch = opts.batch === undefined ? DEFAULT_REPLAY_BATCH : parsePositiveInt('--batch', opts.batch, 10_000);
  const rate = opts.rate === undefined ? undefined : parsePositiveInt('--rate', opts.rate);
  const wait = opts.wait || opts.waitTimeout !== undefined;
  const waitSeconds =
    opts.waitTimeout === undefined
      ? DEFAULT_WAIT_SECONDS
      : parsePositiveInt('--wait-timeout', opts.waitTimeout, 86_400);
  const ctx = context();
  // every selected entry passes through memory and Redis once: keep the peak RSS down, and let a
  // worker on the same host keep its CPU (BENCHMARKS.md, "Dead letters")
  runAsBulkCommand();
  let reporter: ReturnType<typeof createProgressReporter> | undefined;
  const onProgress = (p: ReplayProgress) => {
    if (p.total <= batch || opts.dryRun) return; // one batch: over before a bar could help
    (reporter ??= createProgressReporter(process.stderr)).update(p);
  };
  await withService(ctx, { events: true, store: true }, async (service) => {
    const summary = await service
      .replay(selection, {
        dryRun: opts.dryRun,
        batch,
        rate,
        waitMs: wait ? waitSeconds * 1000 : undefined,
        onProgress,
      })
      .finally(() => reporter?.finish());
    if (opts.json) printJson(ctx, summary);
    else for (const line of formatReplaySummary(summary)) ctx.out(line);
    if (summary.pending > 0) throw new CliError(`${summary.pending} replayed job(s) unfinished after ${waitSeconds}s`);
    if (summary.failedAgain)
      throw new CliError(`${summary.failedAgain} replayed event(s) failed again; see plan-ledger dlq list`);
  });
}

export async function purgeCommand(context: () => CliContext, ids: string[], opts: PurgeCliOptions): Promise<void> {
  const selection = parseSelection({ ...opts, ids }, 'dlq purge', new Date(), context().config.queueShards);
  const ctx = context();
  await withService(ctx, {}, async (service) => {
    const result = await service.purge(selection, { dryRun: !opts.yes });
    const n = result.matched;
    if (opts.json)
      printJson(ctx, {
        dryRun: result.dryRun,
        removed: result.dryRun ? 0 : n,
        matched: n,
        deadLetters: result.deadLetters,
      });
    else if (n === 0) ctx.out('no dead letters match; nothing removed');
    else {
      ctx.out(
        result.dryRun
          ? `would remove ${n} dead letter${n === 1 ? '' : 's'}:`
          : `removed ${n} dead letter${n === 1 ? '' : 's'}:`,
      );
      for (const line of formatDeadLetterTable(result.deadLetters)) ctx.out(line);
      const unlisted = n - result.deadLetters.length;
      if (unlisted > 0)
        ctx.out(
          `... and ${unlisted} more, not listed (the first ${result.deadLetters.length} are)${result.dryRun ? '; dlq list with the same filter and --limit shows them all' : ''}`,
        );
    }
    if (result.dryRun) throw new CliError(`refusing to purge without --yes; nothing removed (${n} would be)`, 'usage');
  });
}
