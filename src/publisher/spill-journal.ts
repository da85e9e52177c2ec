import * as fs from 'node:fs';
import { appendAllSync } from '../shared/append-file';
import type { Logger } from '../shared/logger';
import {
  RECORD_OVERHEAD_BYTES,
  Segment,
  acquireLock,
  newSegment,
  recordKey,
  releaseLock,
  removeSegmentFiles,
  scanSegments,
  segmentFile,
  writeOffset,
} from './journal-files';
import { newBatchId } from './memory-buffer';

interface StagedRecord {
  /** Set when the events already had a job id (a memory batch spilled at close); else drawn at write. */
  id: string | undefined;
  events: string[];
  /** The queue shard of every event in it (QUEUE_SHARDS routes by plan id). */
  shard: number;
  /** Event bytes, to close the record at `writeBytes`. */
  bytes: number;
  /** The lowest durability ticket of its events. */
  firstTicket: number;
}

/** Records written to a segment whose fsync has not completed yet. */
interface Unsynced {
  segment: Segment;
  /** The write's number (`SpillJournal.writes`): an fsync started after it covers it. */
  write: number;
  firstTicket: number;
}

export interface SpillJournalConfig {
  dir: string;
  maxBytes: number;
  segmentBytes: number;
  /** Staged bytes that trigger a write, and the largest record. */
  writeBytes: number;
  eventsPerRecord: number;
  /**
   * QUEUE_SHARDS: a record holds events of one shard, and with several its line names the shard
   * (journal-files.ts), so the drain sends it as one job without parsing it. @defaultValue 1
   */
  shards?: number;
  logger: Logger;
  /** Accepted events lost to a failed write (disk full, I/O error): counted as drops. */
  onWriteLost: (events: number, err: Error) => void;
  /** An fsync completed (or failed): records written before it are on disk (see `lowestUnsyncedTicket`). */
  onSynced?: () => void;
}

/**
 * The disk tail of the publisher's FIFO (memory is the head). Events are staged in memory and
 * written as whole records with one synchronous `write` per batch, then fsynced asynchronously (at
 * most one fsync in flight per segment). Writes happen on the next tick, or inline in `append()`
 * once `writeBytes` more are staged, which bounds staging memory even when the caller publishes in
 * a tight loop that never yields; writes go to the page cache (~1 ms per MiB at worst here). While
 * the drain is behind, the pump writes full records only (`writeStaged(false)`): each shard's
 * record being filled waits, up to the group commit (`journalCommitMs`), so a backlog drains as full
 * jobs, as many as with one shard, instead of a job per shard per tick.
 *
 * Synchronous writes from one thread keep the file a clean sequence of whole records: no holes, no
 * interleaving. `maxBytes` counts segment files on disk plus staged bytes (with record overhead),
 * so the directory never grows past it.
 */
export class SpillJournal {
  readonly segments: Segment[];
  /** Bytes of segment files plus staged bytes. */
  usedBytes = 0;
  private staged: StagedRecord[] = [];
  private stagedEvents = 0;
  private stagedBytes = 0;
  /** By shard, the staged record that takes its next events (undefined: open a new one). */
  private open: (StagedRecord | undefined)[] = [];
  /** `append()` writes inline once this many bytes are staged (what the last write left + writeBytes). */
  private inlineWriteAt: number;
  private active: Segment | undefined;
  private nextNo: number;
  private fdWaiters: (() => void)[] = [];
  /** Writes so far; each fsync covers the writes made before it started. */
  private writes = 0;
  private unsynced: Unsynced[] = [];
  /** fsyncs that failed: what they covered may be lost to a power cut (not to a process crash). */
  syncFailures = 0;

  constructor(private readonly cfg: SpillJournalConfig) {
    fs.mkdirSync(cfg.dir, { recursive: true });
    acquireLock(cfg.dir);
    this.segments = scanSegments(cfg.dir);
    for (const s of this.segments) this.usedBytes += s.size;
    this.nextNo = (this.segments.at(-1)?.no ?? 0) + 1;
    this.inlineWriteAt = cfg.writeBytes;
  }

  /** Events wait here (on disk or staged): new events must queue behind them to keep the order. */
  get backlog(): boolean {
    return this.stagedEvents > 0 || this.segments.length > 0;
  }

  /** Stages one event of `shard`; false when it does not fit under `maxBytes` (the caller counts the drop). */
  append(json: string, bytes: number, shard = 0, ticket = 0): boolean {
    let record = this.open[shard];
    const opens = record === undefined || this.isFull(record);
    const need = bytes + 1 + (opens ? RECORD_OVERHEAD_BYTES : 0);
    if (this.usedBytes + need > this.cfg.maxBytes) return false;
    if (!this.backlog)
      this.cfg.logger.warn(
        { journalDir: this.cfg.dir },
        'spilling events to the journal (memory buffer full, or an older journal not yet drained)',
      );
    if (opens) {
      record = { id: undefined, events: [], shard, bytes: 0, firstTicket: ticket };
      this.staged.push(record);
      this.open[shard] = record;
    }
    record!.events.push(json);
    record!.bytes += bytes + 1;
    this.stagedEvents++;
    this.stagedBytes += need;
    this.usedBytes += need;
    if (this.stagedBytes >= this.inlineWriteAt) this.writeStaged(false);
    return true;
  }

  private isFull(record: StagedRecord): boolean {
    return record.events.length >= this.cfg.eventsPerRecord || record.bytes >= this.cfg.writeBytes;
  }

  /**
   * Stages a whole batch of `shard` as one record under its existing job id (memory spilled at
   * close: if Redis did store it before the reply was lost, the replay is ignored as a duplicate).
   * False when it does not fit.
   */
  appendBatch(id: string, events: string[], shard = 0, firstTicket = 0): boolean {
    let need = RECORD_OVERHEAD_BYTES;
    for (const e of events) need += Buffer.byteLength(e, 'utf8') + 1;
    if (this.usedBytes + need > this.cfg.maxBytes) return false;
    this.staged.push({ id, events, shard, bytes: need - RECORD_OVERHEAD_BYTES, firstTicket });
    // the shard's later events go after it
    this.open[shard] = undefined;
    this.stagedEvents += events.length;
    this.stagedBytes += need;
    this.usedBytes += need;
    return true;
  }

  /**
   * Writes staged records to the active segment and asks for an fsync: all of them, or with
   * `partial` false all but each shard's record still being filled (the last of its shard, so the
   * shard's order holds; at most one per shard, each under `writeBytes`).
   */
  writeStaged(partial = true): void {
    if (this.stagedEvents === 0) return;
    const held = partial ? [] : this.open.filter((r): r is StagedRecord => r !== undefined && !this.isFull(r));
    if (held.length === this.staged.length) {
      this.inlineWriteAt = this.stagedBytes + this.cfg.writeBytes;
      return;
    }
    const records = held.length === 0 ? this.staged : this.staged.filter((r) => !held.includes(r));
    let events = 0;
    let reserved = 0;
    let firstTicket = Infinity;
    for (const r of records) {
      events += r.events.length;
      reserved += r.bytes + RECORD_OVERHEAD_BYTES;
      if (r.firstTicket < firstTicket) firstTicket = r.firstTicket;
    }
    this.staged = held;
    this.open = [];
    for (const r of held) this.open[r.shard] = r;
    this.stagedEvents -= events;
    this.stagedBytes -= reserved;
    this.inlineWriteAt = this.stagedBytes + this.cfg.writeBytes;
    const shards = this.cfg.shards ?? 1;
    let text = '';
    for (const r of records)
      text += `${recordKey(r.id ?? newBatchId(), r.shard, shards)}\t${r.events.length}\t[${r.events.join(',')}]\n`;
    const buffer = Buffer.from(text, 'utf8');
    this.usedBytes -= reserved;
    try {
      const segment = this.activeSegment();
      appendAllSync(segment.fd!, buffer, segment.size);
      segment.size += buffer.length;
      this.usedBytes += buffer.length;
      this.unsynced.push({ segment, write: ++this.writes, firstTicket });
      this.sync(segment);
      if (segment.size >= this.cfg.segmentBytes) this.seal(segment);
    } catch (err) {
      this.cfg.onWriteLost(events, err as Error);
    }
  }

  private activeSegment(): Segment {
    if (this.active !== undefined && !this.active.sealed) return this.active;
    const no = this.nextNo++;
    const file = segmentFile(this.cfg.dir, no);
    const fd = fs.openSync(file, 'wx');
    this.active = newSegment(file, no, 0, 0, fd);
    this.segments.push(this.active);
    return this.active;
  }

  private sync(segment: Segment): void {
    if (segment.fd === undefined) return;
    if (segment.syncing) {
      segment.dirty = true;
      return;
    }
    segment.syncing = true;
    segment.dirty = false;
    const covers = this.writes;
    fs.fsync(segment.fd, (err) => {
      segment.syncing = false;
      if (err) {
        this.syncFailures++;
        this.cfg.logger.error({ err, file: segment.file }, 'journal fsync failed');
      }
      this.unsynced = this.unsynced.filter((u) => u.segment !== segment || u.write > covers);
      if (segment.dirty) this.sync(segment);
      else if (segment.sealed) this.closeFd(segment);
      this.cfg.onSynced?.();
    });
  }

  /**
   * The lowest durability ticket of an event staged or written but not yet fsynced; `Infinity`
   * when every event the journal took is on disk.
   */
  lowestUnsyncedTicket(): number {
    let lowest = Infinity;
    for (const r of this.staged) if (r.firstTicket < lowest) lowest = r.firstTicket;
    for (const u of this.unsynced) if (u.firstTicket < lowest) lowest = u.firstTicket;
    return lowest;
  }

  /** No more appends; the fd closes once its last fsync is done. */
  private seal(segment: Segment): void {
    segment.sealed = true;
    if (this.active === segment) this.active = undefined;
    if (!segment.syncing) this.closeFd(segment);
  }

  private closeFd(segment: Segment): void {
    const fd = segment.fd;
    if (fd === undefined) return;
    segment.fd = undefined;
    fs.close(fd, () => {
      if (segment.deleted) this.unlinkWhenIdle(segment);
      this.notifyFds();
    });
  }

  /** The reader stored everything up to `segment.confirmed` in Redis. */
  confirmed(segment: Segment): void {
    if (segment.confirmed < segment.size || (segment === this.active && this.stagedEvents > 0)) {
      this.saveOffset(segment);
      return;
    }
    // Fully drained: the journal frees its space at once; the files go when their I/O is done.
    segment.deleted = true;
    this.segments.splice(this.segments.indexOf(segment), 1);
    this.usedBytes -= segment.size;
    this.seal(segment);
    if (segment.fd === undefined) this.unlinkWhenIdle(segment);
    if (!this.backlog) this.cfg.logger.info({ journalDir: this.cfg.dir }, 'journal drained into redis and removed');
  }

  private saveOffset(segment: Segment): void {
    if (segment.offsetWriting) {
      segment.offsetDirty = true;
      return;
    }
    segment.offsetWriting = true;
    segment.offsetDirty = false;
    writeOffset(segment.file, segment.confirmed, (err) => {
      segment.offsetWriting = false;
      if (err && !segment.deleted)
        this.cfg.logger.warn(
          { err, file: segment.file },
          'journal offset not saved; a restart will resend (deduplicated by job id)',
        );
      if (segment.deleted) this.unlinkWhenIdle(segment);
      else if (segment.offsetDirty) this.saveOffset(segment);
    });
  }

  private unlinkWhenIdle(segment: Segment): void {
    if (segment.fd !== undefined || segment.offsetWriting) return;
    try {
      removeSegmentFiles(segment.file);
    } catch (err) {
      this.cfg.logger.warn({ err, file: segment.file }, 'drained journal segment not removed');
    }
  }

  /**
   * Writes what is staged, waits (up to `timeoutMs`: a hung disk must not hang shutdown) for the
   * last fsyncs and offset writes, closes every file and releases the lock.
   */
  async close(timeoutMs = 5_000): Promise<void> {
    this.writeStaged();
    for (const segment of this.segments) if (!segment.sealed) this.seal(segment);
    const deadline = Date.now() + timeoutMs;
    while (this.segments.some((s) => s.fd !== undefined || s.offsetWriting)) {
      if (Date.now() > deadline) {
        this.cfg.logger.warn(
          { journalDir: this.cfg.dir },
          'journal files still busy at close (slow disk?); not waiting longer',
        );
        break;
      }
      await new Promise<void>((resolve) => {
        this.fdWaiters.push(resolve);
        setTimeout(resolve, 20).unref();
      });
    }
    releaseLock(this.cfg.dir);
  }

  private notifyFds(): void {
    const waiters = this.fdWaiters;
    this.fdWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
