/**
 * One OTLP span as the mapping reads it, whatever the wire format it came in (protobuf or JSON):
 * ids in lower-case hex, times in nanoseconds since the Unix epoch, attributes as plain values
 * with the resource's attributes under the span's own.
 */
export type AttrValue = string | number | boolean | null | AttrValue[] | { [key: string]: AttrValue };

export interface OtlpSpanEvent {
  name: string;
  timeNs: bigint;
  attributes: Record<string, AttrValue>;
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  startNs: bigint;
  endNs: bigint;
  /** The resource's attributes overlaid with the span's. */
  attributes: Record<string, AttrValue>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
  events: OtlpSpanEvent[];
  links: { traceId: string; spanId: string }[];
  /** The name of the instrumentation scope that made the span, when the exporter sent one. */
  scope?: string;
}

/** Why a request body could not be read at all. */
export class OtlpDecodeError extends Error {
  override readonly name = 'OtlpDecodeError';
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Protobuf gives bytes; OTLP/JSON gives hex (the specification's JSON mapping of ids). */
export function idOf(value: unknown, bytes: number, what: string): string {
  // an unset bytes field: protobufjs's reflection default is an empty array
  if (value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)) return '';
  if (typeof value === 'string') {
    const hex = value.toLowerCase();
    if (hex.length === bytes * 2 && /^[0-9a-f]+$/.test(hex)) return /^0+$/.test(hex) ? '' : hex;
    throw new OtlpDecodeError(`${what} must be ${bytes * 2} hex digits (got ${JSON.stringify(value.slice(0, 80))})`);
  }
  if (value instanceof Uint8Array) {
    if (value.length === 0) return '';
    if (value.length !== bytes) throw new OtlpDecodeError(`${what} must be ${bytes} bytes (got ${value.length})`);
    let hex = '';
    for (const b of value) hex += HEX[b];
    return /^0+$/.test(hex) ? '' : hex;
  }
  throw new OtlpDecodeError(`${what} must be ${bytes * 2} hex digits`);
}

/** A protobufjs Long (a fixed64 field is unsigned): its 64 bits are `high` and `low`, whatever its sign flag says. */
function isLong(value: unknown): value is { high: number; low: number } {
  return (
    typeof value === 'object' &&
    typeof (value as { high?: unknown }).high === 'number' &&
    typeof (value as { low?: unknown }).low === 'number'
  );
}

/** fixed64 nanoseconds: a protobufjs Long, a number, or (JSON) a decimal string. */
export function nanosOf(value: unknown, what: string): bigint {
  if (value === undefined || value === null || value === '') return 0n;
  if (isLong(value)) return (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
  try {
    const text = typeof value === 'object' ? String(value) : String(value as string | number);
    const ns = BigInt(text.includes('.') || text.includes('e') ? Math.trunc(Number(text)) : text);
    if (ns < 0n) throw new Error('negative');
    return ns;
  } catch {
    throw new OtlpDecodeError(`${what} must be an unsigned integer of nanoseconds`);
  }
}

export function anyValue(value: unknown, depth = 0): AttrValue {
  if (typeof value !== 'object' || value === null || depth > 8) return null;
  const v = value as Record<string, unknown>;
  // protobufjs messages expose the set member of the oneof as `value`; JSON objects carry only it
  const which = typeof v.value === 'string' ? v.value : Object.keys(v).find((k) => k.endsWith('Value'));
  switch (which) {
    case 'stringValue':
      return typeof v.stringValue === 'string' ? v.stringValue : String(v.stringValue);
    case 'boolValue':
      return v.boolValue === true || v.boolValue === 'true';
    case 'intValue':
      return Number(String(v.intValue));
    case 'doubleValue':
      return Number(v.doubleValue);
    case 'arrayValue': {
      const values = (v.arrayValue as { values?: unknown[] } | null)?.values ?? [];
      return values.map((x) => anyValue(x, depth + 1));
    }
    case 'kvlistValue': {
      const values = (v.kvlistValue as { values?: unknown[] } | null)?.values ?? [];
      return attributesOf(values, depth + 1);
    }
    case 'bytesValue':
      return typeof v.bytesValue === 'string'
        ? v.bytesValue
        : Buffer.from(v.bytesValue as Uint8Array).toString('base64');
    default:
      return null;
  }
}

export function attributesOf(
  list: unknown,
  depth = 0,
  into: Record<string, AttrValue> = {},
): Record<string, AttrValue> {
  if (!Array.isArray(list)) return into;
  for (const kv of list as { key?: unknown; value?: unknown }[]) {
    if (typeof kv?.key !== 'string' || kv.key === '__proto__') continue;
    into[kv.key] = anyValue(kv.value, depth);
  }
  return into;
}

export function listOf(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value)
    ? (value.filter((x) => typeof x === 'object' && x !== null) as Record<string, unknown>[])
    : [];
}

/**
 * The spans of an `ExportTraceServiceRequest`, decoded by protobufjs (`Uint8Array` ids, `Long`
 * times) or parsed from OTLP/JSON (hex ids, decimal-string times): both have the same field names.
 */
export function spansOfRequest(request: unknown): OtlpSpan[] {
  if (typeof request !== 'object' || request === null || Array.isArray(request))
    throw new OtlpDecodeError('the body must be an ExportTraceServiceRequest object ({"resourceSpans": [...]})');
  const spans: OtlpSpan[] = [];
  listOf((request as Record<string, unknown>).resourceSpans).forEach((rs, r) => {
    const resource = attributesOf((rs.resource as Record<string, unknown> | undefined)?.attributes);
    listOf(rs.scopeSpans).forEach((ss, s) => {
      const scope = (ss.scope as Record<string, unknown> | undefined)?.name;
      listOf(ss.spans).forEach((span, i) => {
        const where = `resourceSpans[${r}].scopeSpans[${s}].spans[${i}]`;
        const status = (span.status ?? {}) as Record<string, unknown>;
        const code =
          typeof status.code === 'string' ? (status.code === 'STATUS_CODE_ERROR' ? 2 : 0) : Number(status.code ?? 0);
        spans.push({
          traceId: idOf(span.traceId, 16, `${where}.traceId`),
          spanId: idOf(span.spanId, 8, `${where}.spanId`),
          parentSpanId: idOf(span.parentSpanId, 8, `${where}.parentSpanId`),
          name: typeof span.name === 'string' ? span.name : '',
          startNs: nanosOf(span.startTimeUnixNano, `${where}.startTimeUnixNano`),
          endNs: nanosOf(span.endTimeUnixNano, `${where}.endTimeUnixNano`),
          attributes: attributesOf(span.attributes, 0, { ...resource }),
          statusCode: Number.isFinite(code) ? code : 0,
          statusMessage: typeof status.message === 'string' ? status.message : '',
          events: listOf(span.events).map((e, j) => ({
            name: typeof e.name === 'string' ? e.name : '',
            timeNs: nanosOf(e.timeUnixNano, `${where}.events[${j}].timeUnixNano`),
            attributes: attributesOf(e.attributes),
          })),
          links: listOf(span.links).map((l, j) => ({
            traceId: idOf(l.traceId, 16, `${where}.links[${j}].traceId`),
            spanId: idOf(l.spanId, 8, `${where}.links[${j}].spanId`),
          })),
          ...(typeof scope === 'string' && scope !== '' ? { scope } : {}),
        });
      });
    });
  });
  return spans;
}
