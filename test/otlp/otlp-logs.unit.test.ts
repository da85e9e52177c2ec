import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import type { PlanEvent } from '../../src/contracts';
import { decodeLogs, encodeRequest, encodeResponse } from '../../src/otlp/otlp-codec';
import { HeldSpanJournal } from '../../src/otlp/held-span-journal';
import type { OtlpLogRecord } from '../../src/otlp/otlp-log';
import { TraceAssembler } from '../../src/otlp/trace-assembler';
import type { OtlpSpan } from '../../src/otlp/otlp-span';
import { hexId, loggedExceptionRun, protobufShaped } from './otlp-fixtures';

const TRACE = '5af7651916cd43dd8448eb211c80319c';
const opts = { captureContent: false, quietMs: 1_000, rootlessMs: 60_000, maxSpans: 10_000 };

/** The events a TraceAssembler publishes for spans and log records taken in the order given. */
function assembled(batches: ({ spans: OtlpSpan[] } | { logs: OtlpLogRecord[] })[]): PlanEvent[] {
  const events: PlanEvent[] = [];
  const assembler = new TraceAssembler(opts, { publish: (e) => events.push(...e), unmapped: () => {} }, () => 0);
  for (const b of batches)
    if ('spans' in b) assembler.add(b.spans);
    else assembler.addLogs(b.logs);
  assembler.flushDue(true);
  return events;
}

const failed = (events: PlanEvent[]) => events.filter((e) => e.type === 'step.failed').map((e) => e.payload);

describe('OTLP log records (POST /v1/logs)', () => {
  const { spans, logs } = loggedExceptionRun(TRACE);

  it('reads the exception record of a span from protobuf and OTLP/JSON alike, and counts the others with why', () => {
    const fromJson = decodeLogs('json', logs);
    const proto = protobufShaped(logs);
    const fromProtobuf = decodeLogs('protobuf', encodeRequest(proto, 'logs'));
    expect(fromProtobuf).toEqual(fromJson);
    expect(fromJson.records).toEqual([
      {
        traceId: TRACE,
        spanId: hexId('tool2'),
        timeNs: spans.find((s) => s.spanId === hexId('tool2'))!.endNs,
        exception: {
          'exception.type': 'HotelApiError',
          'exception.message': 'no rooms left',
          'exception.stacktrace': 'HotelApiError: no rooms left\n    at book (hotel.ts:12)',
        },
      },
    ]);
    expect([...fromJson.rejected]).toEqual([['not an exception or ERROR log record', 1]]);
  });

  it('takes an ERROR record without exception attributes as the exception, its body the message; refuses one without a span', () => {
    const body = {
      resourceLogs: [
        {
          scopeLogs: [
            {
              logRecords: [
                {
                  severityNumber: 'SEVERITY_NUMBER_ERROR',
                  body: { stringValue: 'card declined' },
                  traceId: TRACE,
                  spanId: hexId('tool1'),
                },
                { severityNumber: 21, body: { stringValue: 'no span' } },
              ],
            },
          ],
        },
      ],
    };
    const { records, rejected } = decodeLogs('json', body);
    expect(records.map((r) => r.exception)).toEqual([{ 'exception.message': 'card declined' }]);
    expect([...rejected]).toEqual([['an exception log record without a trace id and span id', 1]]);
    expect(() =>
      decodeLogs('json', {
        resourceLogs: [
          {
            scopeLogs: [
              { logRecords: [{ severityNumber: 17, body: { stringValue: 'x' }, traceId: 'zz', spanId: hexId('a') }] },
            ],
          },
        ],
      }),
    ).toThrow('resourceLogs[0].scopeLogs[0].logRecords[0].traceId must be 32 hex digits (got "zz")');
  });

  it('answers an ExportLogsServiceResponse, partialSuccess.rejectedLogRecords in JSON and protobuf', () => {
    expect(encodeResponse('json', 2, '2 not an exception or ERROR log record', 'logs')).toEqual({
      partialSuccess: { rejectedLogRecords: '2', errorMessage: '2 not an exception or ERROR log record' },
    });
    expect(Buffer.from(encodeResponse('protobuf', 0, '', 'logs') as Buffer).length).toBe(0);
  });

  it('gives the failed step its error from the log record, whichever arrives first (property: any interleaving)', () => {
    const { records } = decodeLogs('json', logs);
    const reference = assembled([{ spans }, { logs: records }]);
    expect(failed(reference)).toEqual([expect.objectContaining({ error: 'HotelApiError: no rooms left' })]);
    fc.assert(
      fc.property(
        fc.shuffledSubarray(spans, { minLength: spans.length, maxLength: spans.length }),
        fc.nat(),
        (order, cut) => {
          const at = cut % (order.length + 1);
          const batches = [
            { spans: order.slice(0, at) },
            { logs: records },
            { spans: order.slice(at) },
            { logs: records },
          ];
          expect(assembled(batches)).toEqual(reference);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("never overrides a span's own error: its status message, then its exception event, win over a logged one", () => {
    const { records } = decodeLogs('json', logs);
    const withMessage = spans.map((s) => (s.spanId === hexId('tool2') ? { ...s, statusMessage: 'timeout' } : s));
    expect(failed(assembled([{ logs: records }, { spans: withMessage }]))[0]).toMatchObject({ error: 'timeout' });
    const withEvent = spans.map((s) =>
      s.spanId === hexId('tool2')
        ? {
            ...s,
            events: [
              {
                name: 'exception',
                timeNs: s.endNs,
                attributes: { 'exception.type': 'Own', 'exception.message': 'own' },
              },
            ],
          }
        : s,
    );
    expect(failed(assembled([{ logs: records }, { spans: withEvent }]))[0]).toMatchObject({ error: 'Own: own' });
  });

  it('counts a record whose span never arrived, and refuses one of a trace already mapped', () => {
    const { records } = decodeLogs('json', logs);
    let orphans = 0;
    const assembler = new TraceAssembler(
      opts,
      { publish: () => {}, unmapped: () => {}, unmappedLogs: (n) => (orphans += n) },
      () => 0,
    );
    assembler.addLogs(records);
    assembler.flushDue(true);
    expect(orphans).toBe(1);
    expect(assembler.addLogs(records)).toMatchObject({
      accepted: 0,
      rejected: 1,
      reasons: ['1 its trace was already turned into a plan (raise OTLP_TRACE_QUIET_MS)'],
    });
  });

  it('holds log records in the held-span journal beside spans, until their trace is done', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-held-logs-'));
    try {
      const { records } = decodeLogs('json', logs);
      const first = new HeldSpanJournal(dir, pino({ level: 'silent' }));
      first.append(spans.slice(0, 3));
      first.appendLogs(records);
      await first.synced();
      const second = new HeldSpanJournal(dir, pino({ level: 'silent' }));
      expect(second.recoverAll()).toEqual({ spans: spans.slice(0, 3), logs: records });
      second.done([TRACE]);
      await second.close();
      expect(new HeldSpanJournal(dir, pino({ level: 'silent' })).recoverAll()).toEqual({ spans: [], logs: [] });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
