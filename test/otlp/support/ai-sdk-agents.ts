/**
 * A multi-agent run on the Vercel AI SDK (`ai`), whose own OpenTelemetry telemetry
 * (`experimental_telemetry`) describes it, exported by the OpenTelemetry JS SDK's protobuf OTLP
 * exporter configured by the OTEL_EXPORTER_OTLP_* environment variables alone. The models are
 * scripted (`MockLanguageModelV2`, no network): a planner agent calls a researcher agent through a
 * tool; the researcher runs a tool that works and one that fails; then the planner asks a writer.
 * Prints the trace id. argv[2]: the session id.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV2 } from 'ai/test';
import { z } from 'zod';
import { RootTrace } from './root-trace';

type Reply = Awaited<ReturnType<MockLanguageModelV2['doGenerate']>>;

function says(text: string, input: number, output: number): Reply {
  return {
    content: [{ type: 'text', text }],
    finishReason: 'stop',
    usage: { inputTokens: input, outputTokens: output, totalTokens: input + output },
    warnings: [],
  };
}

function calls(calls: { name: string; input: object }[], input: number, output: number): Reply {
  return {
    content: calls.map((c, i) => ({
      type: 'tool-call',
      toolCallId: `call-${c.name}-${i}`,
      toolName: c.name,
      input: JSON.stringify(c.input),
    })),
    finishReason: 'tool-calls',
    usage: { inputTokens: input, outputTokens: output, totalTokens: input + output },
    warnings: [],
  };
}

const telemetry = (agent: string, sessionId: string) => ({
  isEnabled: true,
  functionId: agent,
  metadata: { sessionId },
});

async function researcher(question: string, sessionId: string): Promise<string> {
  const model = new MockLanguageModelV2({
    modelId: 'scripted-small',
    doGenerate: [
      calls(
        [
          { name: 'search_flights', input: { city: 'Lisbon' } },
          { name: 'book_hotel', input: { city: 'Lisbon' } },
        ],
        200,
        50,
      ),
      says('3 flights found; the hotel could not be booked', 100, 20),
    ],
  });
  const result = await generateText({
    model,
    prompt: question,
    stopWhen: stepCountIs(3),
    tools: {
      search_flights: tool({
        description: 'find flights',
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => `3 flights to ${city}`,
      }),
      book_hotel: tool({
        description: 'book a hotel',
        inputSchema: z.object({ city: z.string() }),
        execute: async (): Promise<string> => {
          throw new Error('no rooms left');
        },
      }),
    },
    experimental_telemetry: telemetry('researcher', sessionId),
  });
  return result.text;
}

async function writer(notes: string, sessionId: string): Promise<string> {
  const model = new MockLanguageModelV2({
    modelId: 'scripted-large',
    doGenerate: [says('Your weekend in Lisbon', 300, 400)],
  });
  return (await generateText({ model, prompt: notes, experimental_telemetry: telemetry('writer', sessionId) })).text;
}

async function planner(sessionId: string): Promise<string> {
  const model = new MockLanguageModelV2({
    modelId: 'scripted-large',
    doGenerate: [
      calls([{ name: 'ask_researcher', input: { question: 'flights and a hotel in Lisbon' } }], 120, 30),
      calls([{ name: 'ask_writer', input: { notes: 'flights found, no hotel' } }], 60, 10),
      says('Done', 10, 5),
    ],
  });
  const result = await generateText({
    model,
    prompt: 'Plan a weekend in Lisbon',
    stopWhen: stepCountIs(4),
    tools: {
      ask_researcher: tool({
        description: 'hand the research to the researcher agent',
        inputSchema: z.object({ question: z.string() }),
        execute: ({ question }) => researcher(question, sessionId),
      }),
      ask_writer: tool({
        description: 'hand the write-up to the writer agent',
        inputSchema: z.object({ notes: z.string() }),
        execute: ({ notes }) => writer(notes, sessionId),
      }),
    },
    experimental_telemetry: telemetry('planner', sessionId),
  });
  return result.text;
}

async function main(): Promise<void> {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const root = new RootTrace();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'ai-sdk-trip' }),
    spanProcessors: [
      root,
      new BatchSpanProcessor(new OTLPTraceExporter(), { maxExportBatchSize: 4, scheduledDelayMillis: 20 }),
    ],
  });
  trace.setGlobalTracerProvider(provider);
  await planner(process.argv[2] ?? 'session-1');
  await provider.forceFlush();
  await provider.shutdown();
  process.stdout.write(`${root.traceId}\n`);
}

main().catch((err) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
