/**
 * OTLP/HTTP bodies in and out. Protobuf goes through protobufjs (its public reflection API) over the
 * official `opentelemetry-proto` definitions (otlp-proto.generated.ts, from proto/): nothing here
 * reads protobuf by hand, and the field numbers are the official ones.
 */
import type { Root, Type } from 'protobufjs';
import { lazyRequire } from '../shared/lazy-require';
import { logRecordsOfRequest, type LogRecords } from './otlp-log';
import { OtlpDecodeError, OtlpSpan, spansOfRequest } from './otlp-span';

const TRACE_SERVICE = 'opentelemetry.proto.collector.trace.v1';
const LOGS_SERVICE = 'opentelemetry.proto.collector.logs.v1';

const protobufLight = lazyRequire<typeof import('protobufjs')>(require, 'protobufjs/light');
const otlpProto = lazyRequire<typeof import('./otlp-proto.generated')>(require, './otlp-proto.generated');

let root: Root | undefined;

/** A message type of the OTLP definitions, loaded on first use: `serve` without OTLP traffic never loads protobufjs. */
function messageType(name: string): Type {
  return otlpRoot().lookupType(name);
}

function otlpRoot(): Root {
  return (root ??= protobufLight().Root.fromJSON(otlpProto().OTLP_PROTO));
}

/**
 * The OTLP/gRPC method a signal is exported to, `/<package>.<Service>/Export`, from the official
 * service definitions (TraceService, LogsService).
 */
export function grpcExportPath(signal: 'traces' | 'logs'): string {
  const service = signal === 'logs' ? `${LOGS_SERVICE}.LogsService` : `${TRACE_SERVICE}.TraceService`;
  return `/${service}/${otlpRoot().lookupService(service).methods.Export.name}`;
}

export type OtlpFormat = 'protobuf' | 'json';

/** The body's format from its Content-Type, or undefined for one OTLP/HTTP does not define. */
export function otlpFormatOf(contentType: string | undefined): OtlpFormat | undefined {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json') return 'json';
  return undefined;
}

/** A protobuf message of the OTLP definitions, or an error naming what the body should have been. */
function decodeMessage(type: string, body: unknown): object {
  const name = type.slice(type.lastIndexOf('.') + 1);
  if (!(body instanceof Uint8Array)) throw new OtlpDecodeError(`the body must be a protobuf ${name}`);
  try {
    return messageType(type).decode(body);
  } catch (err) {
    throw new OtlpDecodeError(
      `the body is not a protobuf ${name} (${err instanceof Error ? err.message : String(err)})`,
    );
  }
}

/** The spans of a request body: protobuf bytes, or OTLP/JSON already parsed. */
export function decodeTraces(format: OtlpFormat, body: unknown): OtlpSpan[] {
  return spansOfRequest(format === 'json' ? body : decodeMessage(`${TRACE_SERVICE}.ExportTraceServiceRequest`, body));
}

/** The exception log records of a request body (POST /v1/logs), and the other records counted by reason. */
export function decodeLogs(format: OtlpFormat, body: unknown): LogRecords {
  return logRecordsOfRequest(
    format === 'json' ? body : decodeMessage(`${LOGS_SERVICE}.ExportLogsServiceRequest`, body),
  );
}

/**
 * An `ExportTraceServiceResponse` (or, for `logs`, an `ExportLogsServiceResponse`) in the
 * request's format; `partialSuccess` only when spans (log records) were rejected.
 */
export function encodeResponse(
  format: OtlpFormat,
  rejected: number,
  errorMessage: string,
  signal: 'traces' | 'logs' = 'traces',
): Buffer | object {
  const field = signal === 'logs' ? 'rejectedLogRecords' : 'rejectedSpans';
  if (format === 'json') return rejected > 0 ? { partialSuccess: { [field]: String(rejected), errorMessage } } : {};
  const response = rejected > 0 ? { partialSuccess: { [field]: rejected, errorMessage } } : {};
  const type =
    signal === 'logs' ? `${LOGS_SERVICE}.ExportLogsServiceResponse` : `${TRACE_SERVICE}.ExportTraceServiceResponse`;
  return Buffer.from(messageType(type).encode(response).finish());
}

/** For tests and the benchmark: a protobuf request body (traces, or logs) from OTLP/JSON-shaped objects. */
export function encodeRequest(request: object, signal: 'traces' | 'logs' = 'traces'): Uint8Array {
  const type = messageType(
    signal === 'logs' ? `${LOGS_SERVICE}.ExportLogsServiceRequest` : `${TRACE_SERVICE}.ExportTraceServiceRequest`,
  );
  return type.encode(type.fromObject(request)).finish();
}

/** An Export response (traces, or logs) decoded to a plain object, 64-bit counts as numbers. */
export function decodeResponse(signal: 'traces' | 'logs', bytes: Uint8Array): Record<string, unknown> {
  const type = messageType(
    signal === 'logs' ? `${LOGS_SERVICE}.ExportLogsServiceResponse` : `${TRACE_SERVICE}.ExportTraceServiceResponse`,
  );
  return type.toObject(type.decode(bytes), { longs: Number });
}
