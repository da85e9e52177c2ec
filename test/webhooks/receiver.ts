import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request a test receiver got. */
export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** The body's `type` and `data`, read only when the signature verified. */
  type: string;
  data: Record<string, unknown>;
}

/**
 * A local webhook receiver: verifies each request with the Standard Webhooks library, answers 204
 * when it verifies (400 when not: `unverified` counts those), and keeps them. `down()` answers 503
 * to every request until `up()`.
 */
export class Receiver {
  readonly got: Received[] = [];
  unverified = 0;
  private refusing = false;
  private constructor(
    private readonly server: http.Server,
    private readonly secret: string,
  ) {}

  static async start(secret: string, port = 0): Promise<Receiver> {
    const holder: { receiver?: Receiver } = {};
    const server = http.createServer((req, res) => holder.receiver!.handle(req, res));
    const receiver = new Receiver(server, secret);
    holder.receiver = receiver;
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  down(): void {
    this.refusing = true;
  }

  up(): void {
    this.refusing = false;
  }

  /** Ids of `type` received at least once. */
  idsOf(type: string): Set<string> {
    return new Set(this.got.filter((r) => r.type === type).map((r) => r.id));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (this.refusing) {
        res.writeHead(503).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(req.headers['webhook-id']),
        'webhook-timestamp': String(req.headers['webhook-timestamp']),
        'webhook-signature': String(req.headers['webhook-signature']),
      };
      let payload: { type: string; data: Record<string, unknown> };
      try {
        payload = new Webhook(this.secret).verify(body, headers) as typeof payload;
      } catch {
        this.unverified++;
        res.writeHead(400).end();
        return;
      }
      this.got.push({
        id: headers['webhook-id'],
        timestamp: headers['webhook-timestamp'],
        signature: headers['webhook-signature'],
        body,
        type: payload.type,
        data: payload.data,
      });
      res.writeHead(204).end();
    });
  }
}
