/**
 * OTLP/HTTP bodies in and out. Protobuf goes through the OpenTelemetry project's own protobufjs
 * code generated from the official `opentelemetry-proto` definitions, as
 * `@opentelemetry/otlp-transformer` ships it (its `generated/root` module, decode and encode
 * included); nothing here reads protobuf by hand.
 */
import { OtlpDecodeError, OtlpSpan, spansOfRequest } from './otlp-span';

interface MessageType {
  decode(body: Uint8Array): object;
  encode(message: object): { finish(): Uint8Array };
}

interface GeneratedRoot {
  opentelemetry: {
    proto: {
      collector: { trace: { v1: { ExportTraceServiceRequest: MessageType; ExportTraceServiceResponse: MessageType } } };
    };
  };
}

let root: GeneratedRoot['opentelemetry']['proto']['collector']['trace']['v1'] | undefined;

/** Loaded on first use: `plan-ledger serve` without OTLP traffic never loads protobufjs. */
function messages(): NonNullable<typeof root> {
  if (!root) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const generated = require('@opentelemetry/otlp-transformer/build/src/generated/root') as GeneratedRoot;
    root = generated.opentelemetry.proto.collector.trace.v1;
  }
  return root;
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
    message = messages().ExportTraceServiceRequest.decode(body);
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
  return Buffer.from(messages().ExportTraceServiceResponse.encode(response).finish());
}

/** For tests and the benchmark: a protobuf request body from OTLP/JSON-shaped objects. */
export function encodeRequest(request: object): Uint8Array {
  const type = messages().ExportTraceServiceRequest as MessageType & { fromObject(o: object): object };
  return type.encode(type.fromObject(request)).finish();
}
