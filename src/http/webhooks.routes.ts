import type { FastifyInstance } from 'fastify';
import type { DataSource } from 'typeorm';
import {
  checkNewSubscription,
  createSubscription,
  deliveryViews,
  enableSubscriptionById,
  parseDeliveryFilter,
  parseReplaySelection,
  removeSubscriptionById,
  subscriptionViews,
  WebhookAdminError,
  type WebhookArgumentNames,
} from '../webhooks/webhook-admin';
import { replayDeliveries } from '../webhooks/webhook-subscriptions';
import type { PrivateAllowance } from '../webhooks/webhook-target';
import { webhookRouteSchemas as S } from './openapi-schemas';

/** The body's and the query's fields, as the shared checks name them in a 400. */
const HTTP_NAMES: WebhookArgumentNames = {
  url: 'url',
  events: 'events',
  enabled: 'enabled',
  subscription: 'subscription',
  status: 'status',
  limit: 'limit',
  ids: 'ids',
  listedBy: 'GET /v1/webhooks/subscriptions',
};

type Body = Record<string, unknown>;

/**
 * The admin API of webhooks (admin scope; docs/webhooks.md#the-admin-api): the same operations,
 * checks and answers as `plan-ledger webhooks ...` (webhook-admin.ts). A subscription's secret is
 * in the 201 that created it and never again. Malformed arguments: 400; an unknown subscription: 404.
 */
export function registerWebhookRoutes(app: FastifyInstance, ds: DataSource, allowPrivate: PrivateAllowance): void {
  // bodies are checked by the shared checks, with their wording: the schemas only document
  const admin = { config: { scope: 'admin' }, validatorCompiler: () => () => true } as const;
  const id = (req: { params: unknown }) => (req.params as Record<string, string>).id;

  app.get('/v1/webhooks/subscriptions', { ...admin, schema: S.list }, async () => ({
    subscriptions: await subscriptionViews(ds),
  }));

  app.post('/v1/webhooks/subscriptions', { ...admin, schema: S.add }, async (req, reply) => {
    const body = objectBody(req.body, ['url', 'events', 'enabled']);
    const view = await createSubscription(ds, await checkNewSubscription(body, allowPrivate, HTTP_NAMES));
    return reply
      .code(201)
      .header('cache-control', 'no-store')
      .header('location', `/v1/webhooks/subscriptions/${encodeURIComponent(view.id)}`)
      .send(view);
  });

  app.delete('/v1/webhooks/subscriptions/:id', { ...admin, schema: S.remove }, async (req) => {
    await removeSubscriptionById(ds, id(req), HTTP_NAMES);
    return { removed: id(req) };
  });

  for (const [action, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const)
    app.post(`/v1/webhooks/subscriptions/:id/${action}`, { ...admin, schema: S.enable(action) }, async (req) => {
      await enableSubscriptionById(ds, id(req), enabled, HTTP_NAMES);
      return { id: id(req), enabled };
    });

  app.get('/v1/webhooks/deliveries', { ...admin, schema: S.deliveries }, async (req) => ({
    deliveries: await deliveryViews(ds, parseDeliveryFilter(req.query as Body, HTTP_NAMES)),
  }));

  app.post('/v1/webhooks/deliveries/replay', { ...admin, schema: S.replay }, async (req) => {
    const selection = parseReplaySelection(objectBody(req.body, ['ids', 'subscription', 'status']), HTTP_NAMES);
    return { replayed: await replayDeliveries(ds, selection) };
  });
}

/** The body as an object of the fields named (none: `{}`); 400 for anything else. */
function objectBody(raw: unknown, fields: readonly string[]): Body {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new WebhookAdminError(`body: must be a JSON object with ${fields.join(', ')}`, 'usage');
  const unknown = Object.keys(raw).find((k) => !fields.includes(k));
  if (unknown !== undefined)
    throw new WebhookAdminError(
      `${unknown}: is not a field of this request; its fields: ${fields.join(', ')}`,
      'usage',
    );
  return raw as Body;
}
