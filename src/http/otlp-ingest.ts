import * as path from 'node:path';
import type { PlanEvent } from '../contracts';
import { decodeLogs, decodeTraces, OtlpFormat } from '../otlp/otlp-codec';
import { OtlpDecodeError } from '../otlp/otlp-span';
import { HeldSpanJournal } from '../otlp/held-span-journal';
import { TraceAssembler } from '../otlp/trace-assembler';
import type { DurabilityMark, PlanEventPublisher } from '../publisher';
import type { Logger } from '../shared/logger';
import type { HttpConfig } from './http-config';
import type { HttpMetrics } from './http-metrics';

export interface OtlpDeps {
  publisher: PlanEventPublisher;
  settings: Readonly<HttpConfig>;
  metrics: HttpMetrics;
  logger: Logger;
  closing: () => boolean;
}

/** The OTLP signals plan-ledger takes: spans, and the log records that report a span's exception. */
export type OtlpSignal = 'traces' | 'logs';

/** One export request, whatever its transport. */
export interface OtlpExport {
  signal: OtlpSignal;
  format: OtlpFormat;
  /** The request body: a Buffer (protobuf) or the parsed JSON. */
  body: unknown;
  /** The body's size as sent, for the journal bound (0 when unknown). */
  bodyBytes: number;
}

/**
 * What an export request got: taken (`rejected` of its items unused, `message` saying why), or
 * refused whole: 400 (the body does not decode), 429 or 503 (retry after `retryAfterSeconds`).
 */
export type OtlpOutcome =
  | { ok: true; rejected: number; message: string }
  | { ok: false; status: 400; error: string }
  | { ok: false; status: 429 | 503; error: string; retryAfterSeconds: number; cause?: unknown };

/** How long a mapped trace's events may take to become durable before its wait is renewed. */
const DONE_WAIT_MS = 60_000;
/** At shutdown (the publisher closed), how long the last mapped traces may take to be marked done. */
const CLOSE_WAIT_MS = 2_000;

/** What one export request gave: taken or refused whole (`ok`), what to journal, what to count. */
interface Taken {
  ok: boolean;
  rejected: number;
  reasons: string[];
  journal(): void;
  count(): void;
}

/**
 * The OTLP ingest path, shared by every transport: spans and exception log records are held per
 * trace until the trace is complete (TraceAssembler), then mapped to plan events (span-mapping.ts)
 * and published like POST /v1/events' (journal, dead letters). A taken request is durable: its
 * spans are written and fsynced in the held-span journal (`<HTTP_JOURNAL_DIR>/otlp-spans`) first,
 * and a restarted server holds again the spans of every trace whose events had not become durable
 * (in Redis, or the publisher's journal).
 */
export class OtlpIngestor {
  readonly assembler: TraceAssembler;
  private readonly heldSpans: HeldSpanJournal;
  private readonly pendingDone = new Set<Promise<void>>();
  private mark: DurabilityMark | undefined;

  constructor(private readonly deps: OtlpDeps) {
    const { settings, metrics } = deps;
    this.heldSpans = new HeldSpanJournal(path.join(settings.journalDir, 'otlp-spans'), deps.logger);
    this.assembler = new TraceAssembler(
      {
        captureContent: settings.otlpCaptureContent,
        quietMs: settings.otlpQuietMs,
        rootlessMs: settings.otlpRootlessMs,
        maxSpans: settings.otlpMaxHeldSpans,
      },
      {
        publish: (events) => this.publish(events),
        unmapped: (_reason, count) => metrics.otlpSpans.inc({ outcome: 'unmapped' }, count),
        unmappedLogs: (count) => metrics.otlpLogRecords.inc({ outcome: 'unmapped' }, count),
        mapped: (traceIds) => this.mapped(traceIds),
      },
    );
    const recovered = this.heldSpans.recoverAll();
    if (recovered.spans.length > 0) this.assembler.add(recovered.spans, true);
    if (recovered.logs.length > 0) this.assembler.addLogs(recovered.logs, true);
    this.assembler.start();
  }

  /** Takes one export request: held with its trace (and journaled), or refused whole. */
  async ingest(request: OtlpExport): Promise<OtlpOutcome> {
    const { publisher, settings } = this.deps;
    const retryLater = (status: 429 | 503, why: string, cause?: unknown): OtlpOutcome => ({
      ok: false,
      status,
      error: `${why}; retry after ${settings.retryAfterSeconds} s`,
      retryAfterSeconds: settings.retryAfterSeconds,
      ...(cause === undefined ? {} : { cause }),
    });
    if (this.deps.closing()) return retryLater(503, 'the server is shutting down');
    if (publisher.stats().journalBytes + 4 * request.bodyBytes > settings.maxJournalBytes)
      return retryLater(503, 'the server cannot hold more events until Redis takes its backlog');
    let taken: Taken;
    try {
      taken = request.signal === 'logs' ? this.takeLogs(request) : this.takeTraces(request);
    } catch (err) {
      if (err instanceof OtlpDecodeError) return { ok: false, status: 400, error: err.message };
      throw err;
    }
    if (!taken.ok)
      return retryLater(
        429,
        `the server holds ${settings.otlpMaxHeldSpans} spans and log records of unfinished traces (OTLP_MAX_HELD_SPANS)`,
      );
    if (!settings.ackBeforeDurable) {
      try {
        taken.journal();
        await this.heldSpans.synced();
      } catch (err) {
        // held in memory all the same: a retried request is taken again (one copy per span id or record)
        this.deps.metrics.acks.inc({ outcome: 'lost' });
        const why = 'what was sent could not be written to the held-span journal (see the server log)';
        return retryLater(503, why, err);
      }
    }
    taken.count();
    return { ok: true, rejected: taken.rejected, message: taken.reasons.join('; ') };
  }

  /** Stops mapping traces (the spans held stay in the journal). */
  close(): void {
    this.assembler.close();
  }

  /**
   * Closes the held-span journal once the traces mapped so far are durable events (call after the
   * publisher closed: its close makes them durable, in Redis or its journal).
   */
  async closeHeldSpans(): Promise<void> {
    // what is not marked done by then is held (and mapped) again by the next serve: same event ids
    const deadline = new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref());
    await Promise.race([Promise.allSettled([...this.pendingDone]), deadline]);
    await this.heldSpans.close();
  }

  private takeTraces({ format, body }: OtlpExport): Taken {
    const { metrics } = this.deps;
    const spans = decodeTraces(format, body);
    const added = this.assembler.add(spans);
    // a protobuf request all of whose spans are held is journaled as it came; otherwise the spans held
    const whole = format === 'protobuf' && body instanceof Uint8Array && added.held.length === spans.length;
    return {
      ...added,
      journal: () => (whole ? this.heldSpans.appendRequest(added.held, body) : this.heldSpans.append(added.held)),
      count: () => {
        if (added.accepted > 0) metrics.otlpSpans.inc({ outcome: 'accepted' }, added.accepted);
        if (added.rejected > 0) metrics.otlpSpans.inc({ outcome: 'rejected' }, added.rejected);
      },
    };
  }

  private takeLogs({ format, body }: OtlpExport): Taken {
    const { metrics } = this.deps;
    const { records, rejected } = decodeLogs(format, body);
    const added = this.assembler.addLogs(records);
    const reasons = [...rejected].map(([why, n]) => `${n} ${why}`);
    const refused = [...rejected.values()].reduce((a, b) => a + b, 0);
    return {
      ...added,
      rejected: added.rejected + refused,
      reasons: [...added.reasons, ...reasons],
      journal: () => this.heldSpans.appendLogs(added.held),
      count: () => {
        if (added.accepted > 0) metrics.otlpLogRecords.inc({ outcome: 'accepted' }, added.accepted);
        if (added.rejected + refused > 0) metrics.otlpLogRecords.inc({ outcome: 'rejected' }, added.rejected + refused);
      },
    };
  }

  private publish(events: PlanEvent[]): void {
    const { publisher, metrics } = this.deps;
    this.mark ??= publisher.durabilityMark();
    for (const event of events) {
      const result = publisher.publish(event);
      if (result.ok) metrics.otlpEvents.inc({ outcome: 'accepted' });
      else if (result.reason === 'invalid') {
        // as POST /v1/events: the worker dead-letters it and voids its seq, so the plan goes on
        metrics.otlpEvents.inc({ outcome: 'invalid' });
        publisher.forwardRefused(JSON.stringify(event));
      } else metrics.otlpEvents.inc({ outcome: 'dropped' });
    }
  }

  /** A mapped trace's spans are released once the events it became are durable. */
  private mapped(traceIds: string[]): void {
    const since = this.mark ?? this.deps.publisher.durabilityMark();
    this.mark = undefined;
    const done = this.release(traceIds, since).catch((err: Error) =>
      this.deps.logger.error({ err }, 'releasing held spans failed; a restart maps their traces again'),
    );
    this.pendingDone.add(done);
    void done.finally(() => this.pendingDone.delete(done));
  }

  private async release(traceIds: string[], since: DurabilityMark): Promise<void> {
    for (;;) {
      const durability = await this.deps.publisher.whenDurable(since, DONE_WAIT_MS);
      if (durability === 'durable') return this.heldSpans.done(traceIds);
      // lost: keep the spans, a restart maps them again (same event ids); timeout: wait on
      if (durability === 'lost' || this.deps.closing()) return;
    }
  }
}
