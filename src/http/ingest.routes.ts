import type { FastifyInstance } from 'fastify';
import type { DataSource } from 'typeorm';
import type { PlanEventPublisher } from '../publisher';
import { awaitEventStatuses, parseEventIds } from '../queries/event-status.query';
import { QueryArgumentError } from '../queries/query-errors';
import type { HttpConfig } from './http-config';
import type { HttpMetrics } from './http-metrics';
import { acknowledgeWhenDurable } from './durable-ack';
import { ingestBatch } from './ingest-batch';
import { eventStatusRouteSchema, ingestRouteSchema } from './openapi-schemas';

export interface IngestDeps {
  publisher: PlanEventPublisher;
  dataSource: DataSource;
  settings: Readonly<HttpConfig>;
  metrics: HttpMetrics;
  /** True once shutdown began: new batches get 503. */
  closing: () => boolean;
  /** Aborted when shutdown begins: status waits answer at once. */
  closingSignal: AbortSignal;
}

/** Longest wait a status request may ask for. */
const MAX_STATUS_WAIT_MS = 30_000;

/**
 * `POST /v1/events`: a JSON array of events. 202 with one result per event (accepted / invalid
 * with its violations / dropped); 400 when the body is not an array; 413 past the event count or
 * the body size; 503 + Retry-After when the publisher cannot take the batch (journal near its
 * bound, or shutting down): nothing of a refused batch is accepted, so the sender retries it whole.
 * The 202 is sent once the batch's events are durable (in Redis, or fsynced in the server's
 * journal); when they are not within HTTP_ACK_TIMEOUT_MS, or a journal write failed, the answer is
 * 503 and the sender sends the batch again (the worker keeps one copy per eventId).
 */
export function registerIngestRoutes(app: FastifyInstance, deps: IngestDeps): void {
  const { publisher, settings, metrics } = deps;
  app.post(
    '/v1/events',
    {
      config: { scope: 'ingest' },
      schema: ingestRouteSchema(settings.maxBatchEvents),
      // the contract check is ours (per event, with the contract's wording): the schema only documents
      validatorCompiler: () => () => true,
    },
    async (req, reply) => {
      const body = req.body;
      if (!Array.isArray(body)) return reply.code(400).send({ error: 'the body must be a JSON array of events' });
      if (body.length > settings.maxBatchEvents) {
        return reply.code(413).send({
          error: `a batch may hold at most ${settings.maxBatchEvents} events (got ${body.length}); split it (HTTP_MAX_BATCH_EVENTS)`,
        });
      }
      const bodyBytes = Number(req.headers['content-length'] ?? 0);
      const stats = publisher.stats();
      if (deps.closing() || stats.journalBytes + 2 * bodyBytes > settings.maxJournalBytes) {
        const why = deps.closing()
          ? 'the server is shutting down'
          : 'the server cannot hold more events until Redis takes its backlog';
        return reply
          .code(503)
          .header('retry-after', String(settings.retryAfterSeconds))
          .send({ error: `${why}; retry after ${settings.retryAfterSeconds} s` });
      }
      const since = publisher.durabilityMark();
      const answer = ingestBatch(body, publisher);
      if (!(await acknowledgeWhenDurable(publisher, since, reply, deps))) return reply;
      if (answer.accepted > 0) metrics.events.inc({ outcome: 'accepted' }, answer.accepted);
      if (answer.invalid > 0) metrics.events.inc({ outcome: 'invalid' }, answer.invalid);
      if (answer.dropped > 0) metrics.events.inc({ outcome: 'dropped' }, answer.dropped);
      if (answer.invalid > 0)
        req.log.info({ accepted: answer.accepted, invalid: answer.invalid }, 'batch had invalid events');
      return reply.code(202).send(answer);
    },
  );

  // read your own writes: where given events are now, optionally waiting until they are applied
  app.post(
    '/v1/events/status',
    { config: { scope: ['ingest', 'read'] }, schema: eventStatusRouteSchema, validatorCompiler: () => () => true },
    async (req) => {
      const body = req.body as { eventIds?: unknown; waitMs?: unknown } | null;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new QueryArgumentError('body', 'must be a JSON object { "eventIds": [...], "waitMs": 0 }');
      const ids = parseEventIds(body.eventIds);
      const waitMs = body.waitMs ?? 0;
      if (typeof waitMs !== 'number' || !Number.isInteger(waitMs) || waitMs < 0 || waitMs > MAX_STATUS_WAIT_MS)
        throw new QueryArgumentError('waitMs', `must be an integer from 0 to ${MAX_STATUS_WAIT_MS}`);
      return awaitEventStatuses(deps.dataSource, ids, deps.closing() ? 0 : waitMs, deps.closingSignal);
    },
  );
}
