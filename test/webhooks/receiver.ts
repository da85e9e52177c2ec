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

/** The Standard Webhooks headers of one request, as they came. */
type SignatureHeaders = { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string };

/**
 * A local webhook receiver: verifies each request with the Standard Webhooks library, answers 204
 * when it verifies (400 when not: `unverified` counts those), and keeps them. `down()` answers 503
 * to every request until `up()`. With `verifyLater`, it answers 204 to every request and only
 * records its headers and raw body; `verifyRecorded()` then verifies them all (as a user's receiver
 * on another machine would, without taking the sender's CPU while they are sent).
 */
export class Receiver {
  readonly got: Received[] = [];
  unverified = 0;
  /** Requests verified so far, and with `verifyLater` those recorded to verify. */
  get answered(): number {
    return this.got.length + this.recorded.length;
  }
  private refusing = false;
  private readonly recorded: { headers: SignatureHeaders; body: string }[] = [];
  private constructor(
    private readonly server: http.Server,
    private readonly secret: string,
    private readonly verifyLater: boolean,
  ) {}

  static async start(secret: string, port = 0, options: { verifyLater?: boolean } = {}): Promise<Receiver> {
    const holder: { receiver?: Receiver } = {};
    const server = http.createServer((req, res) => holder.receiver!.handle(req, res));
    const receiver = new Receiver(server, secret, options.verifyLater ?? false);
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

  /**
   * Verifies every request recorded with `verifyLater` (Standard Webhooks' signature against the
   * timestamp it came with, not against the clock now): each verified one goes to `got`, each other
   * counts in `unverified`.
   */
  verifyRecorded(): void {
    const signer = new Webhook(this.secret);
    for (const { headers, body } of this.recorded.splice(0)) {
      const at = new Date(Number(headers['webhook-timestamp']) * 1000);
      const expected = signer.sign(headers['webhook-id'], at, body).split(' ')[0];
      const matches = headers['webhook-signature'].split(' ').includes(expected);
      if (!matches || !this.keep(headers, body, () => JSON.parse(body) as Payload)) this.unverified++;
    }
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
      const headers: SignatureHeaders = {
        'webhook-id': String(req.headers['webhook-id']),
        'webhook-timestamp': String(req.headers['webhook-timestamp']),
        'webhook-signature': String(req.headers['webhook-signature']),
      };
      if (this.verifyLater) {
        this.recorded.push({ headers, body });
        res.writeHead(204).end();
        return;
      }
      const verified = this.keep(headers, body, () => new Webhook(this.secret).verify(body, headers) as Payload);
      if (!verified) this.unverified++;
      res.writeHead(verified ? 204 : 400).end();
    });
  }

  /** Keeps the request when `payload` (which throws when it does not verify) answers; false when it throws. */
  private keep(headers: SignatureHeaders, body: string, payload: () => Payload): boolean {
    let read: Payload;
    try {
      read = payload();
    } catch {
      return false;
    }
    this.got.push({
      id: headers['webhook-id'],
      timestamp: headers['webhook-timestamp'],
      signature: headers['webhook-signature'],
      body,
      type: read.type,
      data: read.data,
    });
    return true;
  }
}

type Payload = { type: string; data: Record<string, unknown> };
