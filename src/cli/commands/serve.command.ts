import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { HTTP_ENV_HELP } from '../../http/http-config';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./serve.actions')>(require, './serve.actions');

const NAME_WIDTH = HTTP_ENV_HELP.reduce((width, [name]) => Math.max(width, name.length + 2), 0);

const HELP = `
Serve environment (also DATABASE_URL, REDIS_URL, QUEUE_PREFIX, QUEUE_SHARDS, LOG_LEVEL):
${HTTP_ENV_HELP.map(([name, help]) => `  ${name.padEnd(NAME_WIDTH)}${help}`).join('\n')}

Routes: POST /v1/events (ingest scope); GET /v1/plans[/:planId[/export|/steps/:step/output]],
/v1/sessions/:sessionId/active|history, /v1/workflows/:planId/resume-point,
/v1/analytics/daily|agents|handoffs|tokens, /v1/dead-letters[/:id], /v1/health (read scope);
POST /v1/dead-letters/:id/replay|purge and /v1/webhooks/subscriptions|deliveries (admin scope;
WEBHOOKS_ALLOW_PRIVATE: addresses a subscription's URL may resolve to); GET /v1/openapi.json describes them all;
/healthz and /metrics need no key. Keys go in "Authorization: Bearer <key>" and are never logged.
Logs: one JSON line per request on stdout. Stops on SIGTERM/SIGINT: new batches get 503, requests in
flight are answered, accepted events are flushed to Redis (or kept in HTTP_JOURNAL_DIR).
Console: open the server's address (/) in a browser and sign in with a read or admin key: plans,
a plan's DAG and timeline, sessions, dead letters (replay and purge with an admin key), health,
analytics.

Example:
  HTTP_INGEST_KEYS=$(openssl rand -hex 24) HTTP_READ_KEYS=$(openssl rand -hex 24) plan-ledger serve`;

/** `plan-ledger serve`: the HTTP API. Fastify is loaded only here, so other commands start without it. */
export function registerServe(program: Command, context: () => CliContext): void {
  program
    .command('serve')
    .description(
      'HTTP API for executors in any language (POST /v1/events, the read endpoints, /v1/openapi.json) and the web console at /',
    )
    .addHelpText('after', HELP)
    .action(async () => {
      const ctx = context();
      await actions().runServeCommand(ctx, ctx.env);
    });
}
