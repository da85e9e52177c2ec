/** Retry delays and abortable sleeps shared by the job retry loop and the database gate. */

export interface BackoffPolicy {
  /** First delay. @defaultValue 250 ms */
  baseMs: number;
  /** Largest delay. @defaultValue 30000 ms */
  maxMs: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffPolicy> = Object.freeze({ baseMs: 250, maxMs: 30_000 });

/**
 * Delay before retry number `failures` (1 = after the first failure): exponential, capped, with
 * "equal jitter" (half fixed, half random) so workers that failed together do not retry together,
 * yet no retry comes sooner than half its step.
 */
export function backoffDelay(
  failures: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, Math.min(30, failures - 1)));
  return Math.round(exp / 2 + random() * (exp / 2));
}

/** Resolves after `ms`, or at once when `signal` aborts; never rejects. Timers do not hold the process. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const timer = setTimeout(done, ms);
    timer.unref?.();
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** Rejects with `message` when `promise` takes longer than `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
