import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import {
  DeadLetterInputError,
  DeadLetterSelection,
  parseFilter,
  parsePositiveInt,
  RawFilterOptions,
} from '../dead-letters/dead-letter-filter';
import type { ReplaySummary } from '../dead-letters/dead-letter-replayer';
import { DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import type { DeadLetterService } from '../dead-letters/dead-letter.service';
import { ApiKeys } from '../shared/api-keys';
import type { RedisClient } from '../queue/connect-redis';
import { storedEventsPerMinute } from '../queue/stored-event-rate';
import { ConsoleSessions, CSRF_HEADER, SESSION_TTL_MS, sessionCookie } from './console-sessions';
import { SignInThrottle } from './sign-in-throttle';

/**
 * The console's files, shipped in the package's `console/` folder (no CDN: it works offline): its
 * ES modules, its stylesheet and its icon, read once at start.
 */
const ASSET_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};
const ASSET_NAME = /^[a-z0-9][a-z0-9-]*\.(js|css|svg)$/;

/**
 * The console's Content-Security-Policy: scripts and styles from this server only (no inline
 * script, no eval), no framing, no plugins, forms and requests to this origin only.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The package's `console/` folder, from the sources (src/console) or the build (dist/src/console). */
export function consoleDir(): string {
  let dir = __dirname;
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, 'console');
    if (fs.existsSync(path.join(candidate, 'index.html'))) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error(`console files not found above ${__dirname}`);
}

export interface ConsoleDeps {
  keys: ApiKeys;
  sessions: ConsoleSessions;
  /** Absent when `serve` runs without Redis access to the queues (then those routes answer 503). */
  deadLetters?: DeadLetterService;
  deadLetterQueue?: Queue;
  eventsQueue?: Queue;
  /**
   * With QUEUE_SHARDS above 1: every shard's events queue, by `shard` label; the health view then has a
   * row per shard and `queue` sums them. @defaultValue the eventsQueue alone, as shard "0"
   */
  eventShards?: Array<{ shard: string; queue: Queue }>;
  redis?: RedisClient;
  queuePrefix?: string;
  /** Refused sign-ins per client address. @defaultValue 10 a minute */
  signInThrottle?: SignInThrottle;
}

type Q = Record<string, string | undefined>;

/**
 * The console: its page and files, sign-in (an API key becomes an HttpOnly session cookie),
 * and the routes only it needs (dead letters, queue health). Everything else it shows comes from
 * the /v1 read routes, called with the session cookie instead of a Bearer key (http-server.ts).
 */
export function registerConsoleRoutes(app: FastifyInstance, deps: ConsoleDeps): void {
  registerConsoleFiles(app);
  registerSessionRoutes(app, deps);
  registerDeadLetterRoutes(app, deps);
  app.get(
    '/v1/health',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'queue depth, oldest waiting job, dead letters by kind, events stored per minute',
        tags: ['read'],
      },
    },
    async (req) => {
      const minutes = parsePositiveInt('minutes', (req.query as Q).minutes ?? '15', 1_440);
      return health(deps, minutes);
    },
  );
}

const hide = { hide: true };

/** The console's page, its files and its icon. */
function registerConsoleFiles(app: FastifyInstance): void {
  const dir = consoleDir();
  const files = new Map(
    fs
      .readdirSync(dir)
      .filter((name) => ASSET_NAME.test(name))
      .map((name) => [name, fs.readFileSync(path.join(dir, name))]),
  );
  const index = fs.readFileSync(path.join(dir, 'index.html'));

  app.get('/', { schema: hide }, async (_req, reply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(index),
  );
  app.get('/console/assets/:file', { schema: hide }, async (req, reply) => {
    const name = (req.params as Record<string, string>).file;
    const body = files.get(name);
    if (!body) return reply.code(404).send({ error: `no console file "${name}"` });
    return reply.type(ASSET_TYPES[path.extname(name)]).header('cache-control', 'no-cache').send(body);
  });

  // browsers ask for /favicon.ico on their own: answer with the console's icon, not a 404
  app.get('/favicon.ico', { schema: hide }, async (_req, reply) =>
    reply.type(ASSET_TYPES['.svg']).header('cache-control', 'public, max-age=86400').send(files.get('favicon.svg')),
  );
}

/** Sign-in (an API key becomes a session cookie), the session's scopes, sign-out. */
function registerSessionRoutes(app: FastifyInstance, deps: ConsoleDeps): void {
  const throttle = deps.signInThrottle ?? new SignInThrottle();
  app.post('/console/session', { schema: hide }, async (req, reply) => {
    const wait = throttle.retryAfterSeconds(req.ip);
    if (wait > 0)
      return reply
        .code(429)
        .header('retry-after', String(wait))
        .send({ error: `too many refused sign-ins from this address: try again in ${wait} s` });
    const key = (req.body as { key?: unknown } | undefined)?.key;
    if (typeof key !== 'string' || key.trim() === '')
      return reply.code(400).send({ error: 'send {"key": "<API key>"}' });
    const identity = deps.keys.identify(key.trim());
    const scopes = identity?.scopes ?? null;
    if (identity === null || scopes === null) {
      throttle.failed(req.ip);
      return reply.code(401).send({ error: 'unknown API key' });
    }
    throttle.succeeded(req.ip);
    if (!scopes.has('read') && !scopes.has('approve'))
      return reply.code(403).send({
        error: 'this API key lacks the read and approve scopes (an ingest-only key cannot open the console)',
      });
    const { token, session } = deps.sessions.create(scopes, identity.name);
    reply.header('set-cookie', sessionCookie(token, Math.floor(SESSION_TTL_MS / 1000), req.protocol === 'https'));
    return { scopes: [...scopes].sort(), csrf: session.csrf, ...(identity.name ? { name: identity.name } : {}) };
  });
  app.get('/console/session', { schema: hide }, async (req, reply) => {
    const found = deps.sessions.fromCookie(req.headers.cookie);
    if (!found) return reply.code(401).send({ error: 'not signed in' });
    const { scopes, csrf, name } = found.session;
    return { scopes: [...scopes].sort(), csrf, ...(name ? { name } : {}) };
  });
  app.delete('/console/session', { schema: hide }, async (req, reply) => {
    const found = deps.sessions.fromCookie(req.headers.cookie);
    if (found) {
      if (req.headers[CSRF_HEADER] !== found.session.csrf)
        return reply.code(403).send({ error: `missing or wrong ${CSRF_HEADER} header` });
      deps.sessions.end(found.token);
    }
    reply.header('set-cookie', sessionCookie('', 0, req.protocol === 'https'));
    return { signedOut: true };
  });
}

/** The dead-letter routes: list, show, replay and purge, one or many. */
function registerDeadLetterRoutes(app: FastifyInstance, deps: ConsoleDeps): void {
  const read = { config: { scope: 'read' } } as const;
  const admin = { config: { scope: 'admin' } } as const;
  const service = (): DeadLetterService => {
    if (!deps.deadLetters)
      throw Object.assign(new Error('dead letters are not available: this server has no Redis connection for them'), {
        statusCode: 503,
      });
    return deps.deadLetters;
  };
  app.get(
    '/v1/dead-letters',
    {
      ...read,
      schema: {
        summary:
          'dead letters without events, oldest first or ?order=newest, ?offset= for the next page (CLI: dlq list --json)',
        tags: ['dead letters'],
      },
    },
    async (req) => {
      const q = req.query as Q;
      // a bad filter is a usage error (400), an unknown id not-found (404): see http-errors.ts
      const filter = parseFilter({ ...filterFlags(q), limit: q.limit ?? '100' }, deps.eventShards?.length ?? 1);
      const order = q.order ?? 'oldest';
      if (order !== 'oldest' && order !== 'newest')
        throw new DeadLetterInputError(`order: "${order}" is not one of oldest, newest`);
      const offset = q.offset === undefined ? 0 : parseNonNegativeInt('offset', q.offset);
      const list = await service().listSummaries(filter, { newestFirst: order === 'newest', offset });
      return { ...list, order, offset, limit: filter.limit };
    },
  );
  // many at once: the ids an operator ticked, or every dead letter a filter matches (`all: true`)
  const bulkSelection = (body: unknown): DeadLetterSelection => {
    const b = (body ?? {}) as Record<string, unknown>;
    if (Array.isArray(b.ids)) {
      if (b.ids.length === 0 || b.ids.length > 1_000 || !b.ids.every((id) => typeof id === 'string'))
        throw new DeadLetterInputError('ids: give 1 to 1000 dead-letter ids (strings)');
      return { ids: b.ids as string[] };
    }
    if (b.all !== true)
      throw new DeadLetterInputError(
        'send {"ids": [...]} or {"all": true} with the filter (type, kind, plan, shard, since, until)',
      );
    const raw: Q = {};
    for (const k of ['type', 'kind', 'plan', 'shard', 'since', 'until'])
      if (b[k] !== undefined) raw[k] = typeof b[k] === 'string' ? (b[k] as string) : String(b[k]);
    return { filter: parseFilter(filterFlags(raw), deps.eventShards?.length ?? 1) };
  };
  app.post(
    '/v1/dead-letters/replay',
    {
      ...admin,
      schema: {
        summary: 'replay the dead letters named by ids, or all a filter matches (admin scope; CLI: dlq replay)',
        tags: ['dead letters'],
      },
    },
    async (req) => replayAnswer(await service().replay(bulkSelection(req.body))),
  );
  app.post(
    '/v1/dead-letters/purge',
    {
      ...admin,
      schema: {
        summary: 'remove for good the dead letters named by ids, or all a filter matches (admin scope; CLI: dlq purge)',
        tags: ['dead letters'],
      },
    },
    async (req) => ({ removed: (await service().purge(bulkSelection(req.body))).matched }),
  );
  app.get(
    '/v1/dead-letters/:id',
    {
      ...read,
      schema: { summary: 'one dead letter with its original event (CLI: dlq show --json)', tags: ['dead letters'] },
    },
    async (req) => service().show((req.params as Record<string, string>).id),
  );
  app.post(
    '/v1/dead-letters/:id/replay',
    {
      ...admin,
      schema: { summary: 'replay one dead letter (admin scope; CLI: dlq replay <id>)', tags: ['dead letters'] },
    },
    async (req) => replayAnswer(await service().replay({ ids: [(req.params as Record<string, string>).id] })),
  );
  app.post(
    '/v1/dead-letters/:id/purge',
    {
      ...admin,
      schema: {
        summary: 'remove one dead letter for good (admin scope; CLI: dlq purge <id> --yes)',
        tags: ['dead letters'],
      },
    },
    async (req) => {
      const result = await service().purge({ ids: [(req.params as Record<string, string>).id] });
      return { removed: result.matched };
    },
  );
}

function filterFlags(q: Q): RawFilterOptions {
  return { type: q.type, kind: q.kind, plan: q.plan, shard: q.shard, since: q.since, until: q.until };
}

function parseNonNegativeInt(name: string, raw: string): number {
  if (!/^\d{1,9}$/.test(raw.trim())) throw new DeadLetterInputError(`${name}: "${raw}" is not a whole number >= 0`);
  return Number(raw.trim());
}

/** What a replay did, as the console and API clients read it (the CLI prints the same counts). */
function replayAnswer(summary: ReplaySummary) {
  return {
    selected: summary.selected,
    replayed: summary.replayed,
    alreadyStored: summary.alreadyStored,
    vanished: summary.vanished,
    kept: summary.kept,
    jobIds: summary.jobIds,
  };
}

/** Job counts of the events queue (or one shard of it). */
export interface QueueHealth {
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  oldestWaitingAgeSeconds: number | null;
}

/** What the console's Health page shows. */
export interface HealthView {
  /** Every shard together. */
  queue: QueueHealth | null;
  /** One row per shard of the events queue (QUEUE_SHARDS; one row, shard "0", without). */
  shards: Array<QueueHealth & { shard: string }>;
  deadLetters: { total: number; byKind: Record<string, number>; oldestAgeSeconds: number | null } | null;
  /** Events the workers stored per minute, oldest minute first (UTC, `minute` ISO). */
  eventsPerMinute: Array<{ minute: string; events: number }>;
}

async function queueHealth(queue: Queue, now: number): Promise<QueueHealth> {
  const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed');
  const [oldest] = await queue.getJobs(['waiting'], 0, 0, true); // asc: the oldest first
  return {
    waiting: counts.waiting ?? 0,
    active: counts.active ?? 0,
    delayed: counts.delayed ?? 0,
    failed: counts.failed ?? 0,
    oldestWaitingAgeSeconds: oldest ? Math.max(0, Math.round((now - oldest.timestamp) / 1000)) : null,
  };
}

async function health(deps: ConsoleDeps, minutes: number): Promise<HealthView> {
  const now = Date.now();
  let queue: HealthView['queue'] = null;
  const sources = deps.eventShards ?? (deps.eventsQueue ? [{ shard: '0', queue: deps.eventsQueue }] : []);
  const shards = await Promise.all(
    sources.map(async (s) => ({ shard: s.shard, ...(await queueHealth(s.queue, now)) })),
  );
  if (shards.length > 0) {
    const ages = shards.map((s) => s.oldestWaitingAgeSeconds).filter((a): a is number => a !== null);
    queue = {
      waiting: shards.reduce((n, s) => n + s.waiting, 0),
      active: shards.reduce((n, s) => n + s.active, 0),
      delayed: shards.reduce((n, s) => n + s.delayed, 0),
      failed: shards.reduce((n, s) => n + s.failed, 0),
      oldestWaitingAgeSeconds: ages.length > 0 ? ages.reduce((a, b) => Math.max(a, b)) : null,
    };
  }
  let deadLetters: HealthView['deadLetters'] = null;
  if (deps.deadLetterQueue) {
    const depth = await new DeadLetterRepository(deps.deadLetterQueue).depth();
    deadLetters = {
      total: depth.total,
      byKind: Object.fromEntries(depth.byKind),
      oldestAgeSeconds:
        depth.oldestAtMs === undefined ? null : Math.max(0, Math.round((now - depth.oldestAtMs) / 1000)),
    };
  }
  const eventsPerMinute = deps.redis
    ? await storedEventsPerMinute(deps.redis, deps.queuePrefix ?? '', minutes, now)
    : [];
  return { queue, shards, deadLetters, eventsPerMinute };
}
