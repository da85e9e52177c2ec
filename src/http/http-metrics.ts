import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PlanEventPublisher } from '../publisher';

/** The server's own Prometheus registry (no global registry: tests run several servers in one process). */
export class HttpMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'plan_ledger_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'plan_ledger_http_request_duration_seconds',
    help: 'HTTP request duration',
    labelNames: ['route'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly events = new Counter({
    name: 'plan_ledger_http_events_total',
    help: 'events received by POST /v1/events, by outcome (accepted, invalid, dropped)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly consoleReads = new Counter({
    name: 'plan_ledger_http_console_reads_total',
    help: "console reads of live routes by how they were answered: computed, shared (another console's answer), not_modified (304)",
    labelNames: ['result'],
    registers: [this.registry],
  });
  readonly otlpSpans = new Counter({
    name: 'plan_ledger_otlp_spans_total',
    help: 'spans received by POST /v1/traces, by outcome (accepted, rejected: no GenAI/OpenInference attributes or late, unmapped: not part of a plan)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly otlpLogRecords = new Counter({
    name: 'plan_ledger_otlp_log_records_total',
    help: 'log records received by POST /v1/logs, by outcome (accepted: an exception record held with its trace, rejected: not an exception record, no span, or late, unmapped: its span never arrived)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly otlpEvents = new Counter({
    name: 'plan_ledger_otlp_events_total',
    help: 'events mapped from OTLP spans, by outcome (accepted, invalid, dropped)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly acks = new Counter({
    name: 'plan_ledger_http_unacknowledged_total',
    help: 'POST /v1/events and /v1/traces answered 503 because what they took was not durable: timeout (HTTP_ACK_TIMEOUT_MS) or lost (a journal write or fsync failed)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly refusals = new Counter({
    name: 'plan_ledger_http_auth_refusals_total',
    help: 'requests refused for a missing, unknown or under-scoped API key',
    labelNames: ['status'],
    registers: [this.registry],
  });

  constructor(publisher: PlanEventPublisher) {
    collectDefaultMetrics({ register: this.registry, prefix: 'plan_ledger_http_' });
    const stat = (name: string, help: string, pick: (s: ReturnType<PlanEventPublisher['stats']>) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(pick(publisher.stats()));
        },
      });
    stat(
      'plan_ledger_http_publisher_buffered_events',
      'events held in memory by the server publisher',
      (s) => s.buffered,
    );
    stat(
      'plan_ledger_http_publisher_journal_bytes',
      'bytes in the server publisher spill journal',
      (s) => s.journalBytes,
    );
    stat(
      'plan_ledger_http_publisher_published_total',
      'events the server publisher delivered to Redis',
      (s) => s.published,
    );
    stat(
      'plan_ledger_http_publisher_dropped_total',
      'valid events the server publisher dropped (journal full)',
      (s) => s.dropped,
    );
    stat('plan_ledger_http_publisher_redis_ready', '1 when the server publisher is connected to Redis', (s) =>
      s.redisReady ? 1 : 0,
    );
  }
}
