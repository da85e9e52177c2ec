import type { PlanEvent } from '../contracts';
import type { Logger } from '../shared/logger';
import { dbErrorCode, isRetryableDbError, standingFault } from '../store/db-errors';
import type { PersistOutcome } from '../store/plan-event-store';
import type { ApprovalChange } from '../store/approvals/approval-apply';
import { isVoidedSeq } from '../store/projection/voided-seq';
import type { WorkerMetrics } from './worker-metrics';
import type { BatchEntry, EntryResult } from './micro-batcher';

/** What happened to the valid events of one job. */
export interface JobWriteOutcome {
  /** Events newly stored. */
  inserted: number;
  /** Events that were already stored (or repeated within the batch): no-ops. */
  duplicates: number;
  /** Valid events the database refused for good (they become `unprocessable` dead letters). */
  refused: { event: PlanEvent; error: unknown }[];
}

/** One job's outcome from its parts, written in several transaction lanes. */
export function mergeOutcomes(parts: JobWriteOutcome[]): JobWriteOutcome {
  const out: JobWriteOutcome = { inserted: 0, duplicates: 0, refused: [] };
  for (const p of parts) {
    out.inserted += p.inserted;
    out.duplicates += p.duplicates;
    for (const r of p.refused) out.refused.push(r);
  }
  return out;
}

/** The part of PlanEventStore the writer needs; tests may substitute a failing one. */
export interface EventPersister {
  persist(events: PlanEvent[]): Promise<PersistOutcome>;
}

export interface BatchWriterDeps {
  store: EventPersister;
  metrics: WorkerMetrics;
  logger: Logger;
  /**
   * Told about every transient failure and standing fault, so the database gate can check
   * reachability or pause the worker.
   */
  onTransientError(err: unknown): void;
  /** Told about every commit, for the readiness "progress" check and handle events. */
  onCommit(info: { events: number; inserted: number; duplicates: number; durationMs: number }): void;
  /** Told, after the commit, what it requested or decided in `approvals` (only when it did). */
  onApprovalChanges?(changes: readonly ApprovalChange[]): void;
}

/**
 * Writes one micro-batch (the valid events of several jobs) in one transaction. When the
 * database refuses the batch for a permanent reason, the batch is split in halves until the
 * failing job is alone, then that job's events are written one by one: one bad job never fails
 * its neighbours, and inside it only the refused event is set aside. Transient failures, and
 * standing faults (errors no event can cause: a missing table, a permission denied, see
 * db-errors.ts), are returned to the jobs of the failed write, which retry (see job-processor.ts).
 */
export class BatchWriter {
  constructor(private readonly deps: BatchWriterDeps) {}

  /** For the micro-batcher: one result per entry, never rejects. */
  readonly write = async (entries: BatchEntry<PlanEvent>[]): Promise<EntryResult<JobWriteOutcome>[]> => {
    const events = entries.flatMap((e) => e.events);
    try {
      const outcome = await this.commit(events, entries);
      return this.distribute(entries, outcome);
    } catch (err) {
      if (retryable(err)) return this.transient(entries, events.length, err);
      this.deps.logger.warn(
        { jobIds: entries.map((e) => e.key), events: events.length, code: dbErrorCode(err), err },
        entries.length > 1
          ? 'batch refused by the database; splitting it to isolate the failing job'
          : 'job refused by the database; writing its events one by one',
      );
      if (entries.length > 1) {
        const mid = Math.ceil(entries.length / 2);
        return [...(await this.write(entries.slice(0, mid))), ...(await this.write(entries.slice(mid)))];
      }
      return [await this.writeOneByOne(entries[0])];
    }
  };

  private async commit(events: PlanEvent[], entries: BatchEntry<PlanEvent>[]): Promise<PersistOutcome> {
    const started = performance.now();
    const outcome = await this.deps.store.persist(events);
    const durationMs = Math.round((performance.now() - started) * 10) / 10;
    const { metrics } = this.deps;
    metrics.commitSeconds.observe(durationMs / 1000);
    metrics.batchEvents.observe(events.length);
    metrics.eventsApplied.inc(outcome.applied);
    metrics.planRebuilds.inc(outcome.rebuilt);
    metrics.gapWaits.inc(outcome.gapWaits);
    metrics.rowCacheHits.inc(outcome.cacheHits);
    const { applied, rebuilt, gapWaits, voided, duplicates } = outcome;
    this.deps.logger.info(
      {
        jobIds: entries.map((e) => e.key),
        events: events.length,
        inserted: outcome.inserted,
        duplicates,
        voided,
        plans: outcome.plans,
        applied,
        rebuilt,
        gapWaits,
        durationMs,
      },
      'batch committed',
    );
    this.deps.onCommit({ events: events.length, inserted: outcome.inserted, duplicates, durationMs });
    if (outcome.approvals.length > 0) this.deps.onApprovalChanges?.(outcome.approvals);
    return outcome;
  }

  /** Per job: first sight of a new event id counts as inserted, everything else as a duplicate. */
  private distribute(entries: BatchEntry<PlanEvent>[], outcome: PersistOutcome): EntryResult<JobWriteOutcome>[] {
    const already = new Set(outcome.duplicateIds);
    const seen = new Set<string>();
    const insertedTypes: string[] = [];
    const duplicateTypes: string[] = [];
    const results = entries.map((entry) => {
      let inserted = 0;
      let voided = 0;
      for (const event of entry.events) {
        // a voided seq is the record of a refusal, counted with neither the stored events nor the duplicates
        if (isVoidedSeq(event)) {
          voided++;
          continue;
        }
        const fresh = !already.has(event.eventId) && !seen.has(event.eventId);
        seen.add(event.eventId);
        if (fresh) inserted++;
        (fresh ? insertedTypes : duplicateTypes).push(event.type);
      }
      return {
        ok: true as const,
        value: { inserted, duplicates: entry.events.length - voided - inserted, refused: [] },
      };
    });
    this.deps.metrics.countByType(this.deps.metrics.persisted, insertedTypes);
    this.deps.metrics.countByType(this.deps.metrics.duplicates, duplicateTypes);
    return results;
  }

  private transient(entries: BatchEntry<PlanEvent>[], events: number, err: unknown): EntryResult<JobWriteOutcome>[] {
    const code = dbErrorCode(err) ?? 'unknown';
    this.deps.metrics.retries.inc({ code });
    const fault = standingFault(err);
    this.deps.logger.warn(
      { jobIds: entries.map((e) => e.key), events, code, err },
      fault
        ? `batch write failed with a standing database fault (${fault.kind}); its jobs will retry`
        : 'batch write failed for a transient reason; its jobs will retry',
    );
    this.deps.onTransientError(err);
    return entries.map(() => ({ ok: false as const, error: err }));
  }

  /** The last resort for one job: each event in its own transaction. */
  private async writeOneByOne(entry: BatchEntry<PlanEvent>): Promise<EntryResult<JobWriteOutcome>> {
    const result: JobWriteOutcome = { inserted: 0, duplicates: 0, refused: [] };
    for (const event of entry.events) {
      try {
        const outcome = await this.commit([event], [entry]);
        const [single] = this.distribute([{ key: entry.key, events: [event] }], outcome);
        if (single.ok) {
          result.inserted += single.value.inserted;
          result.duplicates += single.value.duplicates;
        }
      } catch (err) {
        if (retryable(err)) return this.transient([entry], entry.events.length, err)[0];
        this.deps.logger.warn(
          { jobId: entry.key, eventId: event.eventId, planId: event.planId, code: dbErrorCode(err), err },
          'event refused by the database for good',
        );
        result.refused.push({ event, error: err });
      }
    }
    return { ok: true, value: result };
  }
}

/** Retried by the jobs rather than split: the same write may succeed later, or fails whatever its events. */
function retryable(err: unknown): boolean {
  return isRetryableDbError(err) || standingFault(err) !== undefined;
}
