/**
 * Guessing API keys through the console's sign-in: after `maxFailures` refused keys from one
 * client address within `windowMs`, that address is answered 429 until the window has passed,
 * whatever key it sends (a right key included, so a guess that lands cannot be told apart).
 * A successful sign-in clears the address's count. Memory is bounded: at most `maxClients`
 * addresses are tracked; the oldest window is dropped first.
 */
export interface SignInThrottleOptions {
  /** @defaultValue 10 */
  maxFailures?: number;
  /** @defaultValue 60000 */
  windowMs?: number;
  /** @defaultValue 10000 */
  maxClients?: number;
  now?: () => number;
}

interface Window {
  startedAt: number;
  failures: number;
}

export class SignInThrottle {
  private readonly windows = new Map<string, Window>();
  private readonly maxFailures: number;
  private readonly windowMs: number;
  private readonly maxClients: number;
  private readonly now: () => number;

  constructor(opts: SignInThrottleOptions = {}) {
    this.maxFailures = opts.maxFailures ?? 10;
    this.windowMs = opts.windowMs ?? 60_000;
    this.maxClients = opts.maxClients ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  /** Seconds the client must wait before it may try again, or 0 if it may try now. */
  retryAfterSeconds(client: string): number {
    const w = this.current(client);
    if (!w || w.failures < this.maxFailures) return 0;
    return Math.max(1, Math.ceil((w.startedAt + this.windowMs - this.now()) / 1000));
  }

  failed(client: string): void {
    const w = this.current(client);
    if (w) {
      w.failures += 1;
      return;
    }
    if (this.windows.size >= this.maxClients) {
      const oldest = this.windows.keys().next();
      if (!oldest.done) this.windows.delete(oldest.value);
    }
    this.windows.set(client, { startedAt: this.now(), failures: 1 });
  }

  succeeded(client: string): void {
    this.windows.delete(client);
  }

  private current(client: string): Window | undefined {
    const w = this.windows.get(client);
    if (w && this.now() - w.startedAt >= this.windowMs) {
      this.windows.delete(client);
      return undefined;
    }
    return w;
  }
}
