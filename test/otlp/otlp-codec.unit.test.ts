import { SeverityNumber } from '@opentelemetry/api-logs';
import {
  JsonLogsSerializer,
  JsonTraceSerializer,
  ProtobufLogsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { decodeLogs, decodeTraces, encodeRequest } from '../../src/otlp/otlp-codec';
import { otlpProtoJson } from '../../scripts/otlp-proto';
import { OTLP_PROTO } from '../../src/otlp/otlp-proto.generated';

describe('OTLP protobuf definitions', () => {
  it('otlp-proto.generated.ts holds what `npm run otlp-proto` reads from proto/', () => {
    expect(OTLP_PROTO).toEqual(otlpProtoJson());
  });

  it('decodes what the OpenTelemetry SDK serialises, as its OTLP/JSON form reads', () => {
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'svc', 'deployment.id': 7 }),
      spanProcessors: [new SimpleSpanProcessor(memory)],
    });
    const tracer = provider.getTracer('t');
    const root = tracer.startSpan('root');
    const child = tracer.startSpan(
      'child',
      {
        attributes: { 'gen_ai.usage.input_tokens': 12, ratio: 0.5, ok: true, tags: ['a', 'b'] },
        links: [{ context: root.spanContext() }],
      },
      trace.setSpan(context.active(), root),
    );
    child.recordException(new Error('boom'));
    child.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
    child.end();
    root.end();
    const spans = memory.getFinishedSpans();
    const fromProto = decodeTraces('protobuf', ProtobufTraceSerializer.serializeRequest(spans)!);
    const fromJson = decodeTraces(
      'json',
      JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)!).toString()),
    );
    expect(fromProto).toEqual(fromJson);
    const decoded = fromProto.find((s) => s.name === 'child')!;
    expect(decoded).toMatchObject({
      parentSpanId: spans.find((s) => s.name === 'root')!.spanContext().spanId,
      attributes: {
        'service.name': 'svc',
        'deployment.id': 7,
        'gen_ai.usage.input_tokens': 12,
        ratio: 0.5,
        ok: true,
        tags: ['a', 'b'],
      },
      statusCode: 2,
      statusMessage: 'boom',
    });
    expect(decoded.events[0]).toMatchObject({ name: 'exception', attributes: { 'exception.message': 'boom' } });
    expect(decoded.links).toHaveLength(1);
    expect(decoded.endNs).toBeGreaterThanOrEqual(decoded.startNs);
    expect(decoded.startNs).toBeGreaterThan(1_700_000_000_000_000_000n);
  });

  it('reads fixed64 times whole from protobuf, the top bit and the low word included, as OTLP/JSON gives them', () => {
    const times = [
      '0',
      '1',
      '4294967295',
      '4294967296',
      '1767225600123456789',
      '9223372036854775808',
      '18446744073709551615',
    ];
    const request = (id: (hex: string) => string | Buffer) => ({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: times.map((t, i) => ({
                traceId: id('5b8efff798038103d269b633813fc60c'),
                spanId: id(`${i + 1}`.padStart(16, 'e')),
                name: `span ${i}`,
                startTimeUnixNano: t,
                endTimeUnixNano: t,
                events: [{ name: 'e', timeUnixNano: t }],
              })),
            },
          ],
        },
      ],
    });
    const fromProto = decodeTraces('protobuf', encodeRequest(request((hex) => Buffer.from(hex, 'hex'))));
    const fromJson = decodeTraces(
      'json',
      request((hex) => hex),
    );
    expect(fromProto.map((s) => [s.startNs, s.endNs, s.events[0].timeNs])).toEqual(
      times.map((t) => [BigInt(t), BigInt(t), BigInt(t)]),
    );
    expect(fromProto).toEqual(fromJson);
  });

  it('reads the exception log records the OpenTelemetry logs SDK serialises, correlated with the span they were emitted in', () => {
    const spans = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer('t');
    const memory = new InMemoryLogRecordExporter();
    const logger = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter: memory })] }).getLogger(
      'l',
    );
    const tool = tracer.startSpan('execute_tool book_hotel');
    const inTool = trace.setSpan(context.active(), tool);
    logger.emit({ severityNumber: SeverityNumber.INFO, body: 'calling the hotel API', context: inTool });
    logger.emit({
      context: inTool,
      severityNumber: SeverityNumber.ERROR,
      body: 'no rooms left',
      attributes: { 'exception.type': 'HotelApiError', 'exception.message': 'no rooms left' },
    });

    tool.end();
    const records = memory.getFinishedLogRecords();
    const fromProto = decodeLogs('protobuf', ProtobufLogsSerializer.serializeRequest(records)!);
    const fromJson = decodeLogs(
      'json',
      JSON.parse(Buffer.from(JsonLogsSerializer.serializeRequest(records)!).toString()),
    );
    expect(fromProto).toEqual(fromJson);
    expect(fromProto.records).toEqual([
      {
        traceId: tool.spanContext().traceId,
        spanId: tool.spanContext().spanId,
        timeNs: expect.any(BigInt),
        exception: { 'exception.type': 'HotelApiError', 'exception.message': 'no rooms left' },
      },
    ]);
    expect([...fromProto.rejected]).toEqual([['not an exception or ERROR log record', 1]]);
  });
});
