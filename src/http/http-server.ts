import fastify, { FastifyBaseLogger, FastifyError, FastifyInstance } from 'fastify';
import swagger, { SwaggerOptions } from '@fastify/swagger';
import type { DataSource } from 'typeorm';
import type { PlanEventPublisher } from '../publisher';
import { httpStatusOf } from './http-errors';
import type { Logger } from '../shared/logger';
import { ApiKeys, KeyVerdict, Scope, verdict as scopeVerdict } from '../shared/api-keys';
import type { HttpConfig } from './http-config';
import { HttpMetrics } from './http-metrics';
import { registerIngestRoutes } from './ingest.routes';
import { registerOtlpRoutes } from './otlp.routes';
import type { TraceAssembler } from '../otlp/trace-assembler';
import type { OtlpIngestor } from './otlp-ingest';
import { registerReadRoutes } from './read.routes';
import { registerForkRoutes } from './fork.routes';
import { registerApprovalRoutes } from './approvals.routes';
import type { ApprovalWakeups } from '../queue/approval-signals';
import { registerWebhookRoutes } from './webhooks.routes';
import { NO_PRIVATE, type PrivateAllowance } from '../webhooks/webhook-target';
import { CONSOLE_CSP, ConsoleDeps, registerConsoleRoutes } from '../console/console.routes';
import { ConsoleSessions, CSRF_HEADER } from '../console/console-sessions';
import { registerSharedReads } from '../console/shared-reads';
import { registerConsoleApprovalRoutes } from '../console/console-approvals';

export interface HttpServerDeps {
  settings: Readonly<HttpConfig>;
  dataSource: DataSource;
  publisher: PlanEventPublisher;
  logger: Logger;
  /** Version shown in the OpenAPI document. */
  version: string;
  /** Wakes `GET /v1/approvals/{id}?waitMs=` when the worker announces the approval; without it held requests re-read every second. */
  approvalWakeups?: ApprovalWakeups;
  /** How often a held approval read re-reads without being woken. @defaultValue APPROVAL_REREAD_MS */
  approvalRereadMs?: number;
  /** The console's queues (dead letters, health); without them those routes answer 503. */
  queues?: Omit<ConsoleDeps, 'keys' | 'sessions'>;
  /** WEBHOOKS_ALLOW_PRIVATE: what a subscription's URL may resolve to. @defaultValue none of the refused addresses */
  webhookAllowPrivate?: PrivateAllowance;
}

export interface BuiltHttpServer {
  app: FastifyInstance;
  metrics: HttpMetrics;
  /** The spans POST /v1/traces holds until their traces complete (`flushDue(true)` maps them all now). */
  traces: TraceAssembler;
  /** Closes the held-span journal of POST /v1/traces: call after the publisher closed. */
  closeHeldSpans(): Promise<void>;
  /** The OTLP ingest behind POST /v1/traces and /v1/logs, shared with the OTLP/gRPC receiver. */
  otlp: OtlpIngestor;
  /** Makes POST /v1/events answer 503 (shutdown started). */
  beginClosing(): void;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Scope an API key needs for the route (a list: any of them); absent = open (/healthz, /metrics). */
    scope?: Scope | readonly Scope[];
  }
  interface FastifyRequest {
    /** The name of the approve key (or the console session signed in with one) the request was allowed with. */
    keyName?: string;
  }
}

/**
 * The Fastify app of `plan-ledger serve`: routes, API-key scopes, error vocabulary, metrics and the
 * OpenAPI document. Receives every resource (composition root: start-http-server.ts).
 */
export async function buildHttpServer(deps: HttpServerDeps): Promise<BuiltHttpServer> {
  const { settings } = deps;
  const app = fastify({
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    bodyLimit: settings.bodyLimitBytes,
    http: { maxHeaderSize: settings.maxHeaderBytes },
    // clients retry on a closed socket; a long idle keep-alive must not delay shutdown
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // req.protocol and req.ip follow X-Forwarded-* only from the proxies named in HTTP_TRUST_PROXY
    trustProxy: settings.trustProxy.length > 0 ? [...settings.trustProxy] : false,
  });
  // Answers are the query results as they are: schemas document, JSON.stringify serialises.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  const keys = new ApiKeys(settings.ingestKeys, settings.readKeys, settings.adminKeys, settings.approveKeys);
  const metrics = new HttpMetrics(deps.publisher);
  let closing = false;
  // long polls (POST /v1/events/status, GET /v1/approvals/{id}?waitMs=) end when shutdown starts
  const closingSignal = new AbortController();

  await app.register(swagger, openApiOptions(deps.version));

  const sessions = new ConsoleSessions();
  app.decorateRequest('keyName', undefined);
  addAccessCheck(app, { keys, sessions, metrics });
  registerSharedReads(app, {
    shareMs: settings.consoleShareMs,
    counter: metrics.consoleReads,
    isConsole: (req) =>
      req.headers.authorization === undefined && sessions.fromCookie(req.headers.cookie) !== undefined,
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unknown';
    metrics.requests.inc({ route, method: req.method, status: String(reply.statusCode) });
    metrics.duration.observe({ route }, reply.elapsedTime / 1000);
  });
  setErrorAnswers(app, settings);

  app.get('/healthz', { schema: { hide: true } }, async () => ({ ok: true }));
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) =>
    reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  );
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  registerIngestRoutes(app, {
    publisher: deps.publisher,
    dataSource: deps.dataSource,
    settings,
    metrics,
    closing: () => closing,
    closingSignal: closingSignal.signal,
  });
  const otlp = registerOtlpRoutes(app, {
    publisher: deps.publisher,
    settings,
    metrics,
    logger: deps.logger,
    closing: () => closing,
  });
  registerReadRoutes(app, deps.dataSource);
  registerForkRoutes(app, deps.dataSource);
  registerApprovalRoutes(app, {
    dataSource: deps.dataSource,
    publisher: deps.publisher,
    settings,
    metrics,
    closing: () => closing,
    waits: { wakeups: deps.approvalWakeups, closingSignal: closingSignal.signal, rereadMs: deps.approvalRereadMs },
  });
  registerWebhookRoutes(app, deps.dataSource, deps.webhookAllowPrivate ?? NO_PRIVATE);
  registerConsoleRoutes(app, { keys, sessions, ...deps.queues });
  registerConsoleApprovalRoutes(app, deps.dataSource);
  await app.ready();
  return {
    app,
    metrics,
    traces: otlp.assembler,
    closeHeldSpans: () => otlp.closeHeldSpans(),
    otlp: otlp.ingestor,
    beginClosing: () => {
      closing = true;
      closingSignal.abort();
    },
  };
}

/** A key allowed by any of `scopes`; refused: 401 for no or an unknown key, else 403 naming them all. */
function anyOf(scopes: readonly Scope[], check: (scope: Scope) => KeyVerdict): KeyVerdict {
  const verdicts = scopes.map(check);
  const allowed = verdicts.find((v) => v.ok);
  if (allowed) return allowed;
  const unknown = verdicts.find((v) => !v.ok && v.status === 401);
  return unknown ?? { ok: false, status: 403, message: `this API key lacks the ${scopes.join(' or ')} scope` };
}

/** The OpenAPI document's header and its security scheme. */
function openApiOptions(version: string): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'plan-ledger',
        version,
        description:
          'Ingest plan events and read plans back. Every /v1 route needs an API key (Authorization: Bearer <key>) with its scope.',
      },
      components: {
        securitySchemes: {
          apiKey: {
            type: 'http',
            scheme: 'bearer',
            description:
              'HTTP_INGEST_KEYS (POST /v1/events, /v1/traces, /v1/logs), HTTP_READ_KEYS (GET /v1/...), HTTP_ADMIN_KEYS (read, plus fork, replay, dead-letter replay/purge and webhooks) or HTTP_APPROVE_KEYS (decide approvals and read them)',
          },
        },
      },
    },
  };
}

/**
 * Every answer's safety headers, and the scope check of every route that names one: a Bearer key,
 * or else the console's session cookie.
 */
function addAccessCheck(
  app: FastifyInstance,
  access: { keys: ApiKeys; sessions: ConsoleSessions; metrics: HttpMetrics },
): void {
  const { keys, sessions, metrics } = access;
  app.addHook('onRequest', async (req, reply) => {
    // every answer: no sniffing, no framing, and for pages the console's CSP (no inline script)
    reply
      .header('x-content-type-options', 'nosniff')
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer')
      .header('content-security-policy', CONSOLE_CSP);
    const scope = req.routeOptions.config.scope;
    if (scope === undefined) return;
    // a Bearer key, or else the console's session cookie, whose state-changing requests must
    // carry its CSRF token (SameSite=Strict already keeps other sites' requests cookie-less)
    const session = req.headers.authorization === undefined ? sessions.fromCookie(req.headers.cookie) : undefined;
    const check = (one: Scope) =>
      session
        ? scopeVerdict({ scopes: session.session.scopes, name: session.session.name }, one)
        : keys.check(req.headers.authorization, one);
    let verdict = typeof scope === 'string' ? check(scope) : anyOf(scope, check);
    if (
      session &&
      verdict.ok &&
      req.method !== 'GET' &&
      req.method !== 'HEAD' &&
      req.headers[CSRF_HEADER] !== session.session.csrf
    ) {
      verdict = { ok: false, status: 403, message: `missing or wrong ${CSRF_HEADER} header (reload the console)` };
    }
    if (!verdict.ok) {
      metrics.refusals.inc({ status: String(verdict.status) });
      return reply.code(verdict.status).header('www-authenticate', 'Bearer').send({ error: verdict.message });
    }
    req.keyName = verdict.name;
  });
}

/** The error vocabulary's answers (http-errors.ts), and a 404 that points at the OpenAPI document. */
function setErrorAnswers(app: FastifyInstance, settings: Readonly<HttpConfig>): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const status = httpStatusOf(err);
    if (status !== undefined && status < 500) return reply.code(status).send({ error: err.message });
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return reply.code(413).send({
        error: `the body is larger than ${settings.bodyLimitBytes} bytes (HTTP_BODY_LIMIT_BYTES); send smaller batches`,
      });
    if (err.statusCode !== undefined && err.statusCode < 500)
      return reply.code(err.statusCode).send({ error: err.message });
    req.log.error({ err }, 'request failed');
    return reply.code(500).send({ error: 'internal error (logged by the server)' });
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ error: `no route ${req.method} ${req.url.split('?')[0]}; see GET /v1/openapi.json` }),
  );
}
