/**
 * An instrumented agent application, as a separate process: the OpenTelemetry JS SDK with the OTLP
 * exporter named by argv[2] (`proto`, `json` or `grpc`), configured by the OTEL_EXPORTER_OTLP_* environment
 * variables alone, runs the multi-agent scenario of sdk-run.ts with conversation id argv[3] and
 * prints its trace id.
 */
import { OTLPTraceExporter as HttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { runGenAiAgents } from './sdk-run';

async function main(): Promise<void> {
  const kind = process.argv[2];
  const exporter =
    kind === 'json' ? new HttpJsonExporter() : kind === 'grpc' ? new GrpcExporter() : new ProtoExporter();
  // small batches sent often: one run reaches the server over several requests, children first
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'travel-agents' }),
    spanProcessors: [new BatchSpanProcessor(exporter, { maxExportBatchSize: 3, scheduledDelayMillis: 20 })],
  });
  const traceId = await runGenAiAgents(provider.getTracer('agents'), process.argv[3] ?? 'conversation');
  await provider.forceFlush();
  await provider.shutdown();
  process.stdout.write(`${traceId}\n`);
}

main().catch((err) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
