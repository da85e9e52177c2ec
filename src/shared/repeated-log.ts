import type { Logger } from './logger';

/** An error's message, or the thrown value as text. */
export function messageOf(err: unknown): string {
  return String((err as Error | undefined)?.message ?? err);
}

export interface RepeatedLogOptions {
  /** @defaultValue 10000 */
  windowMs?: number;
  /** Which errors count as the same kind. @defaultValue the error's message */
  kindOf?: (err: unknown) => string;
  /** @defaultValue 'error' */
  level?: 'warn' | 'error';
}

/**
 * One log line for an error that repeats: the first of a kind is logged whole; the same kind again
 * within `windowMs` is only counted, and once the window ends one line says how many there were.
 * A worker whose every fetch fails (Redis refusing writes, a script error) would otherwise write
 * thousands of identical lines a second.
 */
export class RepeatedLog {
  private readonly kinds = new Map<string, { count: number; timer: NodeJS.Timeout; sample: string }>();

  private readonly windowMs: number;
  private readonly kindOf: (err: unknown) => string;
  private readonly level: 'warn' | 'error';

  constructor(
    private readonly logger: Logger,
    private readonly msg: string,
    options: RepeatedLogOptions = {},
  ) {
    this.windowMs = options.windowMs ?? 10_000;
    this.kindOf = options.kindOf ?? messageOf;
    this.level = options.level ?? 'error';
  }

  /** Reports every 'error' event of `emitter` (a BullMQ queue or worker) through a new RepeatedLog. */
  static of(
    emitter: { on(event: 'error', listener: (err: Error) => void): unknown },
    logger: Logger,
    msg: string,
    options: RepeatedLogOptions = {},
  ): RepeatedLog {
    const log = new RepeatedLog(logger, msg, options);
    emitter.on('error', (err) => log.report(err));
    return log;
  }

  /** Logs `err` at the configured level if it is the first of its kind in the window, else counts it. */
  report(err: unknown): void {
    const kind = this.kindOf(err);
    const seen = this.kinds.get(kind);
    if (seen) {
      seen.count++;
      return;
    }
    this.logger[this.level]({ err }, this.msg);
    const timer = setTimeout(() => this.summarise(kind), this.windowMs);
    timer.unref();
    this.kinds.set(kind, { count: 0, timer, sample: messageOf(err) });
  }

  /** Logs the counts of the windows still open (at shutdown). */
  flush(): void {
    for (const kind of [...this.kinds.keys()]) this.summarise(kind);
  }

  private summarise(kind: string): void {
    const seen = this.kinds.get(kind);
    if (!seen) return;
    clearTimeout(seen.timer);
    this.kinds.delete(kind);
    if (seen.count > 0)
      this.logger[this.level](
        { repeated: seen.count, windowMs: this.windowMs, message: seen.sample },
        `${this.msg} (repeated)`,
      );
  }
}
