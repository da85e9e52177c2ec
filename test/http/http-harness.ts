import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config/config';
import { loadHttpConfig } from '../../src/http/http-config';
import { HttpServerHandle, startHttpServer } from '../../src/http/start-http-server';
import { createLogger } from '../../src/shared/logger';
import { startWorker, WorkerConfig, WorkerHandle } from '../../src/worker';
import type { WebhookConfig } from '../../src/webhooks/webhook-config';
import { parseAllowance } from '../../src/webhooks/webhook-target';
import { createMigratedDb, TestDb } from '../support/databases';
import { dropPrefix, openRedis, REDIS_URL, silentLogger, uniquePrefix } from '../worker/helpers/queue-harness';

export const INGEST_KEY = 'ingest-key-for-tests-0123456789';
export const READ_KEY = 'read-key-for-tests-0123456789ab';
export const ADMIN_KEY = 'admin-key-for-tests-0123456789ab';
/** The approve key every stack has (HTTP_APPROVE_KEYS `APPROVER:APPROVE_KEY`): its decisions' decidedBy is APPROVER. */
export const APPROVER = 'alice@ops';
export const APPROVE_KEY = 'approve-key-for-tests-0123456789';

export type Db = Awaited<ReturnType<typeof createMigratedDb>>;

/**
 * A real `plan-ledger serve` (in this process, listening on a free loopback port) plus an
 * in-process worker, on a throwaway database and queue prefix. `logs()` is every line the server
 * logged (request logs included), to check that no key reaches them.
 */
export interface ApiStack {
  db: Db;
  prefix: string;
  server: HttpServerHandle;
  worker: WorkerHandle | undefined;
  journalDir: string;
  logs(): string;
  /**
   * Stops only the server (the worker, database and queue stay); `startServer()` starts a new one on
   * the same port, prefix, database and server journal. `server` is then the new one.
   */
  stopServer(): Promise<void>;
  startServer(): Promise<void>;
  close(): Promise<void>;
}

export async function startApiStack(
  kind: TestDb,
  options: {
    env?: Record<string, string>;
    /** More of the application's environment (e.g. QUEUE_SHARDS), for serve and the worker. */
    appEnv?: Record<string, string>;
    worker?: boolean;
    redisUrl?: string;
    workerSettings?: Partial<WorkerConfig>;
    /** The in-process worker's webhook delivery. @defaultValue DEFAULT_WEBHOOK_CONFIG */
    webhooks?: WebhookConfig;
    /** The in-process worker runs the stall check (with `workerSettings`' stallAfterMs and stallCheckMs). */
    stallCheck?: boolean;
    /**
     * How often serve's held approval reads re-read unwoken. Longer than a test's timeout: a held
     * read answered before the wait ends was woken by the worker's message. @defaultValue APPROVAL_REREAD_MS
     */
    approvalRereadMs?: number;
  } = {},
): Promise<ApiStack> {
  const db = await createMigratedDb(kind);
  const prefix = uniquePrefix('http');
  const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-http-'));
  let logText = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      logText += String(chunk);
      done();
    },
  });
  const env = {
    REDIS_URL: options.redisUrl ?? REDIS_URL,
    QUEUE_PREFIX: prefix,
    DATABASE_URL: db.db.url,
    ...options.appEnv,
  };
  const serve = (port: string) =>
    startHttpServer({
      config: loadConfig(env),
      settings: loadHttpConfig({
        HTTP_PORT: port,
        HTTP_INGEST_KEYS: INGEST_KEY,
        HTTP_READ_KEYS: READ_KEY,
        HTTP_APPROVE_KEYS: `${APPROVER}:${APPROVE_KEY}`,
        HTTP_JOURNAL_DIR: journalDir,
        ...options.env,
      }),
      logger: createLogger({ level: 'info', destination: sink as never }),
      webhookAllowPrivate: parseAllowance(options.env?.WEBHOOKS_ALLOW_PRIVATE),
      approvalRereadMs: options.approvalRereadMs,
    });
  const server = await serve(options.env?.HTTP_PORT ?? '0');
  let running: HttpServerHandle | undefined = server;
  const worker =
    options.worker === false
      ? undefined
      : await startWorker({
          config: loadConfig(env),
          dataSource: db.ds,
          logger: silentLogger(),
          settings: { healthPort: null, concurrency: 16, batchSize: 500, ...options.workerSettings },
          webhooks: options.webhooks,
          stallCheck: options.stallCheck,
        });
  const stack: ApiStack = {
    db,
    prefix,
    server,
    worker,
    journalDir,
    logs: () => logText,
    async stopServer() {
      const stopping = running;
      running = undefined;
      await stopping?.close();
    },
    async startServer() {
      if (running) return;
      running = await serve(String(stack.server.port));
      stack.server = running;
    },
    async close() {
      await running?.close().catch(() => undefined);
      await worker?.close(10_000).catch(() => undefined);
      const redis = openRedis();
      await dropPrefix(redis, prefix).catch(() => undefined);
      // the keys of QUEUE_SHARDS' other shards (`<prefix>-s<i>of<N>:...`)
      const shardKeys = await redis.keys(`${prefix}-s*`).catch(() => [] as string[]);
      if (shardKeys.length > 0) await redis.del(...shardKeys).catch(() => undefined);
      redis.disconnect();
      await db.close();
      fs.rmSync(journalDir, { recursive: true, force: true });
    },
  };
  return stack;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** One HTTP request with fetch; `key` null sends no Authorization header. */
export async function call(
  stack: { server: { url: string } },
  method: string,
  route: string,
  options: {
    key?: string | null;
    body?: unknown;
    rawBody?: string;
    accept?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? (method === 'POST' ? INGEST_KEY : READ_KEY) : options.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (options.accept) headers.accept = options.accept;
  let body: string | undefined;
  if (options.rawBody !== undefined || options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = options.rawBody ?? JSON.stringify(options.body);
  }
  const res = await fetch(`${stack.server.url}${route}`, { method, headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** The approval as `GET /v1/approvals/{id}` answers it once its status is `status` (checked every 50 ms, up to 30 s). */
export async function approvalWithStatus(
  stack: { server: { url: string } },
  approvalId: string,
  status: string,
): Promise<Record<string, unknown>> {
  for (let i = 0; i < 600; i++) {
    const a = await call(stack, 'GET', `/v1/approvals/${approvalId}`);
    if (a.status === 200 && a.json.status === status) return a.json;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`approval ${approvalId} never became ${status}`);
}
