import * as grpc from '@grpc/grpc-js';
import { decodeResponse, encodeRequest, grpcExportPath } from '../../../src/otlp/otlp-codec';
import { retryDelayOf } from '../../../src/otlp/grpc-retry-info';

/** What one OTLP/gRPC Export call got: the decoded response, or the status it was refused with. */
export interface GrpcAnswer {
  response?: Record<string, unknown>;
  code: grpc.status;
  details?: string;
  /** The RetryInfo delay (seconds) of a refusal, when it has one. */
  retryDelay?: number;
}

const raw = (b: Buffer) => b;

/**
 * One unary Export to `address` (host:port) with grpc-js, `authorization` metadata when `key` is
 * given; `body` is an OTLP/JSON-shaped request (or raw bytes, sent as they are).
 */
export async function grpcExport(
  address: string,
  signal: 'traces' | 'logs',
  body: object | Buffer,
  key?: string,
): Promise<GrpcAnswer> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (key !== undefined) metadata.set('authorization', `Bearer ${key}`);
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(encodeRequest(body, signal));
  try {
    return await new Promise<GrpcAnswer>((resolve) =>
      client.makeUnaryRequest(grpcExportPath(signal), raw, raw, bytes, metadata, (err, response) => {
        if (err) {
          const details = err.metadata?.get('grpc-status-details-bin')[0];
          resolve({
            code: err.code,
            details: err.details,
            retryDelay: Buffer.isBuffer(details) ? retryDelayOf(details) : undefined,
          });
        } else resolve({ code: grpc.status.OK, response: decodeResponse(signal, response!) });
      }),
    );
  } finally {
    client.close();
  }
}
