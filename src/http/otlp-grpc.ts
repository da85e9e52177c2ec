import type * as Grpc from '@grpc/grpc-js';
import { encodeResponse, grpcExportPath } from '../otlp/otlp-codec';
import { retryStatusDetails } from '../otlp/grpc-retry-info';
import type { ApiKeys } from '../shared/api-keys';
import { lazyRequire } from '../shared/lazy-require';
import type { Logger } from '../shared/logger';
import type { HttpConfig } from './http-config';
import type { HttpMetrics } from './http-metrics';
import type { OtlpIngestor, OtlpOutcome, OtlpSignal } from './otlp-ingest';

// loaded only when OTLP_GRPC_PORT is set: serve without gRPC never loads it
const grpcJs = lazyRequire<typeof import('@grpc/grpc-js')>(require, '@grpc/grpc-js');

/** How long calls in flight at shutdown may take before their streams are cut. */
const CLOSE_WAIT_MS = 2_000;

export interface OtlpGrpcDeps {
  settings: Readonly<HttpConfig>;
  otlp: OtlpIngestor;
  keys: ApiKeys;
  metrics: HttpMetrics;
  logger: Logger;
}

export interface OtlpGrpcServer {
  /** The bound port (OTLP_GRPC_PORT, or the one chosen for 0). */
  port: number;
  /** Refuses new calls, answers those in flight (cut after a short wait). */
  close(): Promise<void>;
}

/** Bytes in, bytes out: the OTLP messages are decoded and encoded by otlp-codec.ts, as OTLP/HTTP's. */
const raw = (bytes: Buffer): Buffer => bytes;

/**
 * The OTLP/gRPC receiver: `TraceService/Export` and `LogsService/Export` of the official OTLP
 * definitions, on HTTP_HOST:OTLP_GRPC_PORT, taken by the same ingest as POST /v1/traces and
 * /v1/logs (otlp-ingest.ts, OtlpIngestor): same key scope (`authorization: Bearer <ingest key>` metadata), same
 * `partialSuccess`, same durability. Refusals are gRPC statuses: UNAUTHENTICATED (no or unknown
 * key), PERMISSION_DENIED (a key without the ingest scope), INVALID_ARGUMENT (a message it cannot
 * decode), UNAVAILABLE (HTTP's 503) and RESOURCE_EXHAUSTED (HTTP's 429), both with a
 * `google.rpc.RetryInfo` of HTTP_RETRY_AFTER_SECONDS.
 */
export async function startOtlpGrpcServer(deps: OtlpGrpcDeps): Promise<OtlpGrpcServer> {
  const grpc = grpcJs();
  const { settings } = deps;
  // grpc-js writes its own errors to stderr; the ones that matter reach us as errors, so its lines go to the log
  const grpcLog = (...parts: unknown[]) => deps.logger.debug({ component: 'grpc-js' }, parts.map(String).join(' '));
  grpc.setLogger({ error: grpcLog, info: grpcLog, debug: grpcLog });
  const server = new grpc.Server({
    'grpc.max_receive_message_length': settings.bodyLimitBytes,
    'grpc.max_send_message_length': settings.bodyLimitBytes,
  });
  for (const signal of ['traces', 'logs'] as const) {
    const method = {
      path: grpcExportPath(signal),
      requestStream: false,
      responseStream: false,
      requestSerialize: raw,
      requestDeserialize: raw,
      responseSerialize: raw,
      responseDeserialize: raw,
      originalName: 'export',
    };
    server.addService({ Export: method }, { Export: exportHandler(grpc, deps, signal) });
  }
  const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host;
  const address = `${host}:${settings.otlpGrpcPort ?? 0}`;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(new Error(`OTLP_GRPC_PORT: cannot listen on ${address} (${bindFailure(err)})`)) : resolve(bound),
    ),
  );
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        const cut = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, CLOSE_WAIT_MS);
        server.tryShutdown(() => {
          clearTimeout(cut);
          resolve();
        });
      }),
  };
}

/** The listen error inside grpc-js' "No address added out of total 1 resolved errors: [...]". */
function bindFailure(err: Error): string {
  return /errors: \[(.+)\]$/.exec(err.message)?.[1] ?? err.message;
}

/** The unary Export of one signal: the key checked, the request taken, the answer as a gRPC status or response. */
function exportHandler(
  grpc: typeof Grpc,
  deps: OtlpGrpcDeps,
  signal: OtlpSignal,
): Grpc.handleUnaryCall<Buffer, Buffer> {
  return (call, callback) => {
    const authorization = call.metadata.get('authorization')[0];
    const verdict = deps.keys.check(typeof authorization === 'string' ? authorization : undefined, 'ingest');
    if (!verdict.ok) {
      deps.metrics.refusals.inc({ status: String(verdict.status) });
      const code = verdict.status === 401 ? grpc.status.UNAUTHENTICATED : grpc.status.PERMISSION_DENIED;
      return callback({ code, details: verdict.message });
    }
    deps.otlp
      .ingest({ signal, format: 'protobuf', body: call.request, bodyBytes: call.request.length })
      .then((outcome) => {
        if (!outcome.ok && 'cause' in outcome && outcome.cause !== undefined)
          deps.logger.error({ err: outcome.cause }, 'held-span journal write failed');
        answerCall(grpc, { signal, outcome, callback });
      })
      .catch((err: Error) => {
        deps.logger.error({ err, signal }, 'OTLP/gRPC export failed');
        callback({ code: grpc.status.INTERNAL, details: 'internal error (logged by the server)' });
      });
  };
}

function answerCall(
  grpc: typeof Grpc,
  call: { signal: OtlpSignal; outcome: OtlpOutcome; callback: Grpc.sendUnaryData<Buffer> },
): void {
  const { outcome, callback } = call;
  if (outcome.ok) {
    callback(null, encodeResponse('protobuf', outcome.rejected, outcome.message, call.signal) as Buffer);
  } else if (outcome.status === 400) {
    callback({ code: grpc.status.INVALID_ARGUMENT, details: outcome.error });
  } else {
    const code = outcome.status === 503 ? grpc.status.UNAVAILABLE : grpc.status.RESOURCE_EXHAUSTED;
    const metadata = new grpc.Metadata();
    metadata.set('grpc-status-details-bin', retryStatusDetails(code, outcome.error, outcome.retryAfterSeconds));
    callback({ code, details: outcome.error, metadata });
  }
}
