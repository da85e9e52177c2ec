import { sleep } from '../shared/backoff';
import type { ApprovalChange } from '../store/approvals/approval-apply';
import type { RedisClient } from './connect-redis';

/**
 * The Redis channel on which the worker announces, after the commit, the approvals a transaction
 * requested or decided: one message per transaction, their approvalIds separated by spaces (an
 * approvalId has none). `serve` subscribes once and wakes the requests of
 * `GET /v1/approvals/{id}?waitMs=` waiting on them. Not a queue: a message sent while nobody
 * listens is lost, so waiters also read the database again now and then.
 */
export function approvalChannel(prefix: string): string {
  return `${prefix}:approvals:changed`;
}

/**
 * The channels on which a worker of an earlier version announces one approvalId a message; `serve`
 * listens to them too, so a worker not yet upgraded still wakes its waiters.
 */
export function earlierApprovalChannels(prefix: string): { requested: string; decided: string } {
  return { requested: `${prefix}:approvals:requested`, decided: `${prefix}:approvals:decided` };
}

/** The approvalIds a message of the approval channels names. */
export function approvalIdsOf(message: string): string[] {
  return message.split(' ').filter((id) => id.length > 0);
}

/**
 * Publishes a transaction's changes in one message; not awaited by the commit, failures ignored
 * (a waiter finds the change at its next read).
 */
export function announceApprovalChanges(redis: RedisClient, prefix: string, changes: readonly ApprovalChange[]): void {
  if (changes.length === 0) return;
  redis.publish(approvalChannel(prefix), approvalChangesMessage(changes)).catch(() => undefined);
}

/** The message of the approval channel that names these changes' approvals: their ids, once each, separated by spaces. */
export function approvalChangesMessage(changes: readonly ApprovalChange[]): string {
  return [...new Set(changes.map((c) => c.approvalId))].join(' ');
}

/**
 * A watch on one approval: registered before the approval is read, so a message that arrives
 * between the read and the wait is not missed.
 */
export interface ApprovalWatch {
  /** Forgets the messages seen so far: call before each read. */
  reset(): void;
  /** Resolves at once when a message came since the last reset, else at the next one, after `ms`, or on abort. Never rejects. */
  wait(ms: number, signal?: AbortSignal): Promise<void>;
  close(): void;
}

/**
 * The watches of one process, by approvalId, woken by the messages of the approval channels. The
 * subscriber is a connection of its own (a subscribed connection runs no other command); ioredis
 * subscribes again after a reconnection.
 */
export class ApprovalWakeups {
  private readonly watches = new Map<string, Set<() => void>>();
  private readonly onMessage = (_channel: string, message: string) => {
    for (const id of approvalIdsOf(message)) this.wake(id);
  };

  constructor(
    private readonly subscriber: RedisClient,
    private readonly prefix: string,
  ) {}

  /** Subscribes; resolves once Redis confirmed, rejects when it cannot (watches then see only their timers). */
  async start(): Promise<void> {
    this.subscriber.on('message', this.onMessage);
    const { requested, decided } = earlierApprovalChannels(this.prefix);
    await this.subscriber.subscribe(approvalChannel(this.prefix), requested, decided);
  }

  watch(approvalId: string): ApprovalWatch {
    let woken = false;
    let release: (() => void) | undefined;
    const onMessage = () => {
      woken = true;
      release?.();
    };
    let set = this.watches.get(approvalId);
    if (!set) this.watches.set(approvalId, (set = new Set()));
    const watchers = set;
    watchers.add(onMessage);
    return {
      reset: () => void (woken = false),
      wait: async (ms, signal) => {
        if (woken) return;
        const woke = new AbortController();
        release = () => woke.abort();
        await sleep(ms, signal ? AbortSignal.any([signal, woke.signal]) : woke.signal);
        release = undefined;
      },
      close: () => {
        release?.();
        watchers.delete(onMessage);
        if (watchers.size === 0 && this.watches.get(approvalId) === watchers) this.watches.delete(approvalId);
      },
    };
  }

  /** Watches open now (all approvals). */
  get watching(): number {
    let n = 0;
    for (const set of this.watches.values()) n += set.size;
    return n;
  }

  private wake(approvalId: string): void {
    const set = this.watches.get(approvalId);
    if (set) for (const onMessage of [...set]) onMessage();
  }

  /** Ends every wait and drops the subscriber's connection. */
  close(): void {
    this.subscriber.off('message', this.onMessage);
    for (const id of [...this.watches.keys()]) this.wake(id);
    // no QUIT: while Redis is unreachable it would wait for a reconnection that may never come
    this.subscriber.disconnect();
  }
}
