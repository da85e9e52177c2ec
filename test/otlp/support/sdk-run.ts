import { context, Span, SpanStatusCode, trace, Tracer } from '@opentelemetry/api';

/** Runs `work` inside a span that ends when it returns (or throws: status ERROR and the exception recorded). */
async function inSpan<T>(
  tracer: Tracer,
  name: string,
  attributes: Record<string, string | number>,
  parent: Span | undefined,
  work: (span: Span) => Promise<T> | T,
): Promise<T> {
  const ctx = parent ? trace.setSpan(context.active(), parent) : context.active();
  const span = tracer.startSpan(name, { attributes }, ctx);
  try {
    return await work(span);
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    return undefined as T;
  } finally {
    span.end();
  }
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 3));

/**
 * A multi-agent run instrumented with the OpenTelemetry JS API the way the GenAI semantic
 * conventions describe it: a workflow; a planner agent that calls the model and hands off to a
 * researcher; the researcher's model call, a tool that works and a tool that fails; then a writer.
 * Returns the trace id.
 */
export async function runGenAiAgents(tracer: Tracer, conversationId: string): Promise<string> {
  let traceId = '';
  await inSpan(
    tracer,
    'invoke_workflow trip-planner',
    {
      'gen_ai.operation.name': 'invoke_workflow',
      'gen_ai.workflow.name': 'trip-planner',
      'gen_ai.conversation.id': conversationId,
    },
    undefined,
    async (root) => {
      traceId = root.spanContext().traceId;
      await inSpan(
        tracer,
        'invoke_agent planner',
        { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'planner' },
        root,
        async (planner) => {
          await inSpan(
            tracer,
            'chat gpt-4o',
            {
              'gen_ai.operation.name': 'chat',
              'gen_ai.request.model': 'gpt-4o',
              'gen_ai.usage.input_tokens': 120,
              'gen_ai.usage.output_tokens': 30,
            },
            planner,
            pause,
          );
          await inSpan(
            tracer,
            'invoke_agent researcher',
            { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'researcher' },
            planner,
            async (researcher) => {
              await inSpan(
                tracer,
                'chat gpt-4o-mini',
                {
                  'gen_ai.operation.name': 'chat',
                  'gen_ai.request.model': 'gpt-4o-mini',
                  'gen_ai.usage.prompt_tokens': 200,
                  'gen_ai.usage.completion_tokens': 50,
                },
                researcher,
                pause,
              );
              await inSpan(
                tracer,
                'execute_tool search_flights',
                { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'search_flights' },
                researcher,
                pause,
              );
              await inSpan(
                tracer,
                'execute_tool book_hotel',
                { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'book_hotel' },
                researcher,
                async () => {
                  await pause();
                  throw new Error('no rooms left');
                },
              );
            },
          );
        },
      );
      await inSpan(
        tracer,
        'invoke_agent writer',
        {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': 'writer',
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.input_tokens': 300,
          'gen_ai.usage.output_tokens': 400,
        },
        root,
        pause,
      );
    },
  );
  return traceId;
}
