/**
 * The write-ahead journal of the spans `POST /v1/traces` holds while their traces complete, so
 * that a 200 means durable there too: a span is written (and fsynced, many requests sharing one
 * fsync) before the exporter is answered, and a restarted `serve` holds again every span whose
 * trace had not yet become durable events.
 *
 * Layout, one directory: `spans-<12 digits>.jsonl`, oldest = lowest number, appended by one process
 * at a time (the server's journal lock covers it). A line is `S\t<spans JSON>` (spans taken),
 * `P\t<base64 protobuf ExportTraceServiceRequest>` (a protobuf request every span of which was
 * taken, as it came: no encoding on the request's path), `L\t<log records JSON>` (exception log records of POST /v1/logs, held with their traces' spans) or
 * `D\t<trace ids JSON>` (these traces are mapped and their events durable: never hold them again).
 * A segment is removed once every trace with spans in it is done and that fact is on disk; an
 * unreadable line (a torn last write) is skipped.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { appendAllSync } from '../shared/append-file';
import type { Logger } from '../shared/logger';
import { decodeTraces } from './otlp-codec';
import type { OtlpLogRecord } from './otlp-log';
import type { OtlpSpan } from './otlp-span';

const SEGMENT = /^spans-(\d{12})\.jsonl$/;
/** A segment takes no more appends past this size. */
const SEGMENT_BYTES = 16 * 1024 * 1024;

interface SpanSegment {
  no: number;
  file: string;
  fd: number | undefined;
  size: number;
  /** Traces with spans in this segment that are not done yet. */
  open: Set<string>;
}

export class HeldSpanJournal {
  private readonly segments = new Map<number, SpanSegment>();
  private active: SpanSegment | undefined;
  private nextNo = 1;
  /** By trace id, the segments holding its spans, while it is not done. */
  private readonly traceSegments = new Map<string, Set<number>>();
  private writes = 0;
  private syncedWrites = 0;
  private syncing: Promise<void> | undefined;
  /** Segments written since their last fsync. */
  private readonly dirty = new Set<SpanSegment>();
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly logger: Logger,
    private readonly segmentBytes = SEGMENT_BYTES,
  ) {
    fs.mkdirSync(dir, { recursive: true });
  }

  /**
   * The spans of traces a previous process held and did not finish, oldest first. Their segments
   * stay until those traces are done again.
   */
  recover(): OtlpSpan[] {
    return this.recoverAll().spans;
  }

  /** As `recover`, with the exception log records held beside the spans. */
  recoverAll(): { spans: OtlpSpan[]; logs: OtlpLogRecord[] } {
    const names = fs
      .readdirSync(this.dir)
      .filter((n) => SEGMENT.test(n))
      .sort();
    const done = new Set<string>();
    const taken: { no: number; spans: OtlpSpan[] }[] = [];
    const takenLogs: { no: number; logs: OtlpLogRecord[] }[] = [];
    let unreadable = 0;
    for (const name of names) {
      const no = Number(SEGMENT.exec(name)![1]);
      this.nextNo = Math.max(this.nextNo, no + 1);
      const file = path.join(this.dir, name);
      const text = fs.readFileSync(file, 'utf8');
      this.segments.set(no, { no, file, fd: undefined, size: text.length, open: new Set() });
      for (const line of text.split('\n')) {
        if (line === '') continue;
        try {
          if (line.startsWith('D\t')) for (const id of JSON.parse(line.slice(2)) as string[]) done.add(id);
          else if (line.startsWith('S\t')) taken.push({ no, spans: decodeSpans(line.slice(2)) });
          else if (line.startsWith('P\t'))
            taken.push({ no, spans: decodeTraces('protobuf', Buffer.from(line.slice(2), 'base64')) });
          else if (line.startsWith('L\t')) takenLogs.push({ no, logs: decodeLogs(line.slice(2)) });
          else unreadable++;
        } catch {
          unreadable++;
        }
      }
    }
    if (unreadable > 0) this.logger.warn({ dir: this.dir, lines: unreadable }, 'unreadable held-span lines skipped');
    const spans: OtlpSpan[] = [];
    for (const { no, spans: group } of taken)
      for (const span of group) {
        if (done.has(span.traceId)) continue;
        this.note(span.traceId, no);
        spans.push(span);
      }
    const logs: OtlpLogRecord[] = [];
    for (const { no, logs: group } of takenLogs)
      for (const record of group) {
        if (done.has(record.traceId)) continue;
        this.note(record.traceId, no);
        logs.push(record);
      }
    for (const segment of [...this.segments.values()]) if (segment.open.size === 0) this.remove(segment);
    if (spans.length + logs.length > 0)
      this.logger.info(
        { dir: this.dir, spans: spans.length, logRecords: logs.length },
        'spans held by a previous serve are held again',
      );
    return { spans, logs };
  }

  /** Writes spans taken by a request (to the OS at once); `synced()` then makes them durable. */
  append(spans: readonly OtlpSpan[]): void {
    if (spans.length === 0) return;
    const segment = this.writable();
    this.write(segment, `S\t${encodeSpans(spans)}\n`);
    for (const span of spans) this.note(span.traceId, segment.no);
  }

  /**
   * As `append`, for spans that are every span of a protobuf `ExportTraceServiceRequest`: the
   * request's bytes are written as they came (decoded again only by `recover`).
   */
  appendRequest(spans: readonly OtlpSpan[], request: Uint8Array): void {
    if (spans.length === 0) return;
    const segment = this.writable();
    this.write(
      segment,
      `P\t${Buffer.from(request.buffer, request.byteOffset, request.byteLength).toString('base64')}\n`,
    );
    for (const span of spans) this.note(span.traceId, segment.no);
  }

  /** Writes exception log records taken by a request, as `append` writes spans. */
  appendLogs(records: readonly OtlpLogRecord[]): void {
    if (records.length === 0) return;
    const segment = this.writable();
    this.write(segment, `L\t${encodeSpans(records)}\n`);
    for (const record of records) this.note(record.traceId, segment.no);
  }

  /**
   * These traces became events that are durable: their spans are never needed again. Segments
   * left with no open trace are removed after the next fsync (so the mark is on disk first).
   */
  done(traceIds: readonly string[]): void {
    const known = traceIds.filter((id) => this.traceSegments.has(id));
    if (known.length === 0 || this.closed) return;
    this.write(this.writable(), `D\t${JSON.stringify(known)}\n`);
    for (const id of known) {
      for (const no of this.traceSegments.get(id)!) this.segments.get(no)?.open.delete(id);
      this.traceSegments.delete(id);
    }
    void this.synced();
  }

  /** Resolves once everything written before the call is fsynced; throws when an fsync fails. */
  async synced(): Promise<void> {
    const target = this.writes;
    while (this.syncedWrites < target) {
      if (this.syncing) {
        await this.syncing; // then one more fsync covers every write made meanwhile (group commit)
        continue;
      }
      this.syncing = this.fsyncAll().finally(() => (this.syncing = undefined));
      await this.syncing;
    }
  }

  private async fsyncAll(): Promise<void> {
    const covers = this.writes;
    const fds = [...this.dirty].map((s) => s.fd).filter((fd): fd is number => fd !== undefined);
    this.dirty.clear();
    await Promise.all(fds.map((fd) => new Promise<void>((ok, fail) => fs.fsync(fd, (e) => (e ? fail(e) : ok())))));
    this.syncedWrites = Math.max(this.syncedWrites, covers);
    this.collect();
  }

  /** Closes the files; segments whose traces are all done are removed, the rest wait for the next serve. */
  async close(): Promise<void> {
    await this.synced().catch((err: Error) => this.logger.error({ err, dir: this.dir }, 'held-span fsync failed'));
    this.closed = true;
    for (const segment of this.segments.values()) {
      if (segment.fd !== undefined) fs.closeSync(segment.fd);
      segment.fd = undefined;
    }
    this.active = undefined;
    this.collect(true);
  }

  private note(traceId: string, no: number): void {
    let segments = this.traceSegments.get(traceId);
    if (!segments) this.traceSegments.set(traceId, (segments = new Set()));
    segments.add(no);
    this.segments.get(no)!.open.add(traceId);
  }

  private writable(): SpanSegment {
    if (this.active && this.active.size < this.segmentBytes) return this.active;
    const no = this.nextNo++;
    const file = path.join(this.dir, `spans-${String(no).padStart(12, '0')}.jsonl`);
    const segment: SpanSegment = { no, file, fd: fs.openSync(file, 'wx'), size: 0, open: new Set() };
    this.segments.set(no, segment);
    this.active = segment;
    return segment;
  }

  private write(segment: SpanSegment, line: string): void {
    // a P line is ASCII: latin1 copies it byte for byte, without UTF-8's scan
    const buffer = Buffer.from(line, line.startsWith('P\t') ? 'latin1' : 'utf8');
    appendAllSync(segment.fd!, buffer, segment.size);
    segment.size += buffer.length;
    this.writes++;
    this.dirty.add(segment);
  }

  /** Removes segments (not the one being appended to) that hold no open trace, once marks are on disk. */
  private collect(all = false): void {
    if (!all && this.syncedWrites < this.writes) return;
    for (const segment of [...this.segments.values()])
      if (segment.open.size === 0 && (segment !== this.active || all)) this.remove(segment);
  }

  private remove(segment: SpanSegment): void {
    this.dirty.delete(segment);
    if (segment.fd !== undefined) fs.closeSync(segment.fd);
    fs.rmSync(segment.file, { force: true });
    this.segments.delete(segment.no);
    if (this.active === segment) this.active = undefined;
  }
}

/** Spans or log records as JSON: nanosecond times (bigint) as decimal strings. */
export function encodeSpans(spans: readonly (OtlpSpan | OtlpLogRecord)[]): string {
  return JSON.stringify(spans, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

export function decodeSpans(json: string): OtlpSpan[] {
  const spans = JSON.parse(json) as (Omit<OtlpSpan, 'startNs' | 'endNs' | 'events'> & {
    startNs: string;
    endNs: string;
    events: { name: string; timeNs: string; attributes: OtlpSpan['attributes'] }[];
  })[];
  return spans.map((s) => ({
    ...s,
    startNs: BigInt(s.startNs),
    endNs: BigInt(s.endNs),
    events: s.events.map((e) => ({ ...e, timeNs: BigInt(e.timeNs) })),
  }));
}

export function decodeLogs(json: string): OtlpLogRecord[] {
  const records = JSON.parse(json) as (Omit<OtlpLogRecord, 'timeNs'> & { timeNs: string })[];
  return records.map((r) => ({ ...r, timeNs: BigInt(r.timeNs) }));
}
