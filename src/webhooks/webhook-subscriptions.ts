import { randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { ENTITY, type WebhookDeliveryRow, type WebhookSubscriptionRow } from '../store/entities';
import { webhookTypes } from '../store/outbox/webhook-triggers';

/** A subscription's filter: `*` (every webhook type) or a comma-separated list of types; `argument` names it in the error. */
export function parseEventFilter(raw: string | undefined, argument = '--events'): string {
  const text = (raw ?? '*').trim();
  if (text === '*' || text === '') return '*';
  const known = webhookTypes();
  const types = [
    ...new Set(
      text
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t.length > 0),
    ),
  ];
  const unknown = types.find((t) => !known.includes(t));
  if (unknown !== undefined)
    throw new Error(`${argument}: "${unknown}" is not a webhook type; the types: ${known.join(', ')} (or * for all)`);
  return types.join(',');
}

/** A new signing secret: `whsec_` and the base64 of 24 random bytes (Standard Webhooks' form). */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** A secret as it may be shown after its creation: its prefix and last 4 characters. */
export function redactSecret(secret: string): string {
  return `whsec_…${secret.slice(-4)}`;
}

/** Stores a subscription (its URL checked by the caller); returns it with its secret in full, shown once. */
export async function addSubscription(
  m: DataSource | EntityManager,
  input: { url: string; eventTypes: string; enabled?: boolean; secret?: string },
  now = new Date(),
): Promise<WebhookSubscriptionRow> {
  const row: WebhookSubscriptionRow = {
    id: `wh-${randomBytes(6).toString('hex')}`,
    url: input.url,
    secret: input.secret ?? newSecret(),
    eventTypes: input.eventTypes,
    enabled: input.enabled ?? true,
    createdAt: now,
  };
  await m.getRepository<WebhookSubscriptionRow>(ENTITY.webhookSubscription).insert(row);
  return row;
}

/** Every subscription, oldest first. */
export async function listSubscriptions(m: DataSource | EntityManager): Promise<WebhookSubscriptionRow[]> {
  return m
    .getRepository<WebhookSubscriptionRow>(ENTITY.webhookSubscription)
    .find({ order: { createdAt: 'ASC', id: 'ASC' } });
}

/** Removes a subscription and its deliveries not yet sent; false when there is none under `id`. */
export async function removeSubscription(ds: DataSource, id: string): Promise<boolean> {
  return ds.transaction(async (m) => {
    const found = await m.getRepository<WebhookSubscriptionRow>(ENTITY.webhookSubscription).delete({ id });
    if (!found.affected) return false;
    await m.getRepository<WebhookDeliveryRow>(ENTITY.webhookDelivery).delete({ subscriptionId: id });
    return true;
  });
}

/** Enables or disables a subscription; false when there is none under `id`. */
export async function setSubscriptionEnabled(
  m: DataSource | EntityManager,
  id: string,
  enabled: boolean,
): Promise<boolean> {
  const r = await m.getRepository<WebhookSubscriptionRow>(ENTITY.webhookSubscription).update({ id }, { enabled });
  return (r.affected ?? 0) > 0;
}

/** Which deliveries `webhooks replay` sends again. */
export interface ReplaySelection {
  /** These deliveries (their ids), whatever their status. */
  ids?: string[];
  /** Else: the deliveries of this subscription (or of all) with this status. */
  subscriptionId?: string;
  status?: 'dead' | 'delivered';
}

/**
 * Marks deliveries to be sent again at once, their attempts reset (the same `webhook-id`, so a
 * receiver that has one already can tell); returns how many.
 */
export async function replayDeliveries(
  m: DataSource | EntityManager,
  sel: ReplaySelection,
  now = new Date(),
): Promise<number> {
  const qb = m
    .getRepository<WebhookDeliveryRow>(ENTITY.webhookDelivery)
    .createQueryBuilder()
    .update()
    .set({ status: 'pending', attempts: 0, nextAttemptAt: now, leaseOwner: null, leaseUntil: null });
  if (sel.ids && sel.ids.length > 0) qb.where('id IN (:...ids)', { ids: sel.ids });
  else qb.where('status = :status', { status: sel.status ?? 'dead' });
  if (sel.subscriptionId) qb.andWhere('subscription_id = :sub', { sub: sel.subscriptionId });
  const r = await qb.execute();
  return r.affected ?? 0;
}

/** Deliveries, newest first: for `webhooks deliveries` (which ones are dead, and why). */
export async function listDeliveries(
  m: DataSource | EntityManager,
  filter: { subscriptionId?: string; status?: string; limit: number },
): Promise<Omit<WebhookDeliveryRow, 'payload'>[]> {
  const where: Record<string, string> = {};
  if (filter.subscriptionId) where.subscriptionId = filter.subscriptionId;
  if (filter.status) where.status = filter.status;
  return m.getRepository<WebhookDeliveryRow>(ENTITY.webhookDelivery).find({
    select: {
      id: true,
      subscriptionId: true,
      eventType: true,
      eventId: true,
      planId: true,
      status: true,
      attempts: true,
      nextAttemptAt: true,
      lastError: true,
      createdAt: true,
      deliveredAt: true,
    },
    where,
    order: { createdAt: 'DESC', id: 'ASC' },
    take: filter.limit,
  });
}
