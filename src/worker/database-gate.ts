import type { Logger } from '../shared/logger';
import { BackoffPolicy, backoffDelay, sleep, withTimeout } from '../shared/backoff';

export interface DatabaseGateOptions {
  /** A cheap round trip (`SELECT 1`); resolves when the database answers. */
  probe(): Promise<unknown>;
  /** Called once when the database is found unreachable: stop fetching jobs (see also `onChange`). */
  onDown?(): void | Promise<void>;
  /** Called once when it answers again: fetch again. */
  onUp?(): void | Promise<void>;
  logger: Logger;
  /** Delays between probes while down. @defaultValue 250 ms doubling to 5 s, jittered */
  backoff?: BackoffPolicy;
  /** A probe slower than this counts as a failure (a black-holed host never answers). @defaultValue 5000 ms */
  probeTimeoutMs?: number;
}

type State = 'up' | 'checking' | 'down';

/**
 * Knows whether the database is reachable, so the worker stops pulling jobs during an outage
 * instead of spending their retry budget on writes that cannot succeed. A transient write failure
 * triggers one probe at once: a deadlock leaves the database reachable and nothing pauses; a
 * refused connection pauses the worker, then probes with backoff until the database answers.
 */
export class DatabaseGate {
  private state: State = 'up';
  private waiters: (() => void)[] = [];
  private readonly stopped = new AbortController();
  private downSince: number | undefined;
  private readonly listeners: Array<(up: boolean) => void | Promise<void>> = [];

  constructor(private readonly options: DatabaseGateOptions) {}

  /** Also tell `listener` when the database goes down (false) and comes back (true). */
  onChange(listener: (up: boolean) => void | Promise<void>): void {
    this.listeners.push(listener);
  }

  private async tell(up: boolean): Promise<void> {
    await (up ? this.options.onUp?.() : this.options.onDown?.());
    for (const listener of this.listeners) await listener(up);
  }

  get isUp(): boolean {
    return this.state === 'up';
  }

  /** A write failed for a transient reason; check the database unless a check is running. */
  reportFailure(err: unknown): void {
    if (this.state !== 'up' || this.stopped.signal.aborted) return;
    this.state = 'checking';
    void this.watch(err);
  }

  /** Resolves when the database is up, at `deadline` (epoch ms), or when `signal` aborts. */
  async whenUp(deadline: number, signal?: AbortSignal): Promise<void> {
    if (this.state === 'up') return;
    const ms = deadline - Date.now();
    if (ms <= 0) return;
    let wake!: () => void;
    const up = new Promise<void>((resolve) => {
      wake = resolve;
      this.waiters.push(resolve);
    });
    const ctl = new AbortController();
    const onAbort = () => ctl.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.stopped.signal.addEventListener('abort', onAbort, { once: true });
    await Promise.race([up, sleep(ms, ctl.signal)]);
    ctl.abort();
    signal?.removeEventListener('abort', onAbort);
    this.stopped.signal.removeEventListener('abort', onAbort);
    this.waiters = this.waiters.filter((w) => w !== wake);
  }

  stop(): void {
    this.stopped.abort();
  }

  private async watch(cause: unknown): Promise<void> {
    const { logger } = this.options;
    const policy = this.options.backoff ?? { baseMs: 250, maxMs: 5_000 };
    for (let failures = 0; !this.stopped.signal.aborted; failures++) {
      try {
        await withTimeout(
          Promise.resolve().then(() => this.options.probe()),
          this.options.probeTimeoutMs ?? 5_000,
          'database probe timed out',
        );
        break;
      } catch (err) {
        if (this.state === 'checking') {
          this.state = 'down';
          this.downSince = Date.now();
          logger.warn({ err, cause }, 'database unreachable: pausing the worker until it answers');
          await this.tell(false).catch((e) => logger.error({ err: e }, 'could not pause the worker'));
        }
        await sleep(backoffDelay(failures + 1, policy), this.stopped.signal);
      }
    }
    if (this.stopped.signal.aborted) return;
    if (this.state === 'down') {
      logger.warn(
        { downMs: Date.now() - (this.downSince ?? Date.now()) },
        'database reachable again: resuming the worker',
      );
      await this.tell(true).catch((e) => logger.error({ err: e }, 'could not resume the worker'));
    }
    this.state = 'up';
    for (const wake of this.waiters.splice(0)) wake();
  }
}
