import type { DataSource } from 'typeorm';
import type { PlanEvent } from '../contracts';
import type { DeadLetter } from '../dead-letters/dead-letter';
import { DeadLetterWriter } from '../dead-letters/dead-letter-writer';
import type { WorkerMetrics } from './worker-metrics';
import type { RedisClient } from '../queue/connect-redis';
import { EVENTS_QUEUE } from '../queue/queue-names';
import { recordStoredEvents } from '../queue/stored-event-rate';
import { announceApprovalChanges } from '../queue/approval-signals';
import type { Logger } from '../shared/logger';
import { PlanEventStore } from '../store/plan-event-store';
import { AdaptiveConcurrency } from './adaptive-concurrency';
import { BackoffPolicy, DEFAULT_BACKOFF } from '../shared/backoff';
import { BatchWriter, EventPersister, JobWriteOutcome, mergeOutcomes } from './batch-writer';
import { DatabaseGate } from './database-gate';
import { GapSweeper } from './gap-sweeper';
import { createJobProcessor } from './job-processor';
import { MicroBatcher } from './micro-batcher';
import type { Opened } from './opened-resources';
import { eventLane } from './session-lane';
import type { WorkerConfig } from './worker-config';
import type { WorkerState } from './worker-state';
import { workerVersion } from './worker-version';

/** What the path of an event from its job to its commit is built from. */
export interface PipelineDeps {
  settings: WorkerConfig;
  ds: DataSource;
  connection: RedisClient;
  queuePrefix: string;
  logger: Logger;
  metrics: WorkerMetrics;
  state: WorkerState;
  opened: Opened;
  /** Transactions in flight at once (1 where the dialect serialises writes). */
  transactions: number;
  /** Aborted when the worker closes: retry waits end and jobs are handed back. */
  closing: AbortSignal;
  /** Where validated events go. @defaultValue the PlanEventStore on `ds` */
  store?: EventPersister;
  retryBackoff?: BackoffPolicy;
  onCommit?(info: { events: number; inserted: number; duplicates: number; durationMs: number }): void;
  onDeadLetter?(letter: DeadLetter): void;
}

/**
 * The event path: gate, batcher, processor, dead letters and the gap sweeper. Knows nothing of the BullMQ worker that
 * feeds it.
 */
export interface WorkerPipeline {
  /**
   * Whether the database answers and no standing fault paused the worker; the composition root
   * pauses the BullMQ worker while either holds.
   */
  gate: DatabaseGate;
  batcher: MicroBatcher<PlanEvent, JobWriteOutcome>;
  processor: ReturnType<typeof createJobProcessor>;
  /** Jobs to run at once, following the job sizes seen. */
  concurrency: AdaptiveConcurrency;
  writeDeadLetters(letters: DeadLetter[]): Promise<void>;
  sweeper: GapSweeper;
}

export function buildPipeline(deps: PipelineDeps): WorkerPipeline {
  const { settings, metrics, state, logger } = deps;
  const gate = new DatabaseGate({ probe: () => deps.ds.query('SELECT 1'), logger });
  gate.onChange(() => void metrics.databaseUp.set(gate.isUp ? 1 : 0));
  const store = new PlanEventStore(deps.ds, logger, {
    rowCacheBytes: settings.rowCacheMb * 1024 * 1024,
    stallAfterMs: settings.stallAfterMs,
  });
  const writer = new BatchWriter({
    store: deps.store ?? store,
    metrics,
    logger,
    onTransientError: (err) => gate.reportFailure(err),
    onCommit: (info) => {
      gate.reportSuccess();
      state.committed(info);
      recordStoredEvents(deps.connection, deps.queuePrefix, info.inserted);
      deps.onCommit?.(info);
    },
    // GET /v1/approvals/{id}?waitMs= answers when serve hears of the approval
    onApprovalChanges: (changes) => announceApprovalChanges(deps.connection, deps.queuePrefix, changes),
  });
  const concurrency = new AdaptiveConcurrency(settings.concurrency, settings.maxEventsInFlight);
  concurrency.onChange((n) => logger.debug({ concurrency: n }, 'job concurrency adjusted to the job size'));
  const batcher = new MicroBatcher<PlanEvent, JobWriteOutcome>({
    maxEvents: settings.batchSize,
    maxWaitMs: settings.batchWaitMs,
    maxEntries: () => concurrency.concurrency,
    // one session, one lane: a session's plans never wait on each other's plan_heads, sessions or
    // rollup row locks in this process
    lanes: deps.transactions,
    laneOf: eventLane,
    merge: mergeOutcomes,
    write: writer.write,
  });
  const deadLetters = deps.opened.closable(new DeadLetterWriter(deps.connection, deps.queuePrefix));
  const writeDeadLetters = async (letters: DeadLetter[]) => {
    await deadLetters.write(letters);
    for (const letter of letters) {
      state.deadLettered();
      deps.onDeadLetter?.(letter);
    }
  };
  const processor = createJobProcessor({
    batcher,
    writeDeadLetters,
    gate,
    metrics,
    logger,
    queueName: EVENTS_QUEUE,
    prefix: deps.queuePrefix,
    workerVersion: workerVersion(),
    retryBudgetMs: settings.retryBudgetMs,
    backoff: deps.retryBackoff ?? DEFAULT_BACKOFF,
    closing: deps.closing,
    onJobStart: (events) => concurrency.observe(events),
  });
  const sweeper = new GapSweeper({
    store,
    timeoutMs: settings.gapTimeoutMs,
    metrics,
    logger,
    databaseUp: () => gate.isUp,
  });
  return { gate, batcher, processor, concurrency, writeDeadLetters, sweeper };
}
