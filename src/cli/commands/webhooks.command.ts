import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { EXIT_HELP } from '../exit-codes';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM) is loaded when a subcommand runs (see main.ts).
const actions = lazyRequire<typeof import('./webhooks.actions')>(require, './webhooks.actions');

type Opts = Record<string, string | boolean | undefined>;

/** `webhooks add|list|remove|enable|disable|deliveries|replay`: subscriptions and the outbox (docs/webhooks.md). */
export function registerWebhooks(program: Command, context: () => CliContext): Command {
  const webhooks = program
    .command('webhooks')
    .description('webhook subscriptions (signed per Standard Webhooks) and their deliveries');
  webhooks
    .command('add')
    .description('subscribe a URL: events stored from now on (within 2 s) are delivered to it')
    .requiredOption('--url <url>', 'https:// (or http://) URL the webhooks are POSTed to')
    .option('--events <types>', 'comma-separated webhook types, or * for all', '*')
    .option('--disabled', 'store it disabled (nothing is written for it until enabled)')
    .option('--json', 'print the subscription as JSON (its secret included: shown this once)')
    .addHelpText(
      'after',
      `
The signing secret is printed once, now; list shows only its last characters. The URL must not
resolve to a loopback, private, link-local or metadata address unless WEBHOOKS_ALLOW_PRIVATE allows it.

Example:
  plan-ledger webhooks add --url https://hooks.example.com/plan-ledger --events plan.finalized,step.failed
${EXIT_HELP}`,
    )
    .action(async (opts: Opts) => actions().webhooksAdd(context(), opts));
  webhooks
    .command('list')
    .description('every subscription, with its deliveries by status (secrets redacted)')
    .option('--json', 'print JSON')
    .action(async (opts: Opts) => actions().webhooksList(context(), opts));
  webhooks
    .command('remove')
    .description('remove a subscription and its deliveries not yet sent')
    .argument('<id>', 'its id (wh-...)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: Opts) => actions().webhooksRemove(context(), id, opts));
  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const)
    webhooks
      .command(name)
      .description(`${name} a subscription (a disabled one gets no new deliveries)`)
      .argument('<id>', 'its id (wh-...)')
      .option('--json', 'print JSON')
      .action(async (id: string, opts: Opts) => actions().webhooksEnable(context(), id, enabled, opts));
  webhooks
    .command('deliveries')
    .description('the newest deliveries: status, attempts, last error')
    .option('--subscription <id>', 'only this subscription')
    .option('--status <status>', 'pending, delivered or dead')
    .option('--limit <n>', 'at most this many', '50')
    .option('--json', 'print JSON')
    .action(async (opts: Opts) => actions().webhooksDeliveries(context(), opts));
  webhooks
    .command('replay')
    .description('send deliveries again now, attempts reset, with the same webhook-id (default: every dead one)')
    .argument('[ids...]', 'delivery ids (webhooks deliveries shows them)')
    .option('--subscription <id>', 'only this subscription')
    .option('--status <status>', 'dead (default) or delivered, when no id is given')
    .option('--json', 'print JSON')
    .action(async (ids: string[], opts: Opts) => actions().webhooksReplay(context(), ids, opts));
  return webhooks;
}
