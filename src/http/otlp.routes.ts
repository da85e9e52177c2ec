import { createGunzip } from 'node:zlib';
import type { Transform } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { encodeResponse, otlpFormatOf } from '../otlp/otlp-codec';
import type { TraceAssembler } from '../otlp/trace-assembler';
import { OtlpDeps, OtlpIngestor, OtlpSignal } from './otlp-ingest';

export type { OtlpDeps } from './otlp-ingest';

/** What the server keeps of the OTLP path: the spans held, and their journal. */
export interface OtlpIngest {
  assembler: TraceAssembler;
  /** The ingest path itself, for another transport than OTLP/HTTP. */
  ingestor: OtlpIngestor;
  /**
   * Closes the held-span journal once the traces mapped so far are durable events (call after the
   * publisher closed: its close makes them durable, in Redis or its journal).
   */
  closeHeldSpans(): Promise<void>;
}

/** Counts the bytes of a gzip body as they arrive, for Fastify's Content-Length check. */
type CountedStream = Transform & { receivedEncodedLength: number };

/** One OTLP/HTTP export path and its OpenAPI text. */
interface ExportPath {
  url: '/v1/traces' | '/v1/logs';
  signal: OtlpSignal;
  summary: string;
  description: string;
}

const EXPORT_PATHS: readonly ExportPath[] = [
  {
    url: '/v1/traces',
    signal: 'traces',
    summary: 'OTLP/HTTP trace export: spans of agent runs become plans',
    description:
      'An ExportTraceServiceRequest (application/x-protobuf or application/json, optionally gzip). ' +
      'Spans are mapped to plan events once their trace is complete (docs/otlp.md#when-a-trace-becomes-a-plan).',
  },
  {
    url: '/v1/logs',
    signal: 'logs',
    summary: 'OTLP/HTTP log export: exception log records give failed steps their error',
    description:
      'An ExportLogsServiceRequest (application/x-protobuf or application/json, optionally gzip). ' +
      'Exception records (exception.* attributes, or severity ERROR and above) with a trace and span id are held ' +
      'with their trace and give its failed span its error (docs/otlp.md#exceptions-as-log-records); ' +
      'other records are counted in partialSuccess.rejectedLogRecords.',
  },
];

/**
 * `POST /v1/traces` and `POST /v1/logs`, the OTLP/HTTP trace and log paths:
 * `OTEL_EXPORTER_OTLP_ENDPOINT=http://host:8080` works as it is. Log records count only when they
 * report an exception of a span: they are held with their trace's spans, whichever comes first,
 * and give the span its error when the trace is mapped (otlp-log.ts). Protobuf or JSON, gzip or
 * not; what is taken goes through OtlpIngestor (otlp-ingest.ts). Answers an
 * `ExportTraceServiceResponse` in the request's format with `partialSuccess` naming the spans it
 * could not use; 503 (shutting down, journal near its bound) or 429 (too many spans held) with
 * Retry-After, which exporters retry. The 200 means durable (see OtlpIngestor).
 */
export function registerOtlpRoutes(app: FastifyInstance, deps: OtlpDeps): OtlpIngest {
  const ingestor = new OtlpIngestor(deps);
  app.addHook('onClose', async () => ingestor.close());
  app.register(async (scope) => {
    scope.addContentTypeParser(
      ['application/x-protobuf', 'application/protobuf'],
      { parseAs: 'buffer', bodyLimit: deps.settings.bodyLimitBytes },
      (_req, body, done) => done(null, body),
    );
    for (const path of EXPORT_PATHS) registerExportPath(scope, path, ingestor);
  });
  return { assembler: ingestor.assembler, ingestor, closeHeldSpans: () => ingestor.closeHeldSpans() };
}

function registerExportPath(scope: FastifyInstance, path: ExportPath, ingestor: OtlpIngestor): void {
  const { url, signal, summary, description } = path;
  scope.post(
    url,
    {
      config: { scope: 'ingest' },
      schema: { summary, description, tags: ['ingest'], security: [{ apiKey: [] }] },
      validatorCompiler: () => () => true,
      preParsing: async (req, _reply, payload) => gunzipped(req, payload),
    },
    async (req, reply) => {
      const format = otlpFormatOf(req.headers['content-type']);
      if (!format)
        return reply.code(415).send({ error: 'Content-Type must be application/x-protobuf or application/json' });
      const bodyBytes = Number(req.headers['content-length'] ?? 0);
      const outcome = await ingestor.ingest({ signal, format, body: req.body, bodyBytes });
      if (outcome.ok) {
        const body = encodeResponse(format, outcome.rejected, outcome.message, signal);
        const type = format === 'protobuf' ? 'application/x-protobuf' : 'application/json';
        return reply.code(200).type(type).send(body);
      }
      if (outcome.status === 400) return reply.code(400).send({ error: outcome.error });
      if (outcome.cause !== undefined) req.log.error({ err: outcome.cause }, 'held-span journal write failed');
      return reply
        .code(outcome.status)
        .header('retry-after', String(outcome.retryAfterSeconds))
        .send({ error: outcome.error });
    },
  );
}

/** The body as sent, or gunzipped as it arrives; 415 for an encoding other than gzip. */
function gunzipped(req: FastifyRequest, payload: NodeJS.ReadableStream): NodeJS.ReadableStream {
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
}
