import { randomUUID } from 'node:crypto';
import type { DataSource, Repository } from 'typeorm';
import { backoffDelay, sleep } from '../shared/backoff';
import type { Logger } from '../shared/logger';
import { ENTITY, type WebhookDeliveryRow, type WebhookSubscriptionRow } from '../store/entities';
import { SubscriptionCache } from '../store/outbox/webhook-outbox';
import { type ClaimedDelivery, claimDeliveries, instantMs } from '../store/sql/delivery-claims';
import { sqlDialectOf } from '../store/sql/dialects';
import { idsIn } from '../store/sql/id-lists';
import type { SqlDialect } from '../store/sql/sql-dialect';
import type { WebhookConfig } from './webhook-config';
import type { WebhookMetrics } from './webhook-metrics';
import { sendWebhook, signedHeaders, WebhookAgents, type SendResult } from './webhook-sender';
import { type ResolvedTarget, resolveWebhookTarget, WebhookTargetError } from './webhook-target';

/**
 * Rounds a loop has in flight at once: the next claim starts while the deliveries claimed before
 * are sent and recorded (the claim skips rows under a lease, so rounds never share one).
 */
const ROUNDS_IN_FLIGHT = 4;

/** The ingesting worker's side of the loop: whether events are waiting for it beyond what it takes at once. */
export interface IngestBacklog {
  /** True while the worker has a backlog to store; a rejection counts as none. */
  backlogged(): Promise<boolean>;
}

/** What one round of the loop did. */
export interface DeliveryRound {
  claimed: number;
  delivered: number;
  failed: number;
  dead: number;
}

/**
 * Sends the outbox's due deliveries (docs/webhooks.md#delivery): claims up to `batchSize` of them
 * with a lease (an UPDATE that only takes rows whose lease is free, so several workers never send
 * one row at once, and a worker killed mid-send leaves rows another takes after the lease), signs
 * each per Standard Webhooks, POSTs it to the address its URL was checked to resolve to, and
 * records the outcome: delivered, failed (next attempt after an exponential backoff) or dead (its
 * attempts spent). A crash after the receiver's answer and before the record sends it again, with
 * the same `webhook-id`: receivers deduplicate on it.
 */
export class WebhookDeliveryLoop {
  private readonly repo: Repository<WebhookDeliveryRow>;
  private readonly dialect: SqlDialect;
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private readonly agents: WebhookAgents;
  private readonly subscriptions: SubscriptionCache;
  /** When the loop began waiting for the ingest backlog; undefined while it is not waiting nor draining after one. */
  private yieldingSince: number | undefined;

  constructor(
    private readonly ds: DataSource,
    private readonly config: WebhookConfig,
    private readonly logger: Logger,
    private readonly metrics?: WebhookMetrics,
    /** The worker whose ingest the loop gives way to (config.backlogYieldMs). @defaultValue none: it never waits */
    private readonly ingest?: IngestBacklog,
  ) {
    this.repo = ds.getRepository<WebhookDeliveryRow>(ENTITY.webhookDelivery);
    this.dialect = sqlDialectOf(ds);
    this.agents = new WebhookAgents(config.batchSize * ROUNDS_IN_FLIGHT);
    this.subscriptions = new SubscriptionCache(ds, config.subscriptionsRefreshMs);
    metrics?.observe({ pending: () => this.pending() });
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Stops claiming; resolves once the rounds in flight have recorded their outcomes. */
  async close(): Promise<void> {
    this.stopping.abort();
    await this.running;
    this.agents.destroy();
  }

  private async loop(): Promise<void> {
    let failures = 0;
    const inFlight = new Set<Promise<unknown>>();
    const onFailure = async (err: unknown) => {
      failures++;
      this.logger.warn({ err, failures }, 'webhook delivery round failed; retrying');
      await sleep(backoffDelay(failures, { baseMs: 500, maxMs: 30_000 }), this.stopping.signal);
    };
    while (!this.stopping.signal.aborted) {
      try {
        if (await this.yields()) {
          await sleep(this.config.pollMs, this.stopping.signal);
          continue;
        }
        const claimed = await this.claim(new Date());
        failures = 0;
        if (claimed.rows.length > 0) {
          // rows whose outcome is not recorded stay leased: another round takes them after the lease
          const sending: Promise<unknown> = this.deliver(claimed)
            .catch(onFailure)
            .finally(() => inFlight.delete(sending));
          inFlight.add(sending);
        }
        if (inFlight.size >= ROUNDS_IN_FLIGHT) await Promise.race(inFlight);
        if (claimed.rows.length < this.config.batchSize) {
          // nothing due left: a wait that reached its limit has been made up for
          this.yieldingSince = undefined;
          await sleep(this.config.pollMs, this.stopping.signal);
        }
      } catch (err) {
        await onFailure(err);
      }
    }
    await Promise.all(inFlight);
  }

  /**
   * Whether to wait before the next claim: the worker has an ingest backlog, and the loop has
   * waited less than backlogYieldMs for it. Once it has waited that long it sends until no full
   * round is due, then may wait again: under a standing backlog a delivery waits at most
   * backlogYieldMs plus the time to send what is due.
   */
  private async yields(): Promise<boolean> {
    if (!this.ingest || this.config.backlogYieldMs <= 0) return false;
    const now = performance.now();
    if (this.yieldingSince !== undefined && now - this.yieldingSince >= this.config.backlogYieldMs) return false;
    const backlogged = await this.ingest.backlogged().catch(() => false);
    if (!backlogged) {
      this.yieldingSince = undefined;
      return false;
    }
    this.yieldingSince ??= now;
    return true;
  }

  /** Claims the due deliveries, sends them and records what came of each. */
  async round(now = new Date()): Promise<DeliveryRound> {
    return this.deliver(await this.claim(now));
  }

  /** Sends claimed deliveries and records what came of each. */
  private async deliver(claimed: { token: string; rows: ClaimedDelivery[] }): Promise<DeliveryRound> {
    const round: DeliveryRound = { claimed: claimed.rows.length, delivered: 0, failed: 0, dead: 0 };
    if (claimed.rows.length === 0) return round;
    const subs = await this.subscriptions.byId(claimed.rows.map((r) => r.subscriptionId));
    // each subscription's URL resolved and checked once a round, whatever its number of deliveries
    const targets = new Map<string, Promise<ResolvedTarget>>();
    const targetOf = (sub: WebhookSubscriptionRow) => {
      let target = targets.get(sub.id);
      if (!target) {
        target = resolveWebhookTarget(sub.url, this.config.allowPrivate);
        target.catch(() => undefined);
        targets.set(sub.id, target);
      }
      return target;
    };
    const results = await Promise.all(
      claimed.rows.map((row) => this.attempt(row, subs.get(row.subscriptionId), targetOf)),
    );
    const done: ClaimedDelivery[] = [];
    // failures with the same attempt count and error recorded in one UPDATE
    const failed = new Map<string, { attempts: number; error: string; rows: ClaimedDelivery[] }>();
    for (let i = 0; i < claimed.rows.length; i++) {
      const row = claimed.rows[i];
      const result = results[i];
      if (result.ok) {
        done.push(row);
        continue;
      }
      const key = `${row.attempts}\u0000${result.error}`;
      const group = failed.get(key) ?? { attempts: row.attempts, error: result.error, rows: [] };
      group.rows.push(row);
      failed.set(key, group);
    }
    for (const group of failed.values()) round[await this.recordFailures(group, claimed.token)] += group.rows.length;
    await this.recordDelivered(done, claimed.token);
    round.delivered = done.length;
    return round;
  }

  private async attempt(
    row: ClaimedDelivery,
    sub: WebhookSubscriptionRow | undefined,
    targetOf: (sub: WebhookSubscriptionRow) => Promise<ResolvedTarget>,
  ): Promise<SendResult> {
    if (!sub) return { ok: false, error: 'its subscription was removed' };
    if (!sub.enabled) return { ok: false, error: 'its subscription is disabled' };
    try {
      const target = await targetOf(sub);
      const headers = signedHeaders(sub.secret, row.id, row.payload, new Date());
      return await sendWebhook(target, headers, row.payload, this.config.timeoutMs, this.agents.for(target));
    } catch (err) {
      if (err instanceof WebhookTargetError) return { ok: false, error: err.message };
      throw err;
    }
  }

  /** Takes up to batchSize due rows whose lease is free, under a new lease token; returns them. */
  private async claim(now: Date): Promise<{ token: string; rows: ClaimedDelivery[] }> {
    const token = randomUUID();
    const rows = await claimDeliveries(this.ds, this.dialect, {
      token,
      at: now,
      until: new Date(now.getTime() + this.config.leaseMs),
      limit: this.config.batchSize,
    });
    return { token, rows };
  }

  private async recordDelivered(rows: ClaimedDelivery[], token: string): Promise<void> {
    if (rows.length === 0) return;
    const at = new Date();
    await this.repo
      .createQueryBuilder()
      .update()
      .set({ status: 'delivered', deliveredAt: at, leaseOwner: null, leaseUntil: null, lastError: null })
      .where(...idsIn(this.dialect, 'id', idsOf(rows)))
      .andWhere('lease_owner = :token', { token })
      .execute();
    for (const row of rows) {
      this.metrics?.attempts.inc({ outcome: 'delivered' });
      this.metrics?.lagSeconds.observe(Math.max(0, at.getTime() - row.createdAtMs) / 1000);
    }
  }

  /** Records a failed attempt of deliveries that had made `attempts` before: retried after a backoff, or dead. */
  private async recordFailures(
    group: { attempts: number; error: string; rows: ClaimedDelivery[] },
    token: string,
  ): Promise<'failed' | 'dead'> {
    const { error, rows } = group;
    const attempts = group.attempts + 1;
    const dead = attempts >= this.config.maxAttempts;
    const delay = backoffDelay(attempts, { baseMs: this.config.backoffBaseMs, maxMs: this.config.backoffMaxMs });
    await this.repo
      .createQueryBuilder()
      .update()
      .set({
        status: dead ? 'dead' : 'pending',
        attempts,
        nextAttemptAt: new Date(Date.now() + delay),
        leaseOwner: null,
        leaseUntil: null,
        lastError: error.slice(0, 500),
      })
      .where(...idsIn(this.dialect, 'id', idsOf(rows)))
      .andWhere('lease_owner = :token', { token })
      .execute();
    const outcome = dead ? 'dead' : 'failed';
    for (const row of rows) {
      this.metrics?.attempts.inc({ outcome });
      (dead ? this.logger.warn : this.logger.debug).call(
        this.logger,
        { deliveryId: row.id, subscriptionId: row.subscriptionId, type: row.eventType, attempts, error },
        dead
          ? 'webhook delivery is dead: its attempts are spent (webhooks replay sends it again)'
          : 'webhook delivery failed; retrying',
      );
    }
    return outcome;
  }

  /** Deliveries not yet delivered nor dead, and when the oldest was written. */
  async pending(): Promise<{ count: number; oldestAtMs: number | undefined }> {
    const row = await this.repo
      .createQueryBuilder('d')
      .select('COUNT(*)', 'n')
      .addSelect('MIN(d.createdAt)', 'oldest')
      .where('d.status = :pending', { pending: 'pending' })
      .getRawOne<{ n: unknown; oldest: unknown }>();
    const oldest = row?.oldest;
    return {
      count: Number(row?.n ?? 0),
      oldestAtMs: oldest === null || oldest === undefined ? undefined : instantMs(oldest),
    };
  }
}

const idsOf = (rows: readonly ClaimedDelivery[]) => rows.map((r) => r.id);
