import * as http from 'node:http';
import * as https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { ResolvedTarget } from './webhook-target';

/** What one attempt came to: a 2xx answer, or why not. */
export type SendResult = { ok: true; status: number } | { ok: false; error: string };

/** The Standard Webhooks headers of a body: `webhook-id`, `webhook-timestamp`, `webhook-signature`. */
export function signedHeaders(secret: string, id: string, body: string, at: Date): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

/** A lookup that answers the checked address whatever the host: the connection goes where the check looked. */
function pinned(target: ResolvedTarget): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  }) as unknown as LookupFunction;
}

/** How long a kept-open connection may stay idle: less than the default keep-alive of Node's own servers. */
const IDLE_SOCKET_MS = 2_000;

/**
 * Keep-alive connections of a delivery loop, one pool per URL origin and checked address: a
 * connection is reused only to the address it was opened to, which passed the check then.
 */
export class WebhookAgents {
  private readonly pools = new Map<string, http.Agent>();

  constructor(private readonly maxSockets: number) {}

  for(target: ResolvedTarget): http.Agent {
    const key = `${target.url.origin}|${target.address}`;
    let agent = this.pools.get(key);
    if (!agent) {
      // `timeout`: an idle connection is closed before a receiver's own keep-alive limit closes it under a request
      const options = {
        keepAlive: true,
        maxSockets: this.maxSockets,
        maxFreeSockets: this.maxSockets,
        timeout: IDLE_SOCKET_MS,
      };
      agent = target.url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
      this.pools.set(key, agent);
    }
    return agent;
  }

  destroy(): void {
    for (const agent of this.pools.values()) agent.destroy();
    this.pools.clear();
  }
}

/**
 * POSTs a signed body to the checked address of the target; never throws. With `agent` (from
 * WebhookAgents.for(target)) the connection may be one kept open; without, a new one is closed after.
 */
export function sendWebhook(
  target: ResolvedTarget,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  agent?: http.Agent,
): Promise<SendResult> {
  const { url } = target;
  const client = url.protocol === 'https:' ? https : http;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise<SendResult>((resolve) => {
    const req = client.request(
      url,
      {
        method: 'POST',
        agent: agent ?? false,
        lookup: pinned(target),
        ...(url.protocol === 'https:' && isIP(host) === 0 ? { servername: host } : {}),
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'plan-ledger-webhooks',
          ...headers,
        },
        timeout: timeoutMs,
      },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        res.on('end', () =>
          resolve(status >= 200 && status < 300 ? { ok: true, status } : { ok: false, error: `HTTP ${status}` }),
        );
        res.on('error', (err) => resolve({ ok: false, error: err.message }));
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ ok: false, error: err.code ? `${err.code}: ${err.message}` : err.message }),
    );
    req.end(body);
  });
}
