import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Counter } from 'prom-client';

/**
 * What open consoles ask again and again (a running plan, the plans list, health, dead letters)
 * costs the database once per `shareMs`, however many consoles are open: a console's GET of one of
 * these routes is answered from the answer computed for any console within the last `shareMs`, and
 * concurrent ones wait for the one being computed (single flight). Every answer of these routes
 * carries an ETag; a request whose If-None-Match matches is answered 304 with no body, so a console
 * that polls re-draws nothing when nothing changed. Bearer-key clients (the API) get the ETag but
 * never a shared answer: their reads stay fresh.
 */
export const LIVE_ROUTES: ReadonlySet<string> = new Set([
  '/v1/plans',
  '/v1/plans/:planId',
  '/v1/workflows/:planId/resume-point',
  '/v1/sessions/:sessionId/active',
  '/v1/health',
  '/v1/dead-letters',
  '/console/approvals/summary',
]);

interface Answer {
  at: number;
  etag: string;
  type: string;
  body: string;
}

interface Flight {
  key: string;
  done: () => void;
}

const FLIGHT = Symbol('sharedReadFlight');
/** Longest a console's request waits on another's computation before computing its own. */
const WAIT_LIMIT_MS = 10_000;
type WithFlight = FastifyRequest & { [FLIGHT]?: Flight };

export interface SharedReadsOptions {
  /** How long one computed answer serves every console. 0: each request computes its own. */
  shareMs: number;
  /** Counts answers by how they were made: computed, shared, not_modified. */
  counter: Counter<'result'>;
  /** True when the request is a console session's (a cookie, no Bearer key). */
  isConsole: (req: FastifyRequest) => boolean;
  /** Most answers kept. @defaultValue 500 */
  maxAnswers?: number;
  now?: () => number;
}

export function registerSharedReads(app: FastifyInstance, opts: SharedReadsOptions): void {
  const answers = new Map<string, Answer>();
  const flights = new Map<string, Promise<void>>();
  const now = opts.now ?? Date.now;
  const maxAnswers = opts.maxAnswers ?? 500;
  const live = (req: FastifyRequest) =>
    req.method === 'GET' && LIVE_ROUTES.has(req.routeOptions.url ?? '') && opts.shareMs > 0 && opts.isConsole(req);
  const fresh = (key: string) => {
    const a = answers.get(key);
    return a && now() - a.at < opts.shareMs ? a : undefined;
  };
  const sendShared = (req: FastifyRequest, reply: FastifyReply, a: Answer) => {
    reply.header('etag', a.etag).header('cache-control', 'no-cache');
    if (req.headers['if-none-match'] === a.etag) {
      opts.counter.inc({ result: 'not_modified' });
      return reply.code(304).send();
    }
    opts.counter.inc({ result: 'shared' });
    return reply.type(a.type).send(a.body);
  };

  app.addHook('onRequest', async (req, reply) => {
    if (!live(req)) return;
    const key = req.url;
    let a = fresh(key);
    if (!a && flights.has(key)) {
      // bounded: a flight whose client went away still ends the wait
      await Promise.race([flights.get(key), new Promise((r) => setTimeout(r, WAIT_LIMIT_MS).unref())]);
      a = fresh(key);
    }
    if (a) return sendShared(req, reply, a);
    let done!: () => void;
    flights.set(
      key,
      new Promise<void>((resolve) => {
        done = resolve;
      }),
    );
    (req as WithFlight)[FLIGHT] = { key, done };
  });

  app.addHook('onSend', async (req, reply, payload) => {
    if (req.method !== 'GET' || !LIVE_ROUTES.has(req.routeOptions.url ?? '')) return payload;
    if (reply.statusCode !== 200 || typeof payload !== 'string') return payload;
    const etag = `"${createHash('sha1').update(payload).digest('base64url')}"`;
    reply.header('etag', etag).header('cache-control', 'no-cache');
    const flight = (req as WithFlight)[FLIGHT];
    if (flight) {
      if (answers.size >= maxAnswers) answers.delete(answers.keys().next().value as string);
      answers.delete(flight.key); // re-inserted last: the map's order is oldest first
      answers.set(flight.key, { at: now(), etag, type: String(reply.getHeader('content-type')), body: payload });
      opts.counter.inc({ result: 'computed' });
    }
    if (req.headers['if-none-match'] === etag) {
      if (!flight) opts.counter.inc({ result: 'not_modified' });
      reply.code(304);
      return '';
    }
    return payload;
  });

  // whatever happened (an error, a 404, the client gone), the requests waiting on this one go on
  const land = async (req: FastifyRequest) => {
    const flight = (req as WithFlight)[FLIGHT];
    if (!flight) return;
    (req as WithFlight)[FLIGHT] = undefined;
    if (flights.get(flight.key) !== undefined) flights.delete(flight.key);
    flight.done();
  };
  app.addHook('onResponse', land);
  // a replay or purge changes what the dead-letter and health answers say: none of them is shared past it
  app.addHook('onResponse', async (req, reply) => {
    if (req.method !== 'GET' && reply.statusCode < 300 && req.url.startsWith('/v1/dead-letters')) answers.clear();
  });
  app.addHook('onRequestAbort', land);
}
