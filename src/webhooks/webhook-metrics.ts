import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What the pending-delivery gauges read at scrape time. */
export interface OutboxProbe {
  pending(): Promise<{ count: number; oldestAtMs: number | undefined }>;
}

/** The webhook delivery metrics, on the worker's registry (docs/webhooks.md#metrics). */
export class WebhookMetrics {
  /** Attempts by outcome: `delivered` (2xx), `failed` (retried later), `dead` (attempts spent). */
  readonly attempts: Counter<'outcome'>;
  /** From the commit of the triggering event to the 2xx answer. */
  readonly lagSeconds: Histogram<never>;
  private probe: OutboxProbe | undefined;
  private read: ReturnType<OutboxProbe['pending']> | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    this.attempts = new Counter({
      name: 'plan_ledger_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), failed (to retry), dead (attempts spent)',
      labelNames: ['outcome'],
      registers,
    });
    this.lagSeconds = new Histogram({
      name: 'plan_ledger_webhook_delivery_lag_seconds',
      help: 'Seconds from the commit of the triggering event to the 2xx answer of the receiver',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800],
      registers,
    });
    const pending = () => (this.read ??= this.probe!.pending().finally(() => (this.read = undefined)));
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    new Gauge({
      name: 'plan_ledger_webhook_deliveries_pending',
      help: 'Webhook deliveries not yet delivered nor dead',
      registers,
      async collect() {
        if (self.probe) this.set((await pending()).count);
      },
    });
    new Gauge({
      name: 'plan_ledger_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest webhook delivery not yet delivered (0 when none)',
      registers,
      async collect() {
        if (!self.probe) return;
        const { oldestAtMs } = await pending();
        this.set(oldestAtMs === undefined ? 0 : Math.max(0, (Date.now() - oldestAtMs) / 1000));
      },
    });
  }

  observe(probe: OutboxProbe): void {
    this.probe = probe;
  }
}
