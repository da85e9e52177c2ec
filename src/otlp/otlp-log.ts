/**
 * OTLP log records as the mapping reads them (POST /v1/logs): only the records that say a span
 * failed, an exception (`exception.type`, `exception.message` or `exception.stacktrace`) or a
 * record of severity ERROR or above, with the trace and span they belong to. Such a record is the
 * span's exception as a log, where instrumentations now put what span events held: it is given to
 * its span as an `exception` event, after the span's own events, so a span's own error wins.
 */
import type { AttrValue, OtlpSpan, OtlpSpanEvent } from './otlp-span';
import { anyValue, attributesOf, idOf, listOf, nanosOf, OtlpDecodeError } from './otlp-span';

export interface OtlpLogRecord {
  traceId: string;
  spanId: string;
  /** The record's time (observed time when it has none), ns since the Unix epoch. */
  timeNs: bigint;
  /** The exception as span event attributes: `exception.type`, `exception.message`, `exception.stacktrace`. */
  exception: Record<string, AttrValue>;
}

/** OpenTelemetry's SeverityNumber of ERROR: this and above (ERROR2..4, FATAL..) report a failure. */
const SEVERITY_ERROR = 17;
const EXCEPTION_KEYS = ['exception.type', 'exception.message', 'exception.stacktrace'] as const;

/** What a request's log records give: the exception records, and how many others it held, with why. */
export interface LogRecords {
  records: OtlpLogRecord[];
  rejected: Map<string, number>;
}

function severityOf(value: unknown): number {
  if (typeof value === 'string') {
    const named = /^SEVERITY_NUMBER_(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)(\d?)$/.exec(value);
    if (!named) return Number(value) || 0;
    const base = { TRACE: 1, DEBUG: 5, INFO: 9, WARN: 13, ERROR: 17, FATAL: 21 }[named[1] as 'TRACE'];
    return base + (named[2] ? Number(named[2]) - 1 : 0);
  }
  return typeof value === 'number' ? value : 0;
}

/** The text of a log record's body: a string as it is, anything else as JSON. */
function bodyText(body: AttrValue): string | undefined {
  if (body === null || body === '') return undefined;
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/**
 * The exception records of an `ExportLogsServiceRequest`, decoded by protobufjs or parsed from
 * OTLP/JSON (the same field names), and the other records counted by reason.
 */
export function logRecordsOfRequest(request: unknown): LogRecords {
  if (typeof request !== 'object' || request === null || Array.isArray(request))
    throw new OtlpDecodeError('the body must be an ExportLogsServiceRequest object ({"resourceLogs": [...]})');
  const records: OtlpLogRecord[] = [];
  const rejected = new Map<string, number>();
  const reject = (why: string) => rejected.set(why, (rejected.get(why) ?? 0) + 1);
  listOf((request as Record<string, unknown>).resourceLogs).forEach((rl, r) => {
    listOf(rl.scopeLogs).forEach((sl, s) => {
      listOf(sl.logRecords).forEach((log, i) => {
        const where = `resourceLogs[${r}].scopeLogs[${s}].logRecords[${i}]`;
        const attributes = attributesOf(log.attributes);
        const exception: Record<string, AttrValue> = {};
        for (const key of EXCEPTION_KEYS) if (attributes[key] != null) exception[key] = attributes[key];
        const severe = severityOf(log.severityNumber) >= SEVERITY_ERROR;
        if (Object.keys(exception).length === 0) {
          const text = severe ? bodyText(anyValue(log.body)) : undefined;
          if (text === undefined) {
            reject(
              severe ? 'an ERROR log record with no exception and no body' : 'not an exception or ERROR log record',
            );
            return;
          }
          exception['exception.message'] = text;
        }
        const traceId = idOf(log.traceId, 16, `${where}.traceId`);
        const spanId = idOf(log.spanId, 8, `${where}.spanId`);
        if (traceId === '' || spanId === '') {
          reject('an exception log record without a trace id and span id');
          return;
        }
        const time = nanosOf(log.timeUnixNano, `${where}.timeUnixNano`);
        records.push({
          traceId,
          spanId,
          timeNs: time === 0n ? nanosOf(log.observedTimeUnixNano, `${where}.observedTimeUnixNano`) : time,
          exception,
        });
      });
    });
  });
  return { records, rejected };
}

/** One key per record, the same whatever request carried it: a retried record is held once. */
export function logRecordKey(record: OtlpLogRecord): string {
  return JSON.stringify([record.spanId, String(record.timeNs), record.exception]);
}

/**
 * The spans with their trace's exception records as `exception` events after their own, in a
 * fixed order (time, then key) whatever order the records came in; records of spans not among
 * `spans` are returned apart.
 */
export function withLoggedExceptions(
  spans: readonly OtlpSpan[],
  records: Iterable<OtlpLogRecord>,
): { spans: OtlpSpan[]; orphans: number } {
  const bySpan = new Map<string, OtlpLogRecord[]>();
  for (const r of records) {
    const list = bySpan.get(r.spanId);
    if (list) list.push(r);
    else bySpan.set(r.spanId, [r]);
  }
  if (bySpan.size === 0) return { spans: [...spans], orphans: 0 };
  const ids = new Set(spans.map((s) => s.spanId));
  let orphans = 0;
  for (const [spanId, list] of bySpan) if (!ids.has(spanId)) orphans += list.length;
  const out = spans.map((s) => {
    const list = bySpan.get(s.spanId);
    if (!list) return s;
    const logged: OtlpSpanEvent[] = list
      .map((r) => ({ r, key: logRecordKey(r) }))
      .sort((a, b) =>
        a.r.timeNs < b.r.timeNs ? -1 : a.r.timeNs > b.r.timeNs ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0,
      )
      .map(({ r }) => ({ name: 'exception', timeNs: r.timeNs, attributes: r.exception }));
    return { ...s, events: [...s.events, ...logged] };
  });
  return { spans: out, orphans };
}
