import type { FastifyReply } from 'fastify';
import type { DurabilityMark, PlanEventPublisher } from '../publisher';
import type { HttpConfig } from './http-config';
import type { HttpMetrics } from './http-metrics';

/**
 * The rule of every ingest route: a 2xx means durable. Waits until what the request handed to the
 * publisher since `since` is in Redis or fsynced in the server's journal (`whenDurable`); true when
 * it is (or HTTP_ACK_BEFORE_DURABLE is on). Otherwise it answers 503 + Retry-After itself and
 * returns false: the sender sends the request again, and the worker keeps one copy per eventId.
 */
export async function acknowledgeWhenDurable(
  publisher: PlanEventPublisher,
  since: DurabilityMark,
  reply: FastifyReply,
  deps: { settings: Readonly<HttpConfig>; metrics: HttpMetrics },
): Promise<boolean> {
  const { settings, metrics } = deps;
  if (settings.ackBeforeDurable) return true;
  const durability = await publisher.whenDurable(since, settings.ackTimeoutMs);
  if (durability === 'durable') return true;
  metrics.acks.inc({ outcome: durability });
  const why =
    durability === 'lost'
      ? 'what this request sent may have been lost on its way to the journal (a write or fsync failed; see the server log)'
      : `what this request sent was not durable within ${settings.ackTimeoutMs} ms (HTTP_ACK_TIMEOUT_MS)`;
  await reply
    .code(503)
    .header('retry-after', String(settings.retryAfterSeconds))
    .send({ error: `${why}; send it again (one copy per eventId is kept)` });
  return false;
}
