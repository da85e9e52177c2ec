/**
 * On-disk layout of the spill journal, one directory per publisher:
 * - `publisher.lock`: the pid of the publisher that owns the directory;
 * - `segment-<12 digits>.jsonl`: append-only records, oldest = lowest number;
 * - `segment-<n>.jsonl.offset`: how many bytes of that segment are already in Redis (written after
 *   each successful addBulk, by rename, so it is either the old or the new value).
 *
 * A record is one line and one BullMQ job: `<key>\t<event count>\t[<event JSON>,...]\n`. The key is
 * the job id, fixed when the record is written, so draining the same record twice (a crash between
 * addBulk and the offset update) adds a job BullMQ ignores as a duplicate. A publisher with
 * QUEUE_SHARDS=N of 2 or more writes records of one shard each, keyed `<jobId>#<shard>/<N>`: the
 * drain sends such a record to its shard as it is, and parses only records of another layout (or
 * unmarked) to route their events by plan id. Publishers before the mark read marked records as
 * unreadable.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PublisherConfigError } from './publisher-options';

export const LOCK_FILE = 'publisher.lock';
const SEGMENT_PATTERN = /^segment-(\d{12})\.jsonl$/;
/**
 * Bytes a record adds to its events: `b-<uuid>` (38) + `#<shard>/<N>` (at most 8) + 2 tabs + count +
 * brackets + newline, rounded up.
 */
export const RECORD_OVERHEAD_BYTES = 64;

/** A record's key: its job id, and with several shards the shard of its events (`<jobId>#<shard>/<N>`). */
export function recordKey(jobId: string, shard: number, shards: number): string {
  return shards > 1 ? `${jobId}#${shard}/${shards}` : jobId;
}

const RECORD_KEY = /^(b-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:#(\d{1,3})\/(\d{1,3}))?$/;

/** A record key's job id and, when marked, its shard and layout; undefined when it is not a key. */
export function parseRecordKey(key: string): { id: string; shard?: number; shards?: number } | undefined {
  const m = RECORD_KEY.exec(key);
  if (m === null) return undefined;
  if (m[2] === undefined) return { id: m[1] };
  const shard = Number(m[2]);
  const shards = Number(m[3]);
  return shard < shards ? { id: m[1], shard, shards } : undefined;
}

export interface Segment {
  no: number;
  file: string;
  /** Bytes written. */
  size: number;
  /** Bytes already stored in Redis (persisted in the .offset file). */
  confirmed: number;
  /** Bytes handed to the reader. */
  readOffset: number;
  /** Open while this process appends to it. */
  fd: number | undefined;
  /** No more appends: a previous process's segment, or rotated. */
  sealed: boolean;
  syncing: boolean;
  dirty: boolean;
  offsetWriting: boolean;
  offsetDirty: boolean;
  deleted: boolean;
}

export function segmentFile(dir: string, no: number): string {
  return path.join(dir, `segment-${String(no).padStart(12, '0')}.jsonl`);
}

export function newSegment(file: string, no: number, size: number, confirmed: number, fd?: number): Segment {
  return {
    no,
    file,
    size,
    confirmed,
    readOffset: confirmed,
    fd,
    sealed: fd === undefined,
    syncing: false,
    dirty: false,
    offsetWriting: false,
    offsetDirty: false,
    deleted: false,
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the directory for this process. A lock held by a live process (this one included: two
 * publishers in one process) is a configuration error; a dead owner's lock is taken over, and with
 * it the segments the crashed publisher left.
 */
export function acquireLock(dir: string): void {
  const lock = path.join(dir, LOCK_FILE);
  try {
    fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const owner = Number.parseInt(fs.readFileSync(lock, 'utf8'), 10);
  if (Number.isSafeInteger(owner) && owner > 0 && isAlive(owner)) {
    throw new PublisherConfigError([
      `journalDir ${dir} is in use by process ${owner}; give each publisher its own journalDir`,
    ]);
  }
  fs.writeFileSync(lock, String(process.pid));
}

export function releaseLock(dir: string): void {
  try {
    const lock = path.join(dir, LOCK_FILE);
    if (fs.readFileSync(lock, 'utf8') === String(process.pid)) fs.unlinkSync(lock);
  } catch {
    // Already gone: nothing to release.
  }
}

/** Segments left in the directory, oldest first; fully drained ones and stray offset files are removed. */
export function scanSegments(dir: string): Segment[] {
  const names = fs.readdirSync(dir);
  const segments: Segment[] = [];
  for (const name of names) {
    const match = SEGMENT_PATTERN.exec(name);
    if (match === null) continue;
    const file = path.join(dir, name);
    const size = fs.statSync(file).size;
    const confirmed = Math.min(readOffset(file), size);
    if (confirmed >= size) removeSegmentFiles(file);
    else segments.push(newSegment(file, Number(match[1]), size, confirmed));
  }
  for (const name of names) {
    const owner = name.replace(/\.offset(\.tmp)?$/, '');
    if (owner !== name && !segments.some((s) => path.basename(s.file) === owner))
      fs.rmSync(path.join(dir, name), { force: true });
  }
  return segments.sort((a, b) => a.no - b.no);
}

function readOffset(file: string): number {
  try {
    const value = Number.parseInt(fs.readFileSync(`${file}.offset`, 'utf8'), 10);
    return Number.isSafeInteger(value) && value >= 0 ? value : 0;
  } catch {
    return 0;
  }
}

export function removeSegmentFiles(file: string): void {
  fs.rmSync(file, { force: true });
  fs.rmSync(`${file}.offset`, { force: true });
}

/** Replaces the offset file by rename: a crash leaves the old or the new value, never half of one. */
export function writeOffset(file: string, offset: number, done: (err: Error | null) => void): void {
  const tmp = `${file}.offset.tmp`;
  fs.writeFile(tmp, String(offset), (err) => {
    if (err) return done(err);
    fs.rename(tmp, `${file}.offset`, done);
  });
}

/**
 * `unconfirmed-jobs`: the jobs a closed publisher sent whose finish it had not seen (one
 * `<jobId>\t<shard>/<N>` line each), so that the next publisher on the directory waits for them in
 * `stored()`. Replaced whole at each close (temporary file, fsync, rename); none removes it.
 */
const UNCONFIRMED_JOBS = 'unconfirmed-jobs';
const UNCONFIRMED_LINE = /^(b-[0-9a-f-]{36}(?:\.s\d{1,3})?)\t(\d{1,3})\/(\d{1,3})$/;

export interface SentJob {
  id: string;
  shard: number;
}

/** The jobs kept by the previous publisher; `skipped` counts those of another QUEUE_SHARDS layout. */
export function readUnconfirmedJobs(dir: string, shards: number): { jobs: SentJob[]; skipped: number } {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, UNCONFIRMED_JOBS), 'utf8');
  } catch {
    return { jobs: [], skipped: 0 };
  }
  const jobs: SentJob[] = [];
  let skipped = 0;
  for (const line of text.split('\n')) {
    const m = UNCONFIRMED_LINE.exec(line);
    if (m === null) continue;
    if (Number(m[3]) === shards && Number(m[2]) < shards) jobs.push({ id: m[1], shard: Number(m[2]) });
    else skipped++;
  }
  return { jobs, skipped };
}

export function writeUnconfirmedJobs(dir: string, jobs: readonly SentJob[], shards: number): void {
  const file = path.join(dir, UNCONFIRMED_JOBS);
  if (jobs.length === 0) {
    fs.rmSync(file, { force: true });
    return;
  }
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeFileSync(fd, jobs.map((j) => `${j.id}\t${j.shard}/${shards}\n`).join(''));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}
