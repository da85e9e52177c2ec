import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { WORKER_ENV_HELP } from '../../worker/worker-config';
import { RETENTION_ENV_HELP } from '../../retention/retention-config';
import { WEBHOOK_ENV_HELP } from '../../webhooks/webhook-config';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./worker.actions')>(require, './worker.actions');

const HELP = `
Worker environment:
${WORKER_ENV_HELP.map(([name, help]) => `  ${name.padEnd(29)}${help}`).join('\n')}

Retention (the worker also runs the retention scheduler: one run per tick, however many workers):
${RETENTION_ENV_HELP.map(([name, help]) => `  ${name.padEnd(29)}${help}`).join('\n')}

Webhooks (every worker sends the outbox's due deliveries; docs/webhooks.md):
${WEBHOOK_ENV_HELP.map(([name, help]) => `  ${name.padEnd(29)}${help}`).join('\n')}

Logs: one JSON line per committed batch and per dead letter on stdout (LOG_LEVEL=debug adds one per job).
Stops on SIGTERM/SIGINT: stops fetching, commits in-flight jobs, exits within SHUTDOWN_TIMEOUT_MS:
0 when no job was left unfinished (even if closing the Redis connections ran late), 1 with the
count of jobs BullMQ will redeliver (a second signal exits 1 at once). A retention run still
going at the deadline is abandoned; the next tick continues it.

Examples:
  DATABASE_URL=postgres://postgres@127.0.0.1/app plan-ledger worker
  WORKER_MAX_EVENTS_IN_FLIGHT=20000 HEALTH_PORT=off plan-ledger worker
  curl -s localhost:9464/readyz; curl -s localhost:9464/metrics`;

export function registerWorker(program: Command, context: () => CliContext): void {
  program
    .command('worker')
    .description('consume the events queue and write events to DATABASE_URL until SIGTERM/SIGINT')
    .addHelpText('after', HELP)
    .action(async () => {
      const ctx = context();
      await actions().runWorkerCommand(ctx, ctx.env);
    });
}
