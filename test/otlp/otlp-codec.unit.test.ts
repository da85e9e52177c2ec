import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { decodeTraces } from '../../src/otlp/otlp-codec';
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
});
