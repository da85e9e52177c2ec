import type { Violation } from '../contracts';

/**
 * What `publish()` says, at once. `ok: true` means accepted: the event is in memory or in the spill
 * journal and will reach Redis without the caller doing anything more.
 * - `invalid`: the event breaks the contract; not sent, counted in `rejected`.
 * - `closed`: published after `close()`; not sent, counted in `rejected`.
 * - `dropped`: valid, but memory and the spill journal are both full; counted in `dropped` and logged.
 */
export type PublishResult =
  | { ok: true; eventId: string; seq: number }
  | { ok: false; reason: 'invalid' | 'closed'; violations: Violation[] }
  | { ok: false; reason: 'dropped'; eventId: string; seq: number; violations: [] };

/** The plan an event belongs to, as the typed helpers take it. */
export interface PlanRef {
  planId: string;
  sessionId: string;
}

/** Stamps a caller may set instead of the publisher (e.g. `seq` when resuming a plan in a new process). */
export interface EventStamps {
  eventId?: string;
  seq?: number;
  occurredAt?: string;
}

/** Counters since the publisher was created, and what it holds now. */
export interface PublisherStats {
  /** Events Redis confirmed (from memory and from the journal). */
  published: number;
  /** Events held in memory now (queued, awaiting retry or in flight). */
  buffered: number;
  /** Events written to the spill journal since start. */
  spilled: number;
  /** Of `published`, events drained from the journal (including any a previous process left). */
  recovered: number;
  /** Valid events lost: journal full, or a journal write/read that failed. Each one is logged. */
  dropped: number;
  /** Events refused by `publish()` (contract violations, or published after close). */
  rejected: number;
  /** Bytes the journal occupies now (files plus staged). */
  journalBytes: number;
  /**
   * Redis commands succeed: the queue answered its probe and the last send (if any) succeeded. A
   * connection that is open but whose commands fail (MOVED, CROSSSLOT, READONLY, timeouts) is not ready.
   */
  redisReady: boolean;
}

/** What `close()` reports. */
export interface CloseResult {
  /** Everything accepted reached Redis before the deadline. */
  flushed: boolean;
  /** Events left for the next publisher on this journal directory (memory spilled at close, counted in `spilled`). */
  spilledAtClose: number;
}

/** Where the publisher stood when it was taken (`durabilityMark()`), for `whenDurable`. */
export interface DurabilityMark {
  /** Accepted events that were lost after their acceptance, up to then (a failed journal write or fsync). */
  readonly losses: number;
}

/**
 * What `whenDurable` found: `durable`, every event accepted before the call is in Redis or fsynced
 * in the journal; `lost`, it is, but events accepted since the mark may have been lost on the way
 * (a journal write or fsync failed); `timeout`, some are still in memory (Redis slow or unreachable,
 * the journal not written yet).
 */
export type Durability = 'durable' | 'lost' | 'timeout';
