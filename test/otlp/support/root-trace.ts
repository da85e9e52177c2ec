import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** A span processor that remembers the trace id of the root span (what an instrumented run prints). */
export class RootTrace implements SpanProcessor {
  traceId = '';
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    if (!span.parentSpanContext) this.traceId = span.spanContext().traceId;
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}
