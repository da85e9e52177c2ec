import type { DataSource } from 'typeorm';
import { PlanLedgerError } from '../shared/errors';
import type { WebhookSubscriptionRow } from '../store/entities';
import {
  addSubscription,
  listDeliveries,
  listSubscriptions,
  parseEventFilter,
  redactSecret,
  removeSubscription,
  type ReplaySelection,
  setSubscriptionEnabled,
} from './webhook-subscriptions';
import { type PrivateAllowance, resolveWebhookTarget, WebhookTargetError } from './webhook-target';

/**
 * The subscription and delivery operations of `plan-ledger webhooks ...` and of the admin API's
 * `/v1/webhooks/...` (docs/webhooks.md): one set of argument checks, views and refusals. Each
 * caller names its arguments (`--url` on the command line, `url` in a body) in `names`.
 */

/** A refused admin request: a malformed argument (usage) or an unknown subscription (not-found). */
export class WebhookAdminError extends PlanLedgerError {
  override readonly name = 'WebhookAdminError';
  constructor(
    message: string,
    readonly kind: 'usage' | 'not-found',
  ) {
    super(message);
  }
}

/** How a caller names each argument in its errors, and how its user lists the subscriptions. */
export interface WebhookArgumentNames {
  url: string;
  events: string;
  enabled: string;
  subscription: string;
  status: string;
  limit: string;
  ids: string;
  /** Where the subscriptions are listed, for a not-found error. */
  listedBy: string;
}

export const CLI_WEBHOOK_NAMES: WebhookArgumentNames = {
  url: '--url',
  events: '--events',
  enabled: '--disabled',
  subscription: '--subscription',
  status: '--status',
  limit: '--limit',
  ids: 'ids',
  listedBy: 'plan-ledger webhooks list',
};

/** Delivery statuses `deliveries` filters on. */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'dead'] as const;
/** Statuses `replay` selects when no id is given. */
export const REPLAY_STATUSES = ['dead', 'delivered'] as const;
/** Most deliveries one `deliveries` call lists. */
export const DELIVERIES_MAX = 10_000;

/** A subscription as shown: its secret in full only in the answer that created it. */
export interface SubscriptionView {
  id: string;
  url: string;
  events: string;
  enabled: boolean;
  secret: string;
  createdAt: string;
}

export function subscriptionView(row: WebhookSubscriptionRow, secret: 'full' | 'redacted'): SubscriptionView {
  return {
    id: row.id,
    url: row.url,
    events: row.eventTypes,
    enabled: row.enabled,
    secret: secret === 'full' ? row.secret : redactSecret(row.secret),
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

/** A subscription to store, its arguments checked. */
export interface NewSubscription {
  url: string;
  eventTypes: string;
  enabled: boolean;
}

/**
 * Checks a subscription's URL (resolved now: the same check as at each send) and event filter;
 * WebhookAdminError (usage) naming the argument that is wrong.
 */
export async function checkNewSubscription(
  input: { url?: unknown; events?: unknown; enabled?: unknown },
  allowPrivate: PrivateAllowance,
  names: WebhookArgumentNames,
): Promise<NewSubscription> {
  if (typeof input.url !== 'string' || input.url.trim() === '')
    throw usage(names.url, 'must be the https:// (or http://) URL the webhooks are POSTed to');
  const rawEvents = Array.isArray(input.events) ? input.events.join(',') : input.events;
  if (rawEvents !== undefined && typeof rawEvents !== 'string')
    throw usage(names.events, 'must be a comma-separated list of webhook types, or *');
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean')
    throw usage(names.enabled, 'must be true or false');
  const eventTypes = checked(() => parseEventFilter(rawEvents, names.events));
  const url = input.url.trim();
  try {
    await resolveWebhookTarget(url, allowPrivate);
  } catch (err) {
    if (err instanceof WebhookTargetError) throw usage(names.url, err.message);
    throw err;
  }
  return { url, eventTypes, enabled: input.enabled ?? true };
}

/** Stores a checked subscription; its view holds the secret in full (shown this once). */
export async function createSubscription(ds: DataSource, input: NewSubscription): Promise<SubscriptionView> {
  return subscriptionView(await addSubscription(ds, input), 'full');
}

/** Every subscription, oldest first, secrets redacted. */
export async function subscriptionViews(ds: DataSource): Promise<SubscriptionView[]> {
  return (await listSubscriptions(ds)).map((r) => subscriptionView(r, 'redacted'));
}

/** Removes a subscription and its deliveries not yet sent; not-found when there is none. */
export async function removeSubscriptionById(ds: DataSource, id: string, names: WebhookArgumentNames): Promise<void> {
  if (!(await removeSubscription(ds, subscriptionId(id)))) throw notFound(id, names);
}

/** Enables or disables a subscription; not-found when there is none. */
export async function enableSubscriptionById(
  ds: DataSource,
  id: string,
  enabled: boolean,
  names: WebhookArgumentNames,
): Promise<void> {
  if (!(await setSubscriptionEnabled(ds, subscriptionId(id), enabled))) throw notFound(id, names);
}

/** Which deliveries `deliveries` lists. */
export interface DeliveryFilter {
  subscriptionId?: string;
  status?: (typeof DELIVERY_STATUSES)[number];
  limit: number;
}

export function parseDeliveryFilter(
  raw: { subscription?: unknown; status?: unknown; limit?: unknown },
  names: WebhookArgumentNames,
): DeliveryFilter {
  const limitText = raw.limit === undefined ? '50' : String(raw.limit).trim();
  const limit = /^\d+$/.test(limitText) ? Number(limitText) : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > DELIVERIES_MAX)
    throw usage(names.limit, `"${String(raw.limit)}" is not a whole number from 1 to ${DELIVERIES_MAX}`);
  return {
    subscriptionId: optionalText(raw.subscription, names.subscription),
    status: statusOf(raw.status, DELIVERY_STATUSES, names.status),
    limit,
  };
}

/** A delivery as listed (its body left out): status, attempts, last error, instants as ISO-8601. */
export interface DeliveryView {
  id: string;
  subscriptionId: string;
  eventType: string;
  eventId: string;
  planId: string;
  status: string;
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

/** The newest deliveries the filter takes. */
export async function deliveryViews(ds: DataSource, filter: DeliveryFilter): Promise<DeliveryView[]> {
  const rows = await listDeliveries(ds, filter);
  return rows.map((r) => ({
    id: r.id,
    subscriptionId: r.subscriptionId,
    eventType: r.eventType,
    eventId: r.eventId,
    planId: r.planId,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: new Date(r.nextAttemptAt).toISOString(),
    lastError: r.lastError,
    createdAt: new Date(r.createdAt).toISOString(),
    deliveredAt: r.deliveredAt ? new Date(r.deliveredAt).toISOString() : null,
  }));
}

/** Which deliveries `replay` sends again: these ids, or else those of a status (dead by default). */
export function parseReplaySelection(
  raw: { ids?: unknown; subscription?: unknown; status?: unknown },
  names: WebhookArgumentNames,
): ReplaySelection {
  const ids = raw.ids ?? [];
  if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string' || id.trim() === '' || id.length > 64))
    throw usage(names.ids, 'must be a list of delivery ids (webhook-id values)');
  if (ids.length > DELIVERIES_MAX) throw usage(names.ids, `at most ${DELIVERIES_MAX} ids at once`);
  return {
    ids: (ids as string[]).map((id) => id.trim()),
    subscriptionId: optionalText(raw.subscription, names.subscription),
    status: statusOf(raw.status, REPLAY_STATUSES, names.status),
  };
}

function statusOf<T extends string>(raw: unknown, allowed: readonly T[], argument: string): T | undefined {
  if (raw === undefined || raw === false || raw === null) return undefined;
  const s = String(raw);
  if (!(allowed as readonly string[]).includes(s)) throw usage(argument, `"${s}" is not one of ${allowed.join(', ')}`);
  return s as T;
}

function optionalText(raw: unknown, argument: string): string | undefined {
  if (raw === undefined || raw === false || raw === null || raw === '') return undefined;
  if (typeof raw !== 'string' || raw.length > 64) throw usage(argument, 'must be a subscription id (wh-...)');
  return raw.trim();
}

function subscriptionId(id: string): string {
  return String(id).trim();
}

function notFound(id: string, names: WebhookArgumentNames): WebhookAdminError {
  return new WebhookAdminError(`webhook subscription "${id}" not found (${names.listedBy} shows them)`, 'not-found');
}

function usage(argument: string, problem: string): WebhookAdminError {
  return new WebhookAdminError(`${argument}: ${problem}`, 'usage');
}

/** Runs a check that throws a plain Error with its own one line; rethrown as a usage error. */
function checked<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof WebhookAdminError) throw err;
    throw new WebhookAdminError((err as Error).message, 'usage');
  }
}
