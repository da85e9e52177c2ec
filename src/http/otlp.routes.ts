import * as path from 'node:path';
import { createGunzip } from 'node:zlib';
import type { Transform } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { PlanEvent } from '../contracts';
import { decodeLogs, decodeTraces, encodeResponse, OtlpFormat, otlpFormatOf } from '../otlp/otlp-codec';
import { OtlpDecodeError } from '../otlp/otlp-span';
import { HeldSpanJournal } from '../otlp/held-span-journal';
import { TraceAssembler } from '../otlp/trace-assembler';
import type { DurabilityMark, PlanEventPublisher } from '../publisher';
import type { Logger } from '../shared/logger';
import type { HttpConfig } from './http-config';
import type { HttpMetrics } from './http-metrics';

export interface OtlpDeps {
  publisher: PlanEventPublisher;
  settings: Readonly<HttpConfig>;
  metrics: HttpMetrics;
  logger: Logger;
  closing: () => boolean;
}

/** What the server keeps of the OTLP path: the spans held, and their journal. */
export interface OtlpIngest {
  assembler: TraceAssembler;
  /**
   * Closes the held-span journal once the traces mapped so far are durable events (call after the
   * publisher closed: its close makes them durable, in Redis or its journal).
   */
  closeHeldSpans(): Promise<void>;
}

/** How long a mapped trace's events may take to become durable before its wait is renewed. */
const DONE_WAIT_MS = 60_000;
/** At shutdown (the publisher closed), how long the last mapped traces may take to be marked done. */
const CLOSE_WAIT_MS = 2_000;

/** Counts the bytes of a gzip body as they arrive, for Fastify's Content-Length check. */
type CountedStream = Transform & { receivedEncodedLength: number };

/**
 * `POST /v1/traces` and `POST /v1/logs`, the OTLP/HTTP trace and log paths:
 * `OTEL_EXPORTER_OTLP_ENDPOINT=http://host:8080` works as it is. Log records count only when they
 * report an exception of a span: they are held with their trace's spans, whichever comes first,
 * and give the span its error when the trace is mapped (otlp-log.ts). Protobuf or JSON, gzip or not. Spans are held per trace until the trace is
 * complete (TraceAssembler), then mapped to plan events (span-mapping.ts) and published like
 * POST /v1/events' (journal, dead letters). Answers an `ExportTraceServiceResponse` in the
 * request's format with `partialSuccess` naming the spans it could not use; 503 (shutting down,
 * journal near its bound) or 429 (too many spans held) with Retry-After, which exporters retry.
 * The 200 means durable: the spans taken are written and fsynced in the held-span journal
 * (`<HTTP_JOURNAL_DIR>/otlp-spans`) first, and a restarted server holds again the spans of every
 * trace whose events had not become durable (in Redis, or the publisher's journal).
 */
export function registerOtlpRoutes(app: FastifyInstance, deps: OtlpDeps): OtlpIngest {
  const { publisher, settings, metrics } = deps;
  const heldSpans = new HeldSpanJournal(path.join(settings.journalDir, 'otlp-spans'), deps.logger);
  const pendingDone = new Set<Promise<void>>();
  let mark: DurabilityMark | undefined;
  // a mapped trace's spans are released once the events it became are durable
  const release = async (traceIds: string[], since: DurabilityMark): Promise<void> => {
    for (;;) {
      const durability = await publisher.whenDurable(since, DONE_WAIT_MS);
      if (durability === 'durable') return heldSpans.done(traceIds);
      // lost: keep the spans, a restart maps them again (same event ids); timeout: wait on
      if (durability === 'lost' || deps.closing()) return;
    }
  };
  const assembler = new TraceAssembler(
    {
      captureContent: settings.otlpCaptureContent,
      quietMs: settings.otlpQuietMs,
      rootlessMs: settings.otlpRootlessMs,
      maxSpans: settings.otlpMaxHeldSpans,
    },
    {
      publish: (events: PlanEvent[]) => {
        mark ??= publisher.durabilityMark();
        for (const event of events) {
          const result = publisher.publish(event);
          if (result.ok) metrics.otlpEvents.inc({ outcome: 'accepted' });
          else if (result.reason === 'invalid') {
            // as POST /v1/events: the worker dead-letters it and voids its seq, so the plan goes on
            metrics.otlpEvents.inc({ outcome: 'invalid' });
            publisher.forwardRefused(JSON.stringify(event));
          } else metrics.otlpEvents.inc({ outcome: 'dropped' });
        }
      },
      unmapped: (reason, count) => metrics.otlpSpans.inc({ outcome: 'unmapped' }, count),
      unmappedLogs: (count) => metrics.otlpLogRecords.inc({ outcome: 'unmapped' }, count),
      mapped: (traceIds) => {
        const since = mark ?? publisher.durabilityMark();
        mark = undefined;
        const done = release(traceIds, since).catch((err: Error) =>
          deps.logger.error({ err }, 'releasing held spans failed; a restart maps their traces again'),
        );
        pendingDone.add(done);
        void done.finally(() => pendingDone.delete(done));
      },
    },
  );
  const recovered = heldSpans.recoverAll();
  if (recovered.spans.length > 0) assembler.add(recovered.spans, true);
  if (recovered.logs.length > 0) assembler.addLogs(recovered.logs, true);
  assembler.start();
  app.addHook('onClose', async () => assembler.close());

  app.register(async (scope) => {
    scope.addContentTypeParser(
      ['application/x-protobuf', 'application/protobuf'],
      { parseAs: 'buffer', bodyLimit: settings.bodyLimitBytes },
      (_req, body, done) => done(null, body),
    );
    /** One OTLP/HTTP export path: the body decoded and taken by `take`, the answer in the request's format. */
    const exportPath = (
      url: '/v1/traces' | '/v1/logs',
      summary: string,
      description: string,
      take: (format: OtlpFormat, body: unknown) => Taken,
    ) =>
      scope.post(
        url,
        {
          config: { scope: 'ingest' },
          schema: { summary, description, tags: ['ingest'], security: [{ apiKey: [] }] },
          validatorCompiler: () => () => true,
          preParsing: async (req, _reply, payload) => {
            const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
            if (encoding === 'identity') return payload;
            if (encoding !== 'gzip')
              throw Object.assign(new Error(`Content-Encoding ${encoding} is not supported; send gzip or none`), {
                statusCode: 415,
              });
            const gunzip = createGunzip() as unknown as CountedStream;
            gunzip.receivedEncodedLength = 0;
            payload.on('data', (chunk: Buffer) => (gunzip.receivedEncodedLength += chunk.length));
            payload.on('error', (err) => gunzip.destroy(err));
            return payload.pipe(gunzip);
          },
        },
        async (req, reply) => {
          const format = otlpFormatOf(req.headers['content-type']);
          if (!format)
            return reply.code(415).send({ error: 'Content-Type must be application/x-protobuf or application/json' });
          const retryLater = (status: 429 | 503, why: string) =>
            reply
              .code(status)
              .header('retry-after', String(settings.retryAfterSeconds))
              .send({ error: `${why}; retry after ${settings.retryAfterSeconds} s` });
          const bodyBytes = Number(req.headers['content-length'] ?? 0);
          if (deps.closing()) return retryLater(503, 'the server is shutting down');
          if (publisher.stats().journalBytes + 4 * bodyBytes > settings.maxJournalBytes)
            return retryLater(503, 'the server cannot hold more events until Redis takes its backlog');
          let taken: Taken;
          try {
            taken = take(format, req.body);
          } catch (err) {
            if (err instanceof OtlpDecodeError) return reply.code(400).send({ error: err.message });
            throw err;
          }
          if (!taken.ok)
            return retryLater(
              429,
              `the server holds ${settings.otlpMaxHeldSpans} spans and log records of unfinished traces (OTLP_MAX_HELD_SPANS)`,
            );
          if (!settings.ackBeforeDurable) {
            try {
              taken.journal();
              await heldSpans.synced();
            } catch (err) {
              // held in memory all the same: a retried request is taken again (one copy per span id or record)
              req.log.error({ err }, 'held-span journal write failed');
              metrics.acks.inc({ outcome: 'lost' });
              return retryLater(
                503,
                'what was sent could not be written to the held-span journal (see the server log)',
              );
            }
          }
          taken.count();
          return send(reply, format, taken.rejected, taken.reasons.join('; '), url === '/v1/logs' ? 'logs' : 'traces');
        },
      );

    exportPath(
      '/v1/traces',
      'OTLP/HTTP trace export: spans of agent runs become plans',
      'An ExportTraceServiceRequest (application/x-protobuf or application/json, optionally gzip). ' +
        'Spans are mapped to plan events once their trace is complete (docs/otlp.md#when-a-trace-becomes-a-plan).',
      (format, body) => {
        const added = assembler.add(decodeTraces(format, body));
        return {
          ...added,
          journal: () => heldSpans.append(added.held),
          count: () => {
            if (added.accepted > 0) metrics.otlpSpans.inc({ outcome: 'accepted' }, added.accepted);
            if (added.rejected > 0) metrics.otlpSpans.inc({ outcome: 'rejected' }, added.rejected);
          },
        };
      },
    );
    exportPath(
      '/v1/logs',
      'OTLP/HTTP log export: exception log records give failed steps their error',
      'An ExportLogsServiceRequest (application/x-protobuf or application/json, optionally gzip). ' +
        'Exception records (exception.* attributes, or severity ERROR and above) with a trace and span id are held ' +
        'with their trace and give its failed span its error (docs/otlp.md#exceptions-as-log-records); ' +
        'other records are counted in partialSuccess.rejectedLogRecords.',
      (format, body) => {
        const { records, rejected } = decodeLogs(format, body);
        const added = assembler.addLogs(records);
        const reasons = [...rejected].map(([why, n]) => `${n} ${why}`);
        const refused = [...rejected.values()].reduce((a, b) => a + b, 0);
        return {
          ...added,
          rejected: added.rejected + refused,
          reasons: [...added.reasons, ...reasons],
          journal: () => heldSpans.appendLogs(added.held),
          count: () => {
            if (added.accepted > 0) metrics.otlpLogRecords.inc({ outcome: 'accepted' }, added.accepted);
            if (added.rejected + refused > 0)
              metrics.otlpLogRecords.inc({ outcome: 'rejected' }, added.rejected + refused);
          },
        };
      },
    );
  });
  return {
    assembler,
    async closeHeldSpans() {
      // what is not marked done by then is held (and mapped) again by the next serve: same event ids
      const deadline = new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref());
      await Promise.race([Promise.allSettled([...pendingDone]), deadline]);
      await heldSpans.close();
    },
  };
}

/** What one export request gave: taken or refused whole (`ok`), what to journal, what to count. */
interface Taken {
  ok: boolean;
  rejected: number;
  reasons: string[];
  journal(): void;
  count(): void;
}

function send(
  reply: FastifyReply,
  format: OtlpFormat,
  rejected: number,
  message: string,
  signal: 'traces' | 'logs',
): FastifyReply {
  const body = encodeResponse(format, rejected, message, signal);
  return format === 'protobuf'
    ? reply.code(200).type('application/x-protobuf').send(body)
    : reply.code(200).type('application/json').send(body);
}
