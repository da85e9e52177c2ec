import { type CliContext, printJson } from '../cli-context';
import { renderTable } from '../../queries/text-output';
import type { WebhookSubscriptionRow } from '../../store/entities';
import { webhookConfigFromEnv } from '../../webhooks/webhook-config';
import {
  addSubscription,
  listDeliveries,
  listSubscriptions,
  parseEventFilter,
  redactSecret,
  removeSubscription,
  replayDeliveries,
  setSubscriptionEnabled,
} from '../../webhooks/webhook-subscriptions';
import { resolveWebhookTarget, WebhookTargetError } from '../../webhooks/webhook-target';
import { CliError } from '../exit-codes';
import { withDataSource } from '../with-data-source';

type Opts = Record<string, string | boolean | undefined>;

const STATUSES = ['pending', 'delivered', 'dead'];

function subscriptionJson(row: WebhookSubscriptionRow, secret: 'full' | 'redacted') {
  return {
    id: row.id,
    url: row.url,
    events: row.eventTypes,
    enabled: row.enabled,
    secret: secret === 'full' ? row.secret : redactSecret(row.secret),
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

function usage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new CliError((err as Error).message, 'usage');
  }
}

export async function webhooksAdd(ctx: CliContext, opts: Opts): Promise<void> {
  const eventTypes = usage(() => parseEventFilter(typeof opts.events === 'string' ? opts.events : undefined));
  const config = usage(() => webhookConfigFromEnv(ctx.env));
  const url = String(opts.url);
  try {
    await resolveWebhookTarget(url, config.allowPrivate);
  } catch (err) {
    if (err instanceof WebhookTargetError) throw new CliError(`--url: ${err.message}`, 'usage');
    throw err;
  }
  const row = await withDataSource(ctx, (ds) => addSubscription(ds, { url, eventTypes, enabled: !opts.disabled }));
  if (opts.json) return printJson(ctx, subscriptionJson(row, 'full'));
  ctx.out(`stored webhook subscription ${row.id}: ${row.url} (${row.eventTypes})`);
  ctx.out(`signing secret (shown this once; keep it where the receiver verifies): ${row.secret}`);
}

export async function webhooksList(ctx: CliContext, opts: Opts): Promise<void> {
  const rows = await withDataSource(ctx, (ds) => listSubscriptions(ds));
  if (opts.json) return printJson(ctx, { subscriptions: rows.map((r) => subscriptionJson(r, 'redacted')) });
  if (rows.length === 0) return ctx.out('no webhook subscriptions (plan-ledger webhooks add --url ... adds one)');
  const table = rows.map((r) => {
    const j = subscriptionJson(r, 'redacted');
    return [j.id, j.enabled ? 'yes' : 'no', j.events, j.secret, j.url];
  });
  for (const line of renderTable(['ID', 'ENABLED', 'EVENTS', 'SECRET', 'URL'], table, 80)) ctx.out(line);
}

export async function webhooksRemove(ctx: CliContext, id: string, opts: Opts): Promise<void> {
  const removed = await withDataSource(ctx, (ds) => removeSubscription(ds, String(id).trim()));
  if (!removed)
    throw new CliError(`webhook subscription "${id}" not found (plan-ledger webhooks list shows them)`, 'not-found');
  if (opts.json) return printJson(ctx, { removed: id });
  ctx.out(`removed webhook subscription ${id} and its deliveries not yet sent`);
}

export async function webhooksEnable(ctx: CliContext, id: string, enabled: boolean, opts: Opts): Promise<void> {
  const found = await withDataSource(ctx, (ds) => setSubscriptionEnabled(ds, String(id).trim(), enabled));
  if (!found)
    throw new CliError(`webhook subscription "${id}" not found (plan-ledger webhooks list shows them)`, 'not-found');
  if (opts.json) return printJson(ctx, { id, enabled });
  ctx.out(`webhook subscription ${id} ${enabled ? 'enabled' : 'disabled'}`);
}

function statusOpt(raw: Opts[string], allowed: string[]): string | undefined {
  if (raw === undefined || raw === false) return undefined;
  const s = String(raw);
  if (!allowed.includes(s)) throw new CliError(`--status: "${s}" is not one of ${allowed.join(', ')}`, 'usage');
  return s;
}

export async function webhooksDeliveries(ctx: CliContext, opts: Opts): Promise<void> {
  const status = statusOpt(opts.status, STATUSES);
  const limit = Number(opts.limit ?? 50);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
    throw new CliError(`--limit: "${opts.limit}" is not a whole number from 1 to 10000`, 'usage');
  const subscriptionId = typeof opts.subscription === 'string' ? opts.subscription : undefined;
  const rows = await withDataSource(ctx, (ds) => listDeliveries(ds, { subscriptionId, status, limit }));
  const json = rows.map((r) => ({
    ...r,
    nextAttemptAt: new Date(r.nextAttemptAt).toISOString(),
    createdAt: new Date(r.createdAt).toISOString(),
    deliveredAt: r.deliveredAt ? new Date(r.deliveredAt).toISOString() : null,
  }));
  if (opts.json) return printJson(ctx, { deliveries: json });
  if (rows.length === 0) return ctx.out('no webhook deliveries');
  const table = json.map((r) => [r.id, r.subscriptionId, r.eventType, r.status, r.attempts, r.lastError ?? '']);
  for (const line of renderTable(['ID', 'SUBSCRIPTION', 'TYPE', 'STATUS', 'ATTEMPTS', 'LAST ERROR'], table))
    ctx.out(line);
}

export async function webhooksReplay(ctx: CliContext, ids: string[], opts: Opts): Promise<void> {
  const status = statusOpt(opts.status, ['dead', 'delivered']) as 'dead' | 'delivered' | undefined;
  const subscriptionId = typeof opts.subscription === 'string' ? opts.subscription : undefined;
  const replayed = await withDataSource(ctx, (ds) => replayDeliveries(ds, { ids, subscriptionId, status }));
  if (opts.json) return printJson(ctx, { replayed });
  ctx.out(`${replayed} webhook deliver${replayed === 1 ? 'y' : 'ies'} to send again (the worker sends them now)`);
}
