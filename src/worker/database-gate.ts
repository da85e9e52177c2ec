import type { Logger } from '../shared/logger';
import { BackoffPolicy, backoffDelay, sleep, withTimeout } from '../shared/backoff';
import { StandingFault, standingFault } from '../store/db-errors';

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
  /** Writes failing in a row with a standing fault before the worker pauses. @defaultValue 2 */
  faultsToPause?: number;
}

type State = 'up' | 'checking' | 'down';

/**
 * Knows whether the database is reachable, so the worker stops pulling jobs during an outage
 * instead of spending their retry budget on writes that cannot succeed. A transient write failure
 * triggers one probe at once: a deadlock leaves the database reachable and nothing pauses; a
 * refused connection pauses the worker, then probes with backoff until the database answers.
 *
 * It is also the breaker for standing faults (a missing table, column or function, a permission
 * denied, a collation conflict: errors no event can cause, see db-errors.ts). Writes failing with
 * one `faultsToPause` times in a row pause the worker with the fault as the reason (`fault`, in
 * readiness); the jobs already fetched keep retrying their writes with backoff, without spending
 * their retry budget, and the first write that commits again, once an operator has repaired the
 * database, resumes the worker.
 */
export class DatabaseGate {
  private state: State = 'up';
  private faults = 0;
  private standing: (StandingFault & { since: number }) | undefined;
  /** What the listeners were last told: paused (false) or fetching (true). */
  private told = true;
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

  /** Whether the database answers (a standing fault leaves it answering). */
  get isUp(): boolean {
    return this.state === 'up';
  }

  /** Whether the worker should fetch jobs: the database answers and no standing fault paused it. */
  get isOpen(): boolean {
    return this.state === 'up' && this.standing === undefined;
  }

  /** Why the breaker paused the worker, in one line; undefined while it has not. */
  get fault(): string | undefined {
    const f = this.standing;
    if (!f) return undefined;
    const since = new Date(f.since).toISOString();
    return `paused since ${since} by a standing database fault, ${f.kind}${f.code ? ` (${f.code})` : ''}: ${f.message}; retrying until it is repaired`;
  }

  /**
   * A write failed for a reason that may pass (check the database unless a check is running) or
   * for a standing fault (count it; pause the worker when repeated).
   */
  reportFailure(err: unknown): void {
    if (this.stopped.signal.aborted) return;
    const fault = standingFault(err);
    if (fault) return void this.countFault(fault);
    if (this.state !== 'up') return;
    this.state = 'checking';
    void this.watch(err);
  }

  /** A write committed: no standing fault is left; resume the worker if one had paused it. */
  reportSuccess(): void {
    this.faults = 0;
    if (!this.standing) return;
    const { logger } = this.options;
    logger.warn(
      { fault: this.standing.kind, pausedMs: Date.now() - this.standing.since },
      'database fault repaired (a write committed): resuming the worker',
    );
    this.standing = undefined;
    void this.sync();
  }

  private async countFault(fault: StandingFault): Promise<void> {
    this.faults++;
    if (this.standing || this.faults < (this.options.faultsToPause ?? 2)) return;
    this.standing = { ...fault, since: Date.now() };
    this.options.logger.error(
      { fault: fault.kind, code: fault.code, err: fault.message },
      'standing database fault: pausing the worker until it is repaired (the fetched jobs keep retrying)',
    );
    await this.sync();
  }

  /** Tells the listeners when whether to fetch has changed. */
  private async sync(): Promise<void> {
    const open = this.isOpen;
    if (open === this.told) return;
    this.told = open;
    const what = open ? 'resume' : 'pause';
    await this.tell(open).catch((e) => this.options.logger.error({ err: e }, `could not ${what} the worker`));
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
          await this.sync();
        }
        await sleep(backoffDelay(failures + 1, policy), this.stopped.signal);
      }
    }
    if (this.stopped.signal.aborted) return;
    const wasDown = this.state === 'down';
    this.state = 'up';
    if (wasDown) {
      logger.warn(
        { downMs: Date.now() - (this.downSince ?? Date.now()) },
        'database reachable again: resuming the worker',
      );
      await this.sync();
    }
    for (const wake of this.waiters.splice(0)) wake();
  }
}
