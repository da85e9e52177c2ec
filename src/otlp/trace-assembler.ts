import type { PlanEvent } from '../contracts';
import { logRecordKey, withLoggedExceptions, type OtlpLogRecord } from './otlp-log';
import type { OtlpSpan } from './otlp-span';
import { isRecognised, mapTrace, MappingOptions } from './span-mapping';

export interface AssemblerOptions extends MappingOptions {
  /** A trace whose root span arrived is mapped once no span of it arrived for this long. */
  quietMs: number;
  /** A trace without a root span is mapped once no span of it arrived for this long. */
  rootlessMs: number;
  /** Most spans held at once; past it, `add` refuses a request (the exporter retries). */
  maxSpans: number;
  /** Traces remembered after they were mapped, to count their late spans instead of mapping them twice. */
  maxMappedTraces?: number;
}

export interface AddResult {
  /** false: the buffer is full; nothing of the request was taken. */
  ok: boolean;
  /** Spans taken, to be mapped. */
  accepted: number;
  /** Spans not used, with why. */
  rejected: number;
  reasons: string[];
  /** The spans now held (for the held-span journal): every span with ids whose trace was not mapped yet. */
  held: OtlpSpan[];
}

export interface AssemblerSink {
  /** A mapped trace's events, in seq order per plan. */
  publish(events: PlanEvent[]): void;
  /** Spans that were taken but did not map, by reason. */
  unmapped(reason: string, count: number): void;
  /** Exception log records that were taken but whose span never arrived. */
  unmappedLogs?(count: number): void;
  /** These traces were mapped and their events handed to `publish` (their spans are no longer held). */
  mapped?(traceIds: string[]): void;
}

/** What `addLogs` took: as AddResult, the records now held for the held-span journal. */
export interface AddLogsResult extends Omit<AddResult, 'held'> {
  held: OtlpLogRecord[];
}

/** Why a span or log record is refused once its trace was mapped. */
const ALREADY_MAPPED = 'its trace was already turned into a plan (raise OTLP_TRACE_QUIET_MS)';

interface Pending {
  spans: Map<string, OtlpSpan>;
  /** Exception log records of the trace, by logRecordKey. */
  logs: Map<string, OtlpLogRecord>;
  hasRoot: boolean;
  lastAt: number;
}

/**
 * Gathers the spans of each trace across requests (exporters send spans as they end, children
 * first, a trace often split over several requests) and maps a trace once it is complete: its
 * root span arrived and no span of it came for `quietMs`, or no span came for `rootlessMs`.
 * Mapping the whole trace at once is what makes the events, their ids and their seqs the same
 * however the spans were batched, ordered or repeated.
 */
export class TraceAssembler {
  private readonly pending = new Map<string, Pending>();
  private readonly mapped = new Map<string, true>();
  private held = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: AssemblerOptions,
    private readonly sink: AssemblerSink,
    private readonly now: () => number = Date.now,
  ) {}

  get heldSpans(): number {
    return this.held;
  }

  start(): void {
    const every = Math.max(10, Math.min(1_000, Math.floor(this.options.quietMs / 2)));
    this.timer = setInterval(() => this.flushDue(), every);
    this.timer.unref();
  }

  /**
   * Takes a request's spans; refuses the whole request when they would not fit (unless `force`:
   * spans a previous process held, taken back at start).
   */
  add(spans: readonly OtlpSpan[], force = false): AddResult {
    if (!force && this.held + spans.length > this.options.maxSpans && this.held > 0)
      return { ok: false, accepted: 0, rejected: 0, reasons: [], held: [] };
    const held: OtlpSpan[] = [];
    const reasons = new Map<string, number>();
    const reject = (why: string) => reasons.set(why, (reasons.get(why) ?? 0) + 1);
    let accepted = 0;
    const at = this.now();
    for (const span of spans) {
      if (span.traceId === '' || span.spanId === '') {
        reject('a span without a trace id or span id');
        continue;
      }
      if (this.mapped.has(span.traceId)) {
        reject(ALREADY_MAPPED);
        continue;
      }
      const trace = this.pendingTrace(span.traceId, at);
      if (span.parentSpanId === '') trace.hasRoot = true;
      if (!isRecognised(span)) reject('no GenAI or OpenInference attributes');
      else accepted++;
      // every span is kept: one without attributes still links its children to their ancestors
      if (!trace.spans.has(span.spanId)) this.held++;
      trace.spans.set(span.spanId, span);
      held.push(span);
    }
    const rejected = [...reasons.values()].reduce((a, b) => a + b, 0);
    return { ok: true, accepted, rejected, reasons: [...reasons].map(([why, n]) => `${n} ${why}`), held };
  }

  /**
   * Takes a request's exception log records, held with their trace's spans (whichever arrive
   * first) and given to their spans when the trace is mapped; refused as `add` refuses spans.
   */
  addLogs(records: readonly OtlpLogRecord[], force = false): AddLogsResult {
    if (!force && this.held + records.length > this.options.maxSpans && this.held > 0)
      return { ok: false, accepted: 0, rejected: 0, reasons: [], held: [] };
    const held: OtlpLogRecord[] = [];
    let late = 0;
    const at = this.now();
    for (const record of records) {
      if (this.mapped.has(record.traceId)) {
        late++;
        continue;
      }
      const trace = this.pendingTrace(record.traceId, at);
      const key = logRecordKey(record);
      if (!trace.logs.has(key)) this.held++;
      trace.logs.set(key, record);
      held.push(record);
    }
    return {
      ok: true,
      accepted: held.length,
      rejected: late,
      reasons: late > 0 ? [`${late} ${ALREADY_MAPPED}`] : [],
      held,
    };
  }

  private pendingTrace(traceId: string, at: number): Pending {
    let trace = this.pending.get(traceId);
    if (!trace) {
      trace = { spans: new Map(), logs: new Map(), hasRoot: false, lastAt: at };
      this.pending.set(traceId, trace);
    }
    trace.lastAt = at;
    return trace;
  }

  /** Maps the traces that are due (or, with `all`, every trace held). */
  flushDue(all = false): void {
    const at = this.now();
    const mapped: string[] = [];
    for (const [traceId, trace] of this.pending) {
      const idle = at - trace.lastAt;
      if (!all && idle < (trace.hasRoot ? this.options.quietMs : this.options.rootlessMs)) continue;
      this.pending.delete(traceId);
      this.held -= trace.spans.size + trace.logs.size;
      this.remember(traceId);
      const { spans, orphans } = withLoggedExceptions([...trace.spans.values()], trace.logs.values());
      if (orphans > 0) this.sink.unmappedLogs?.(orphans);
      const result = mapTrace(spans, this.options);
      for (const plan of result.plans) this.sink.publish(plan.events);
      for (const [reason, count] of result.unmapped) this.sink.unmapped(reason, count);
      mapped.push(traceId);
    }
    if (mapped.length > 0) this.sink.mapped?.(mapped);
  }

  /** Stops the timer and maps everything held. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.flushDue(true);
  }

  private remember(traceId: string): void {
    this.mapped.set(traceId, true);
    if (this.mapped.size > (this.options.maxMappedTraces ?? 100_000))
      this.mapped.delete(this.mapped.keys().next().value!);
  }
}
