import { type Env, integer, read } from '../config/env-readers';
import { parseAllowance, type PrivateAllowance } from './webhook-target';

/** How the worker delivers webhooks (docs/webhooks.md#configuration). */
export interface WebhookConfig {
  /** Run the delivery loop in this worker (WEBHOOKS_DELIVERY=off: another worker delivers). */
  enabled: boolean;
  allowPrivate: PrivateAllowance;
  /** Attempts before a delivery is dead. */
  maxAttempts: number;
  /** Delay after the first failed attempt; it doubles each time up to `backoffMaxMs`. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** One attempt's time limit (connect, send, answer). */
  timeoutMs: number;
  /** How often the loop looks for due deliveries when it found none. */
  pollMs: number;
  /** How long a claimed delivery stays this worker's; after that another worker may send it again. */
  leaseMs: number;
  /** Deliveries claimed (and sent concurrently) at once. */
  batchSize: number;
  /** How long the loop sends with the subscriptions it read (URL, secret, enabled) before reading them again. */
  subscriptionsRefreshMs: number;
  /**
   * Longest the loop waits while its worker has an ingest backlog before it sends anyway
   * (docs/webhooks.md#deliveries-wait-for-an-ingest-backlog); 0: it never waits.
   */
  backlogYieldMs: number;
}

export const DEFAULT_WEBHOOK_CONFIG: Readonly<WebhookConfig> = Object.freeze({
  enabled: true,
  allowPrivate: parseAllowance(undefined),
  maxAttempts: 20,
  backoffBaseMs: 1_000,
  backoffMaxMs: 600_000,
  timeoutMs: 10_000,
  pollMs: 200,
  leaseMs: 60_000,
  batchSize: 64,
  subscriptionsRefreshMs: 1_000,
  backlogYieldMs: 10_000,
});

/** The variables, for `worker --help` and docs/configuration.md. */
export const WEBHOOK_ENV_HELP: ReadonlyArray<[string, string]> = [
  ['WEBHOOKS_DELIVERY', 'on (default) or off: whether this worker sends webhooks'],
  [
    'WEBHOOKS_ALLOW_PRIVATE',
    'addresses/CIDRs (or 1 for all) webhooks may reach although loopback, private or link-local',
  ],
  ['WEBHOOKS_MAX_ATTEMPTS', 'attempts before a delivery is dead (default 20)'],
  ['WEBHOOKS_BACKOFF_BASE_MS', 'delay after the first failure, doubling (default 1000)'],
  ['WEBHOOKS_BACKOFF_MAX_MS', 'longest delay between attempts (default 600000)'],
  ['WEBHOOKS_TIMEOUT_MS', "one attempt's time limit (default 10000)"],
  ['WEBHOOKS_LEASE_MS', 'how long a claimed delivery is held by its worker (default 60000; at least 2x the timeout)'],
  [
    'WEBHOOKS_BACKLOG_YIELD_MS',
    'longest deliveries wait while the worker has an ingest backlog (default 10000; 0: never)',
  ],
];

/** The webhook settings from the environment; throws one line naming the variable that is wrong. */
export function webhookConfigFromEnv(env: Env): WebhookConfig {
  const c = { ...DEFAULT_WEBHOOK_CONFIG };
  const num = (name: string, min: number, max: number, fallback: number) => {
    const raw = read(env, name);
    if (raw === undefined) return fallback;
    try {
      return integer(raw, min, max);
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message}`, { cause: err });
    }
  };
  const delivery = (read(env, 'WEBHOOKS_DELIVERY') ?? 'on').toLowerCase();
  if (!['on', 'off'].includes(delivery)) throw new Error(`WEBHOOKS_DELIVERY: "${delivery}" is not on or off`);
  c.enabled = delivery === 'on';
  c.allowPrivate = parseAllowance(read(env, 'WEBHOOKS_ALLOW_PRIVATE'));
  c.maxAttempts = num('WEBHOOKS_MAX_ATTEMPTS', 1, 1000, c.maxAttempts);
  c.backoffBaseMs = num('WEBHOOKS_BACKOFF_BASE_MS', 1, 86_400_000, c.backoffBaseMs);
  c.backoffMaxMs = num('WEBHOOKS_BACKOFF_MAX_MS', c.backoffBaseMs, 86_400_000, c.backoffMaxMs);
  c.timeoutMs = num('WEBHOOKS_TIMEOUT_MS', 100, 300_000, c.timeoutMs);
  c.leaseMs = num('WEBHOOKS_LEASE_MS', 1_000, 86_400_000, c.leaseMs);
  c.backlogYieldMs = num('WEBHOOKS_BACKLOG_YIELD_MS', 0, 3_600_000, c.backlogYieldMs);
  if (c.leaseMs < c.timeoutMs * 2)
    throw new Error(
      `WEBHOOKS_LEASE_MS: ${c.leaseMs} is less than twice WEBHOOKS_TIMEOUT_MS (${c.timeoutMs}): a slow attempt could be sent twice at once`,
    );
  return c;
}
