import { bool, defineEntity, ext, int, label, text, ts, uuid } from './define-entity';

/** `webhook_subscriptions`: where a webhook goes (`plan-ledger webhooks add`, docs/webhooks.md). */
export interface WebhookSubscriptionRow {
  id: string;
  url: string;
  /** `whsec_` and the base64 of the signing key (Standard Webhooks). */
  secret: string;
  /** Comma-separated webhook types, or `*` for every one. */
  eventTypes: string;
  enabled: boolean;
  createdAt: Date;
}

export const WebhookSubscriptionEntity = defineEntity<WebhookSubscriptionRow>(
  'WebhookSubscription',
  'webhook_subscriptions',
  {
    id: ext('id', { primary: true }),
    url: label('url', 2000),
    secret: label('secret', 100),
    eventTypes: label('event_types', 500),
    enabled: bool('enabled'),
    createdAt: ts('created_at'),
  },
);

/** How far a delivery got: `pending` (to send), `delivered` (a 2xx answer), `dead` (its attempts spent). */
export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'dead';

/** `webhook_deliveries`: the outbox, one row per triggering event and subscription. */
export interface WebhookDeliveryRow {
  /** The `webhook-id` header: the same on every attempt. */
  id: string;
  subscriptionId: string;
  eventType: string;
  eventId: string;
  planId: string;
  /** The JSON body sent. */
  payload: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
}

export const WebhookDeliveryEntity = defineEntity<WebhookDeliveryRow>('WebhookDelivery', 'webhook_deliveries', {
  id: uuid('id', { primary: true }),
  subscriptionId: ext('subscription_id'),
  eventType: label('event_type', 50),
  eventId: uuid('event_id'),
  planId: ext('plan_id'),
  payload: text('payload', false),
  status: label('status', 20),
  attempts: int('attempts'),
  nextAttemptAt: ts('next_attempt_at'),
  leaseOwner: uuid('lease_owner', { nullable: true }),
  leaseUntil: ts('lease_until', true),
  lastError: label('last_error', 500, true),
  createdAt: ts('created_at'),
  deliveredAt: ts('delivered_at', true),
});
