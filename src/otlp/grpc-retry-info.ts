/**
 * The `grpc-status-details-bin` of a refusal the client should retry: a `google.rpc.Status` whose
 * details hold a `google.rpc.RetryInfo`, as the OTLP/gRPC specification asks of a server that
 * throttles (the gRPC counterpart of OTLP/HTTP's Retry-After). The messages are declared here in
 * protobufjs reflection JSON with the field numbers of googleapis' google/rpc/status.proto,
 * google/rpc/error_details.proto and protobuf's any.proto and duration.proto.
 */
import type { Root } from 'protobufjs';
import { lazyRequire } from '../shared/lazy-require';

const protobufLight = lazyRequire<typeof import('protobufjs')>(require, 'protobufjs/light');

const RETRY_INFO_URL = 'type.googleapis.com/google.rpc.RetryInfo';

const STATUS_PROTO = {
  nested: {
    google: {
      nested: {
        protobuf: {
          nested: {
            Any: { fields: { typeUrl: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
            Duration: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
          },
        },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: 'int32', id: 1 },
                message: { type: 'string', id: 2 },
                details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
              },
            },
            RetryInfo: { fields: { retryDelay: { type: 'google.protobuf.Duration', id: 1 } } },
          },
        },
      },
    },
  },
};

let root: Root | undefined;

function statusRoot(): Root {
  return (root ??= protobufLight().Root.fromJSON(STATUS_PROTO));
}

/** A `google.rpc.Status` (`code`, `message`) asking the client to retry after `seconds`. */
export function retryStatusDetails(code: number, message: string, seconds: number): Buffer {
  const retryInfo = statusRoot().lookupType('google.rpc.RetryInfo');
  const status = statusRoot().lookupType('google.rpc.Status');
  const value = retryInfo.encode(retryInfo.fromObject({ retryDelay: { seconds } })).finish();
  const details = [{ typeUrl: RETRY_INFO_URL, value }];
  return Buffer.from(status.encode(status.fromObject({ code, message, details })).finish());
}

/** The retry delay in seconds of such details, or undefined when they hold no RetryInfo (for tests). */
export function retryDelayOf(detailsBin: Uint8Array): number | undefined {
  const statusType = statusRoot().lookupType('google.rpc.Status');
  const retryInfo = statusRoot().lookupType('google.rpc.RetryInfo');
  const status = statusType.toObject(statusType.decode(detailsBin)) as {
    details?: Array<{ typeUrl: string; value: Uint8Array }>;
  };
  const info = status.details?.find((d) => d.typeUrl === RETRY_INFO_URL);
  if (!info) return undefined;
  const decoded = retryInfo.toObject(retryInfo.decode(info.value), { longs: Number }) as {
    retryDelay?: { seconds?: number };
  };
  return decoded.retryDelay?.seconds ?? 0;
}
