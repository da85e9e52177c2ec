import { hash as digest } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { uuidOf } from '../../shared/uuid';
import { ENTITY, type WebhookDeliveryRow, type WebhookSubscriptionRow } from '../entities';
import { sqlDialectOf } from '../sql/dialects';
import { triggeringEventTypes, type TriggeringEvent, WEBHOOK_TRIGGERS, webhookBody } from './webhook-triggers';

/** How long a writer keeps the subscriptions it read before reading them again. */
export const SUBSCRIPTIONS_REFRESH_MS = 2_000;

/** An enabled subscription as the outbox matches it. */
export interface OutboxSubscription {
  id: string;
  eventTypes: string;
}

/**
 * The delivery id (the `webhook-id` header): a UUID derived from the subscription, the webhook
 * type and the event, so the row a transaction writes has the same id however often it is re-run.
 */
export function deliveryId(subscriptionId: string, type: string, eventId: string): string {
  return uuidOf(digest('sha1', `webhook\u0000${subscriptionId}\u0000${type}\u0000${eventId}`, 'buffer'), 5);
}

/**
 * The TriggeringEvent of a stall check finding (STALL_CHECK_FINDINGS) about `subject` (a plan id, an
 * approval id) at `at` (a stall's `stalled_at`; an approval expires once, so none): its eventId is
 * a UUID derived from them, so the delivery ids written for it are the same however often the
 * check that finds it runs.
 */
export function findingEvent(
  type: string,
  subject: string,
  at: Date | null,
  envelope: Pick<TriggeringEvent, 'planId' | 'sessionId' | 'seq' | 'occurredAt'>,
  payload: Record<string, unknown>,
): TriggeringEvent {
  const key = `finding\u0000${type}\u0000${subject}\u0000${at === null ? '' : at.toISOString()}`;
  return { ...envelope, eventId: uuidOf(digest('sha1', key, 'buffer'), 5), type, payload };
}

/** The deliveries stored events call for: one per event, matching trigger and subscription. */
export function deliveriesFor(
  events: readonly TriggeringEvent[],
  subscriptions: readonly OutboxSubscription[],
  now: Date,
): WebhookDeliveryRow[] {
  const rows: WebhookDeliveryRow[] = [];
  if (subscriptions.length === 0) return rows;
  const sources = triggeringEventTypes();
  for (const e of events) {
    if (!sources.has(e.type)) continue;
    for (const trigger of WEBHOOK_TRIGGERS) {
      if (trigger.from !== e.type || (trigger.when && !trigger.when(e))) continue;
      const wanting = subscriptions.filter((s) => filterTakes(s.eventTypes, trigger.type));
      if (wanting.length === 0) continue;
      const payload = webhookBody(trigger, e);
      for (const s of wanting)
        rows.push(
          pendingDelivery(
            {
              id: deliveryId(s.id, trigger.type, e.eventId),
              subscriptionId: s.id,
              eventType: trigger.type,
              eventId: e.eventId,
              planId: e.planId,
              payload,
            },
            now,
          ),
        );
    }
  }
  return rows;
}

/** A delivery row not yet tried: due at `now`, unleased. */
export function pendingDelivery(
  what: Pick<WebhookDeliveryRow, 'id' | 'subscriptionId' | 'eventType' | 'eventId' | 'planId' | 'payload'>,
  now: Date,
): WebhookDeliveryRow {
  return {
    ...what,
    status: 'pending',
    attempts: 0,
    nextAttemptAt: now,
    leaseOwner: null,
    leaseUntil: null,
    lastError: null,
    createdAt: now,
    deliveredAt: null,
  };
}

/** Whether a subscription's filter (`*`, or a comma-separated list) takes the webhook type `type`. */
export function filterTakes(filter: string, type: string): boolean {
  return filter === '*' || filter.split(',').includes(type);
}

/**
 * Writes the outbox rows of stored events, in the caller's transaction, with the dialect's row
 * store (chunked to the database's limits); returns how many.
 */
export async function writeDeliveries(m: EntityManager, rows: WebhookDeliveryRow[]): Promise<number> {
  await sqlDialectOf(m.connection).rows(m).insert(ENTITY.webhookDelivery, rows);
  return rows.length;
}

/**
 * The subscriptions as last read, for the writers of events (the enabled ones, to match events
 * with) and the delivery loop (every one by id, to sign and send with): read at most every
 * `refreshMs` (SUBSCRIPTIONS_REFRESH_MS), so a `webhooks add`, `disable` or `enable` reaches every
 * writer and every delivery loop within that time.
 */
export class SubscriptionCache {
  private list: readonly OutboxSubscription[] = [];
  private rows: ReadonlyMap<string, WebhookSubscriptionRow> = new Map();
  private readAt = -Infinity;
  private reading: Promise<void> | null = null;

  constructor(
    private readonly ds: DataSource,
    private readonly refreshMs = SUBSCRIPTIONS_REFRESH_MS,
  ) {}

  /** The enabled subscriptions. */
  async current(): Promise<readonly OutboxSubscription[]> {
    if (performance.now() - this.readAt >= this.refreshMs) await this.read();
    return this.list;
  }

  /**
   * Every subscription by id; read again when one of `ids` is not among them (added since the last
   * read; absent after it: removed).
   */
  async byId(ids: Iterable<string>): Promise<ReadonlyMap<string, WebhookSubscriptionRow>> {
    let stale = performance.now() - this.readAt >= this.refreshMs;
    if (!stale) for (const id of ids) if (!this.rows.has(id)) stale = true;
    if (stale) await this.read();
    return this.rows;
  }

  private read(): Promise<void> {
    this.reading ??= this.ds
      .getRepository<WebhookSubscriptionRow>(ENTITY.webhookSubscription)
      .find()
      .then((rows) => {
        this.rows = new Map(rows.map((r) => [r.id, r]));
        this.list = rows.filter((r) => r.enabled).map((r) => ({ id: r.id, eventTypes: r.eventTypes }));
        this.readAt = performance.now();
      })
      .finally(() => {
        this.reading = null;
      });
    return this.reading;
  }
}
