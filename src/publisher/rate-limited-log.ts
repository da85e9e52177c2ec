import type { Logger } from '../shared/logger';

/**
 * One log line per outcome, without one line per event: the first occurrence is logged at once,
 * later ones are summed and logged at most once per interval (`count` = occurrences since the
 * previous line), and `flush()` writes what is still pending. Summing every line's `count` gives
 * the exact total, which is how "every drop is logged" holds at a million drops per second.
 */
export class RateLimitedLog {
  private pending = 0;
  private lastDetails: Record<string, unknown> = {};
  private lastLoggedAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly level: 'warn' | 'error',
    private readonly msg: string,
    /** @defaultValue `5_000` */
    private readonly intervalMs = 5_000,
  ) {}

  /** Counts `count` occurrences; `details` (the latest wins) go on the next line. */
  note(count: number, details: Record<string, unknown> = {}): void {
    this.pending += count;
    this.lastDetails = details;
    const now = Date.now();
    if (now - this.lastLoggedAt >= this.intervalMs) {
      this.flush();
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), this.intervalMs - (now - this.lastLoggedAt));
      this.timer.unref();
    }
  }

  flush(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending === 0) return;
    this.logger[this.level]({ ...this.lastDetails, count: this.pending }, this.msg);
    this.pending = 0;
    this.lastLoggedAt = Date.now();
  }
}
