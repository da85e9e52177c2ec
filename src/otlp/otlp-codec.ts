/**
 * OTLP/HTTP bodies in and out. Protobuf goes through protobufjs (its public reflection API) over the
 * official `opentelemetry-proto` definitions (otlp-proto.generated.ts, from proto/): nothing here
 * reads protobuf by hand, and the field numbers are the official ones.
 */
import type { Root, Type } from 'protobufjs';
import { OtlpDecodeError, OtlpSpan, spansOfRequest } from './otlp-span';

const TRACE_SERVICE = 'opentelemetry.proto.collector.trace.v1';

let root: Root | undefined;

/** A message type of the OTLP definitions, loaded on first use: `serve` without OTLP traffic never loads protobufjs. */
function messageType(name: string): Type {
  if (!root) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const protobuf = require('protobufjs/light') as typeof import('protobufjs');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { OTLP_PROTO } = require('./otlp-proto.generated') as typeof import('./otlp-proto.generated');
    root = protobuf.Root.fromJSON(OTLP_PROTO);
  }
  return root.lookupType(name);
}

export type OtlpFormat = 'protobuf' | 'json';

/** The body's format from its Content-Type, or undefined for one OTLP/HTTP does not define. */
export function otlpFormatOf(contentType: string | undefined): OtlpFormat | undefined {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json') return 'json';
  return undefined;
}

/** The spans of a request body: protobuf bytes, or OTLP/JSON already parsed. */
export function decodeTraces(format: OtlpFormat, body: unknown): OtlpSpan[] {
  if (format === 'json') return spansOfRequest(body);
  if (!(body instanceof Uint8Array)) throw new OtlpDecodeError('the body must be a protobuf ExportTraceServiceRequest');
  let message: object;
  try {
    message = messageType(`${TRACE_SERVICE}.ExportTraceServiceRequest`).decode(body);
  } catch (err) {
    throw new OtlpDecodeError(
      `the body is not a protobuf ExportTraceServiceRequest (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  return spansOfRequest(message);
}

/** An `ExportTraceServiceResponse` in the request's format; `partialSuccess` only when spans were rejected. */
export function encodeResponse(format: OtlpFormat, rejectedSpans: number, errorMessage: string): Buffer | object {
  const response = rejectedSpans > 0 ? { partialSuccess: { rejectedSpans, errorMessage } } : {};
  if (format === 'json')
    return rejectedSpans > 0 ? { partialSuccess: { rejectedSpans: String(rejectedSpans), errorMessage } } : {};
  return Buffer.from(messageType(`${TRACE_SERVICE}.ExportTraceServiceResponse`).encode(response).finish());
}

/** For tests and the benchmark: a protobuf request body from OTLP/JSON-shaped objects. */
export function encodeRequest(request: object): Uint8Array {
  const type = messageType(`${TRACE_SERVICE}.ExportTraceServiceRequest`);
  return type.encode(type.fromObject(request)).finish();
}
