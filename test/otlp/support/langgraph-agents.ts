/**
 * A LangGraph JS multi-agent run, instrumented by OpenInference's LangChain instrumentation and
 * exported by the OpenTelemetry JS SDK's protobuf OTLP exporter, configured by the
 * OTEL_EXPORTER_OTLP_* environment variables alone. The model is scripted (no network): a planner
 * agent hands the work to a researcher, who calls a tool that works and one that fails, then a
 * writer finishes. Prints the trace id. argv[2]: the session (thread) id.
 */
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { tool } from '@langchain/core/tools';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { z } from 'zod';
import { RootTrace } from './root-trace';

/** A chat model that answers from a script and reports token usage like a real provider. */
class ScriptedChatModel extends BaseChatModel {
  private turn = 0;
  constructor(private readonly script: { text: string; input: number; output: number }[]) {
    super({});
  }
  override invocationParams(): Record<string, unknown> {
    return { model: 'scripted-model' };
  }
  _llmType(): string {
    return 'scripted';
  }
  async _generate(_messages: BaseMessage[]): Promise<ChatResult> {
    const line = this.script[this.turn++ % this.script.length];
    const usage = { input_tokens: line.input, output_tokens: line.output, total_tokens: line.input + line.output };
    const message = new AIMessage({ content: line.text, usage_metadata: usage });
    return {
      generations: [{ message, text: line.text }],
      llmOutput: {
        tokenUsage: { promptTokens: line.input, completionTokens: line.output, totalTokens: line.input + line.output },
      },
    };
  }
}

const model = new ScriptedChatModel([
  { text: 'Research flights and a hotel in Lisbon', input: 120, output: 30 },
  { text: 'Searching flights, then booking', input: 200, output: 50 },
  { text: 'Your weekend in Lisbon: flights found, no hotel yet', input: 300, output: 400 },
]);
const searchFlights = tool(async ({ city }: { city: string }) => `3 flights to ${city}`, {
  name: 'search_flights',
  description: 'find flights',
  schema: z.object({ city: z.string() }),
});
const bookHotel = tool(
  async (): Promise<string> => {
    throw new Error('no rooms left');
  },
  { name: 'book_hotel', description: 'book a hotel', schema: z.object({ city: z.string() }) },
);

const State = Annotation.Root({ notes: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });

const graph = new StateGraph(State)
  .addNode('planner', async () => ({ notes: [String((await model.invoke('Plan a weekend in Lisbon')).content)] }))
  .addNode('researcher', async () => {
    const notes = [String((await model.invoke('Research it')).content)];
    notes.push(String(await searchFlights.invoke({ city: 'Lisbon' })));
    try {
      await bookHotel.invoke({ city: 'Lisbon' });
    } catch (err) {
      notes.push(`hotel: ${(err as Error).message}`);
    }
    return { notes };
  })
  .addNode('writer', async () => ({ notes: [String((await model.invoke('Write it up')).content)] }))
  .addEdge(START, 'planner')
  .addEdge('planner', 'researcher')
  .addEdge('researcher', 'writer')
  .addEdge('writer', END)
  .compile();

async function main(): Promise<void> {
  const root = new RootTrace();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'langgraph-trip' }),
    spanProcessors: [
      root,
      new BatchSpanProcessor(new OTLPTraceExporter(), { maxExportBatchSize: 4, scheduledDelayMillis: 20 }),
    ],
  });
  trace.setGlobalTracerProvider(provider);
  const instrumentation = new LangChainInstrumentation();
  instrumentation.setTracerProvider(provider);
  instrumentation.manuallyInstrument(CallbackManagerModule);
  await graph.invoke({}, { metadata: { session_id: process.argv[2] ?? 'thread-1' } });
  await provider.forceFlush();
  await provider.shutdown();
  process.stdout.write(`${root.traceId}\n`);
}

main().catch((err) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
