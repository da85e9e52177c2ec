import { type CliContext, printJson } from '../cli-context';
import { renderTable } from '../../queries/text-output';
import { webhookConfigFromEnv } from '../../webhooks/webhook-config';
import {
  checkNewSubscription,
  CLI_WEBHOOK_NAMES as NAMES,
  createSubscription,
  deliveryViews,
  enableSubscriptionById,
  parseDeliveryFilter,
  parseReplaySelection,
  removeSubscriptionById,
  subscriptionViews,
} from '../../webhooks/webhook-admin';
import { replayDeliveries } from '../../webhooks/webhook-subscriptions';
import { CliError } from '../exit-codes';
import { withDataSource } from '../with-data-source';

type Opts = Record<string, string | boolean | undefined>;

function usage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new CliError((err as Error).message, 'usage');
  }
}

export async function webhooksAdd(ctx: CliContext, opts: Opts): Promise<void> {
  const config = usage(() => webhookConfigFromEnv(ctx.env));
  const input = await checkNewSubscription(
    { url: opts.url, events: typeof opts.events === 'string' ? opts.events : undefined, enabled: !opts.disabled },
    config.allowPrivate,
    NAMES,
  );
  const view = await withDataSource(ctx, (ds) => createSubscription(ds, input));
  if (opts.json) return printJson(ctx, view);
  ctx.out(`stored webhook subscription ${view.id}: ${view.url} (${view.events})`);
  ctx.out(`signing secret (shown this once; keep it where the receiver verifies): ${view.secret}`);
}

export async function webhooksList(ctx: CliContext, opts: Opts): Promise<void> {
  const views = await withDataSource(ctx, (ds) => subscriptionViews(ds));
  if (opts.json) return printJson(ctx, { subscriptions: views });
  if (views.length === 0) return ctx.out('no webhook subscriptions (plan-ledger webhooks add --url ... adds one)');
  const table = views.map((j) => [j.id, j.enabled ? 'yes' : 'no', j.events, j.secret, j.url]);
  for (const line of renderTable(['ID', 'ENABLED', 'EVENTS', 'SECRET', 'URL'], table, 80)) ctx.out(line);
}

export async function webhooksRemove(ctx: CliContext, id: string, opts: Opts): Promise<void> {
  await withDataSource(ctx, (ds) => removeSubscriptionById(ds, id, NAMES));
  if (opts.json) return printJson(ctx, { removed: id });
  ctx.out(`removed webhook subscription ${id} and its deliveries not yet sent`);
}

export async function webhooksEnable(ctx: CliContext, id: string, enabled: boolean, opts: Opts): Promise<void> {
  await withDataSource(ctx, (ds) => enableSubscriptionById(ds, id, enabled, NAMES));
  if (opts.json) return printJson(ctx, { id, enabled });
  ctx.out(`webhook subscription ${id} ${enabled ? 'enabled' : 'disabled'}`);
}

export async function webhooksDeliveries(ctx: CliContext, opts: Opts): Promise<void> {
  const filter = parseDeliveryFilter(opts, NAMES);
  const json = await withDataSource(ctx, (ds) => deliveryViews(ds, filter));
  if (opts.json) return printJson(ctx, { deliveries: json });
  if (json.length === 0) return ctx.out('no webhook deliveries');
  const table = json.map((r) => [r.id, r.subscriptionId, r.eventType, r.status, r.attempts, r.lastError ?? '']);
  for (const line of renderTable(['ID', 'SUBSCRIPTION', 'TYPE', 'STATUS', 'ATTEMPTS', 'LAST ERROR'], table))
    ctx.out(line);
}

export async function webhooksReplay(ctx: CliContext, ids: string[], opts: Opts): Promise<void> {
  const selection = parseReplaySelection({ ids, subscription: opts.subscription, status: opts.status }, NAMES);
  const replayed = await withDataSource(ctx, (ds) => replayDeliveries(ds, selection));
  if (opts.json) return printJson(ctx, { replayed });
  ctx.out(`${replayed} webhook deliver${replayed === 1 ? 'y' : 'ies'} to send again (the worker sends them now)`);
}
