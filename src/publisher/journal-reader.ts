import * as fs from 'node:fs/promises';
import type { Logger } from '../shared/logger';
import { parseRecordKey, type Segment } from './journal-files';
import type { SpillJournal } from './spill-journal';

const QUEUED = 0;
const SENDING = 1;
const DONE = 2;

/** One journal record: one BullMQ job, re-sent with the id it was written with. */
export interface JournalRecord {
  /** The job id. */
  id: string;
  /** The queue shard of its events and the QUEUE_SHARDS it was written with, when its line names them. */
  shard?: number;
  shards?: number;
  count: number;
  /** The events as UTF-8 JSON array bytes, `[{...},{...}]`, used verbatim in the job data. */
  events: Buffer;
  segment: Segment;
  /** Offset just past this record's line. */
  end: number;
  state: number;
}

export interface JournalReaderConfig {
  /** Bytes per read. @defaultValue 1 MiB (from journalWriteBytes) */
  readBytes: number;
  /** Records read ahead of Redis, in bytes. */
  readAheadBytes: number;
  logger: Logger;
  /** Records that cannot be read back (torn by a crash of the machine): counted as drops. */
  onUnreadable: (events: number) => void;
  /** New records are ready. */
  wake: () => void;
}

const EMPTY = Buffer.alloc(0);
/** Pause after a failed read before trying again. */
const READ_RETRY_MS = 1_000;

/**
 * Drains the journal in order. Records are read ahead asynchronously (never blocking the caller's
 * event loop on disk reads), handed out for addBulk, and confirmed in order: a segment's offset
 * advances only past a contiguous prefix of records Redis stored. A failed bulk puts its records
 * back; records that succeeded after it are not sent again.
 */
export class JournalReader {
  private readonly outstanding: JournalRecord[] = [];
  private queuedBytes = 0;
  private reading = false;

  constructor(
    private readonly journal: SpillJournal,
    private readonly cfg: JournalReaderConfig,
  ) {}

  /** Nothing read and unsent, nothing in flight, nothing left on disk to read. */
  get idle(): boolean {
    return this.outstanding.length === 0 && !this.reading && this.unreadSegment() === undefined;
  }

  /** Up to `max` records in journal order, marked as being sent. */
  take(max: number): JournalRecord[] {
    const taken: JournalRecord[] = [];
    for (const record of this.outstanding) {
      if (taken.length >= max) break;
      if (record.state !== QUEUED) continue;
      record.state = SENDING;
      this.queuedBytes -= record.events.length;
      taken.push(record);
    }
    return taken;
  }

  done(records: readonly JournalRecord[]): void {
    for (const record of records) record.state = DONE;
    this.advance();
  }

  failed(records: readonly JournalRecord[]): void {
    for (const record of records) {
      record.state = QUEUED;
      this.queuedBytes += record.events.length;
    }
  }

  /** Starts a read when the read-ahead is low and the journal holds unread records. */
  maybeRead(): void {
    if (this.reading || this.queuedBytes >= this.cfg.readAheadBytes) return;
    const segment = this.unreadSegment();
    if (segment === undefined) return;
    this.reading = true;
    this.read(segment, this.cfg.readBytes).then(
      () => {
        this.reading = false;
        this.cfg.wake();
      },
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') {
          // Removed behind our back: its events are gone, and the reader must not stall on it.
          this.cfg.logger.error({ err, file: segment.file }, 'journal segment missing; its events are lost');
          segment.readOffset = segment.size;
          this.unreadable(segment, segment.size, 0);
          this.advance();
        } else {
          this.cfg.logger.error({ err, file: segment.file }, 'journal read failed; retrying in 1 s');
        }
        // Reading again at once would spin on a persistent I/O error.
        setTimeout(() => {
          this.reading = false;
          this.cfg.wake();
        }, READ_RETRY_MS).unref();
      },
    );
  }

  private unreadSegment(): Segment | undefined {
    return this.journal.segments.find((s) => s.readOffset < s.size);
  }

  private async read(segment: Segment, length: number): Promise<void> {
    const start = segment.readOffset;
    const want = Math.min(length, segment.size - start);
    const buffer = Buffer.allocUnsafe(want);
    const handle = await fs.open(segment.file, 'r');
    let got: number;
    try {
      ({ bytesRead: got } = await handle.read(buffer, 0, want, start));
    } finally {
      await handle.close();
    }
    let pos = 0;
    for (let nl = buffer.indexOf(10, 0); nl !== -1 && nl < got; nl = buffer.indexOf(10, pos)) {
      this.parseLine(buffer, pos, nl, segment, start + nl + 1);
      pos = nl + 1;
    }
    segment.readOffset = start + pos;
    if (pos === 0) {
      // a record longer than one read
      if (got === length && start + got < segment.size) return this.read(segment, length * 2);
      // No complete record up to the end of the file: the tail of a writer that died mid-write.
      this.skipTornTail(segment, start, buffer.subarray(0, got));
    }
    this.advance();
  }

  private parseLine(buffer: Buffer, from: number, nl: number, segment: Segment, end: number): void {
    let p = from;
    while (p < nl && buffer[p] === 0) p++; // a hole left by a machine crash before fsync
    const tab1 = buffer.indexOf(9, p);
    const tab2 = tab1 === -1 ? -1 : buffer.indexOf(9, tab1 + 1);
    const key = tab1 === -1 || tab1 > nl ? undefined : parseRecordKey(buffer.toString('latin1', p, tab1));
    const count = tab2 === -1 || tab2 > nl ? NaN : Number(buffer.toString('latin1', tab1 + 1, tab2));
    const ok =
      key !== undefined &&
      Number.isSafeInteger(count) &&
      count > 0 &&
      buffer[tab2 + 1] === 0x5b &&
      buffer[nl - 1] === 0x5d;
    if (!ok) {
      this.unreadable(segment, end, Number.isSafeInteger(count) ? count : 0);
      return;
    }
    // A view into the read buffer, not a copy: the read-ahead bound keeps what it pins small.
    const events = buffer.subarray(tab2 + 1, nl);
    this.outstanding.push({ ...key!, count, events, segment, end, state: QUEUED });
    this.queuedBytes += events.length;
  }

  /**
   * A segment ending in a partial record (the writer died mid-write): skipped, its events counted when its header
   * says how many.
   */
  private skipTornTail(segment: Segment, start: number, tail: Buffer): void {
    segment.readOffset = segment.size;
    const tab1 = tail.indexOf(9);
    const tab2 = tab1 === -1 ? -1 : tail.indexOf(9, tab1 + 1);
    const count = tab2 === -1 ? 0 : Number(tail.toString('latin1', tab1 + 1, tab2));
    this.unreadable(segment, segment.size, Number.isSafeInteger(count) && count > 0 ? count : 0, segment.size - start);
  }

  private unreadable(segment: Segment, end: number, events: number, bytes?: number): void {
    this.cfg.logger.error({ file: segment.file, end, events, bytes }, 'unreadable journal record skipped');
    if (events > 0) this.cfg.onUnreadable(events);
    this.outstanding.push({ id: '', count: 0, events: EMPTY, segment, end, state: DONE });
  }

  /** Confirms the contiguous prefix of stored records, segment by segment. */
  private advance(): void {
    const touched = new Set<Segment>();
    while (this.outstanding.length > 0 && this.outstanding[0].state === DONE) {
      const record = this.outstanding.shift()!;
      record.segment.confirmed = record.end;
      touched.add(record.segment);
    }
    for (const segment of touched) if (!segment.deleted) this.journal.confirmed(segment);
  }
}
