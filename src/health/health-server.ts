import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../shared/logger';

/** The answer of /readyz; `checks` says which part failed and why, in words an operator can act on. */
export interface Readiness {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: string }>;
}

export interface HealthServerOptions {
  /** 0 = any free port (tests). */
  port: number;
  /** @defaultValue `0.0.0.0` */
  host?: string;
  readiness(): Promise<Readiness>;
  /** Prometheus text and its content type. */
  metrics(): Promise<{ contentType: string; body: string }>;
  logger: Logger;
}

export interface HealthServer {
  /** The bound port (useful with port 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * `/healthz` (the process answers), `/readyz` (200 or 503 with the failing checks as JSON),
 * `/metrics` (Prometheus text). Plain node:http: three GET routes need no framework.
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    void route(req.url ?? '/', req.method ?? 'GET', options).then(
      ({ status, type, body }) => {
        res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
        res.end(body);
      },
      (err) => {
        options.logger.error({ err, path: req.url }, 'health endpoint failed');
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error\n');
      },
    );
  });
  // A scraper holding a keep-alive socket must not delay shutdown.
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          `health server cannot listen on ${options.host ?? '0.0.0.0'}:${options.port} (${err.code ?? err.message}); set HEALTH_PORT to a free port, 0 for any, or off`,
        ),
      ),
    );
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function route(
  url: string,
  method: string,
  options: HealthServerOptions,
): Promise<{ status: number; type: string; body: string }> {
  const path = url.split('?')[0];
  if (method !== 'GET' && method !== 'HEAD') return { status: 405, type: 'text/plain', body: 'only GET\n' };
  switch (path) {
    case '/healthz':
      return { status: 200, type: 'application/json', body: '{"status":"ok"}\n' };
    case '/readyz': {
      const readiness = await options.readiness();
      return { status: readiness.ready ? 200 : 503, type: 'application/json', body: `${JSON.stringify(readiness)}\n` };
    }
    case '/metrics': {
      const { contentType, body } = await options.metrics();
      return { status: 200, type: contentType, body };
    }
    default:
      return { status: 404, type: 'text/plain', body: 'not found: try /healthz, /readyz or /metrics\n' };
  }
}
