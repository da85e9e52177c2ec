import { ConfigError } from '../config/config';
import { isIP } from 'node:net';
import { type Env, integer, read } from '../config/env-readers';
import { APPROVER_NAME, type NamedKey } from '../shared/api-keys';

/**
 * `plan-ledger serve` settings, read from the environment once. Every field documents its default;
 * `HTTP_ENV_HELP` is what `--help` prints. API keys are never logged nor echoed in an error.
 */
export interface HttpConfig {
  /**
   * HTTP_HOST: address to bind. Loopback by default: exposing the API is a deliberate choice. @defaultValue
   * `127.0.0.1`
   */
  host: string;
  /** HTTP_PORT: 0 = any free port (the bound port is logged). @defaultValue 8080 */
  port: number;
  /** HTTP_INGEST_KEYS: comma-separated API keys allowed to POST /v1/events. @defaultValue none */
  ingestKeys: string[];
  /** HTTP_READ_KEYS: comma-separated API keys allowed to call the read endpoints. @defaultValue none */
  readKeys: string[];
  /**
   * HTTP_ADMIN_KEYS: comma-separated API keys that may also fork plans, replay and purge dead letters from the
   * console and manage webhooks (they read too). @defaultValue none
   */
  adminKeys: string[];
  /**
   * HTTP_APPROVE_KEYS: comma-separated `name:key` pairs: keys with the approve scope (decide approvals and read them,
   * docs/approvals.md), each a human's, its name the `decidedBy` of its decisions. @defaultValue none
   */
  approveKeys: NamedKey[];
  /** HTTP_MAX_BATCH_EVENTS: most events in one POST /v1/events; more is 413. @defaultValue 1000 */
  maxBatchEvents: number;
  /**
   * HTTP_BODY_LIMIT_BYTES: largest request body; larger is 413 before it is parsed. Default: a
   * full batch of 1 KiB events with room to spare (a single event may be up to 1 MiB).
   * @defaultValue 16777216 (16 MiB)
   */
  bodyLimitBytes: number;
  /** HTTP_MAX_HEADER_BYTES: largest request head (request line + headers); larger is 431. @defaultValue 16384 */
  maxHeaderBytes: number;
  /**
   * HTTP_JOURNAL_DIR: the spill journal of the server's publisher (events accepted while Redis is down).
   * @defaultValue `./data/http-journal`
   */
  journalDir: string;
  /**
   * HTTP_MAX_JOURNAL_BYTES: journal bound; a batch that would not fit is answered 503. @defaultValue 1073741824 (1
   * GiB)
   */
  maxJournalBytes: number;
  /** HTTP_MAX_BUFFERED_EVENTS: events the publisher holds in memory before spilling. @defaultValue 100000 */
  maxBufferedEvents: number;
  /** HTTP_RETRY_AFTER_SECONDS: the `Retry-After` of a 503. @defaultValue 5 */
  retryAfterSeconds: number;
  /**
   * HTTP_ACK_TIMEOUT_MS: how long POST /v1/events and /v1/traces wait for what they took to be
   * durable (in Redis, or written and fsynced in the journal) before answering 503 + Retry-After
   * instead of 2xx; the sender then sends again, and the worker keeps one copy per eventId.
   * @defaultValue 10000
   */
  ackTimeoutMs: number;
  /**
   * HTTP_ACK_BEFORE_DURABLE: `true` answers 2xx as soon as the events are in the server's memory,
   * before they reach Redis or the journal's disk: a little lower latency, and a kill -9 (or OOM
   * kill) of serve then loses events its senders were told are taken. @defaultValue false
   */
  ackBeforeDurable: boolean;
  /**
   * HTTP_CONSOLE_SHARE_MS: how long one computed answer of a live route (a plan, the plans list,
   * health, dead letters) serves every open console; 0 turns sharing off. @defaultValue 1000
   */
  consoleShareMs: number;
  /**
   * HTTP_KEEP_ALIVE_TIMEOUT_MS: how long an idle client connection stays open. Behind a load balancer
   * that reuses its connections, set it above the balancer's idle timeout. @defaultValue 5000
   */
  keepAliveTimeoutMs: number;
  /** SHUTDOWN_TIMEOUT_MS: SIGTERM deadline (answer in-flight requests, flush the publisher). @defaultValue 8000 */
  shutdownTimeoutMs: number;
  /**
   * HTTP_TRUST_PROXY: addresses or CIDR ranges of the reverse proxies in front (or `loopback`,
   * `linklocal`, `uniquelocal`). A request from one of them has its `X-Forwarded-Proto` and
   * `X-Forwarded-For` believed: behind a TLS-terminating proxy the console's cookie is then Secure.
   * @defaultValue none: forwarded headers are ignored (anyone could send them)
   */
  trustProxy: string[];
  /**
   * OTLP_CAPTURE_CONTENT: store prompts and outputs found on spans (`true`/`false`); spans may
   * carry personal data, so it is off unless turned on. @defaultValue false
   */
  otlpCaptureContent: boolean;
  /** OTLP_TRACE_QUIET_MS: a trace whose root span arrived becomes plans after this long without a new span. @defaultValue 2000 */
  otlpQuietMs: number;
  /** OTLP_TRACE_ROOTLESS_MS: a trace whose root span never arrived becomes plans after this long without a new span. @defaultValue 30000 */
  otlpRootlessMs: number;
  /** OTLP_MAX_HELD_SPANS: spans and exception log records held while their traces complete; past it POST /v1/traces and /v1/logs answer 429. @defaultValue 200000 */
  otlpMaxHeldSpans: number;
  /**
   * OTLP_GRPC_PORT: the port of the OTLP/gRPC receiver (TraceService and LogsService Export), on
   * HTTP_HOST; 4317 is OTLP/gRPC's conventional port, 0 any free port. @defaultValue none: no gRPC
   * receiver
   */
  otlpGrpcPort: number | undefined;
}

export const HTTP_ENV_HELP: ReadonlyArray<[name: string, help: string]> = [
  ['HTTP_HOST', 'address to bind (default 127.0.0.1, loopback only)'],
  ['HTTP_PORT', 'port, 0 = any free port (default 8080)'],
  ['HTTP_INGEST_KEYS', 'comma-separated API keys with the ingest scope (POST /v1/events); at least 16 characters each'],
  ['HTTP_READ_KEYS', 'comma-separated API keys with the read scope (GET /v1/...); a key may be in both lists'],
  [
    'HTTP_ADMIN_KEYS',
    'comma-separated API keys with the admin scope: read, plus POST /v1/plans/{planId}/fork|replay, dead-letter replay and purge in the console, and /v1/webhooks/...',
  ],
  [
    'HTTP_APPROVE_KEYS',
    "comma-separated name:key pairs with the approve scope (decide approvals, read them); the name (1-64 of A-Z a-z 0-9 . _ @ -) is the decision's decidedBy",
  ],
  ['HTTP_MAX_BATCH_EVENTS', 'most events per POST /v1/events, 1-100000 (default 1000)'],
  ['HTTP_BODY_LIMIT_BYTES', 'largest request body (default 16777216)'],
  ['HTTP_MAX_HEADER_BYTES', 'largest request head (default 16384)'],
  ['HTTP_JOURNAL_DIR', "the server publisher's spill journal (default ./data/http-journal)"],
  ['HTTP_MAX_JOURNAL_BYTES', 'journal bound; past it POST answers 503 + Retry-After (default 1073741824)'],
  ['HTTP_MAX_BUFFERED_EVENTS', 'events held in memory before spilling to the journal (default 100000)'],
  ['HTTP_RETRY_AFTER_SECONDS', 'Retry-After of a 503 (default 5)'],
  [
    'HTTP_ACK_TIMEOUT_MS',
    'ms a POST waits for its events to be durable (in Redis, or fsynced in the journal) before answering 503 instead of 2xx (default 10000)',
  ],
  [
    'HTTP_ACK_BEFORE_DURABLE',
    'true: answer 2xx once events are in memory, before Redis or the journal has them; a crash of serve then loses acknowledged events (default false)',
  ],
  [
    'HTTP_TRUST_PROXY',
    'comma-separated addresses/CIDRs of your reverse proxies (or loopback); their X-Forwarded-Proto/-For are believed, e.g. for a Secure console cookie behind TLS (default none)',
  ],
  [
    'HTTP_CONSOLE_SHARE_MS',
    'ms one answer of a plan, the plans list, health or dead letters serves every open console (0 = off; default 1000); API clients always read fresh',
  ],
  [
    'HTTP_KEEP_ALIVE_TIMEOUT_MS',
    "ms an idle client connection stays open (default 5000); behind a load balancer, above the balancer's idle timeout",
  ],
  ['SHUTDOWN_TIMEOUT_MS', 'SIGTERM deadline in ms (default 8000)'],
  [
    'OTLP_CAPTURE_CONTENT',
    'true: store prompts and outputs found on OTLP spans (default false: they may hold personal data)',
  ],
  [
    'OTLP_TRACE_QUIET_MS',
    'POST /v1/traces: a trace with its root span becomes plans after this quiet time (default 2000)',
  ],
  [
    'OTLP_TRACE_ROOTLESS_MS',
    'POST /v1/traces: a trace without its root span becomes plans after this quiet time (default 30000)',
  ],
  [
    'OTLP_MAX_HELD_SPANS',
    'POST /v1/traces, /v1/logs: spans and log records held while traces complete; past it 429 + Retry-After (default 200000)',
  ],
  [
    'OTLP_GRPC_PORT',
    'port of the OTLP/gRPC receiver on HTTP_HOST (4317 is the conventional one, 0 any free port; default none: gRPC off)',
  ],
];

const MIN_KEY_LENGTH = 16;

function keys(env: Env, name: string): string[] {
  const raw = read(env, name);
  if (raw === undefined) return [];
  const list = raw
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  const short = list.filter((k) => k.length < MIN_KEY_LENGTH).length;
  // the key itself is never quoted: it would land in a terminal or a log
  if (short > 0) throw new Error(`${short} key(s) shorter than ${MIN_KEY_LENGTH} characters`);
  if (list.some((k) => /\s/.test(k))) throw new Error('keys may not contain whitespace');
  return list;
}

/** HTTP_APPROVE_KEYS: `name:key` pairs; the key is checked as every key, and never quoted. */
function namedKeys(env: Env, name: string): NamedKey[] {
  const raw = read(env, name);
  if (raw === undefined) return [];
  const pairs = raw
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const named: NamedKey[] = [];
  for (const [i, pair] of pairs.entries()) {
    const colon = pair.indexOf(':');
    if (colon < 0) throw new Error(`entry ${i + 1} is not name:key (no colon)`);
    const keyName = pair.slice(0, colon).trim();
    if (!APPROVER_NAME.test(keyName))
      // not quoted: a key pasted without its name would be echoed up to its first colon
      throw new Error(`entry ${i + 1}: the name before the colon is not 1-64 characters of A-Z a-z 0-9 . _ @ -`);
    const key = pair.slice(colon + 1).trim();
    if (key.length < MIN_KEY_LENGTH)
      throw new Error(`entry ${i + 1} (${keyName}): the key is shorter than ${MIN_KEY_LENGTH} characters`);
    if (/\s/.test(key)) throw new Error(`entry ${i + 1} (${keyName}): the key contains whitespace`);
    const twin = named.find((n) => n.key === key);
    if (twin) throw new Error(`entries ${twin.name} and ${keyName} have the same key: one key, one name`);
    named.push({ name: keyName, key });
  }
  return named;
}

function flag(raw: string | undefined): boolean {
  if (raw === undefined) return false;
  const value = raw.trim().toLowerCase();
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0' || value === '') return false;
  throw new Error(`must be true or false (got ${JSON.stringify(raw.slice(0, 40))})`);
}

const PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

/** Addresses, CIDR ranges or proxy-addr's named ranges, each checked: a typo must not trust nobody silently. */
function proxies(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  const list = raw
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  for (const entry of list) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const ok =
      PROXY_RANGES.includes(entry) ||
      (family !== 0 &&
        extra === undefined &&
        (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits)));
    if (!ok)
      throw new Error(
        `${JSON.stringify(entry)} is not an IP address, a CIDR range (e.g. 10.0.0.0/8) or one of ${PROXY_RANGES.join(', ')}`,
      );
  }
  return list;
}

export function loadHttpConfig(env: Env): Readonly<HttpConfig> {
  const problems: string[] = [];
  const check = <T>(name: string, fallback: T, fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
      return fallback;
    }
  };
  const int = (name: string, def: number, min: number, max: number) =>
    check(name, def, () => {
      const raw = read(env, name);
      return raw === undefined ? def : integer(raw, min, max);
    });
  const config: HttpConfig = {
    host: read(env, 'HTTP_HOST') ?? '127.0.0.1',
    port: int('HTTP_PORT', 8080, 0, 65535),
    ingestKeys: check('HTTP_INGEST_KEYS', [], () => keys(env, 'HTTP_INGEST_KEYS')),
    readKeys: check('HTTP_READ_KEYS', [], () => keys(env, 'HTTP_READ_KEYS')),
    adminKeys: check('HTTP_ADMIN_KEYS', [], () => keys(env, 'HTTP_ADMIN_KEYS')),
    approveKeys: check('HTTP_APPROVE_KEYS', [], () => namedKeys(env, 'HTTP_APPROVE_KEYS')),
    maxBatchEvents: int('HTTP_MAX_BATCH_EVENTS', 1000, 1, 100_000),
    bodyLimitBytes: int('HTTP_BODY_LIMIT_BYTES', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxHeaderBytes: int('HTTP_MAX_HEADER_BYTES', 16 * 1024, 1024, 1024 * 1024),
    journalDir: read(env, 'HTTP_JOURNAL_DIR') ?? './data/http-journal',
    maxJournalBytes: int('HTTP_MAX_JOURNAL_BYTES', 1024 * 1024 * 1024, 1024, Number.MAX_SAFE_INTEGER),
    maxBufferedEvents: int('HTTP_MAX_BUFFERED_EVENTS', 100_000, 1, 10_000_000),
    retryAfterSeconds: int('HTTP_RETRY_AFTER_SECONDS', 5, 1, 3600),
    ackTimeoutMs: int('HTTP_ACK_TIMEOUT_MS', 10_000, 1, 600_000),
    ackBeforeDurable: check('HTTP_ACK_BEFORE_DURABLE', false, () => flag(read(env, 'HTTP_ACK_BEFORE_DURABLE'))),
    consoleShareMs: int('HTTP_CONSOLE_SHARE_MS', 1_000, 0, 60_000),
    keepAliveTimeoutMs: int('HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000, 1, 600_000),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 8_000, 100, 600_000),
    trustProxy: check('HTTP_TRUST_PROXY', [], () => proxies(read(env, 'HTTP_TRUST_PROXY'))),
    otlpCaptureContent: check('OTLP_CAPTURE_CONTENT', false, () => flag(read(env, 'OTLP_CAPTURE_CONTENT'))),
    otlpQuietMs: int('OTLP_TRACE_QUIET_MS', 2_000, 1, 3_600_000),
    otlpRootlessMs: int('OTLP_TRACE_ROOTLESS_MS', 30_000, 1, 3_600_000),
    otlpMaxHeldSpans: int('OTLP_MAX_HELD_SPANS', 200_000, 1, 100_000_000),
    otlpGrpcPort: read(env, 'OTLP_GRPC_PORT') === undefined ? undefined : int('OTLP_GRPC_PORT', 0, 0, 65535),
  };
  if (config.otlpGrpcPort !== undefined && config.otlpGrpcPort !== 0 && config.otlpGrpcPort === config.port)
    problems.push(`OTLP_GRPC_PORT: ${config.port} is HTTP_PORT too; give the gRPC receiver a port of its own (4317)`);
  if (
    problems.length === 0 &&
    config.ingestKeys.length === 0 &&
    config.readKeys.length === 0 &&
    config.adminKeys.length === 0 &&
    config.approveKeys.length === 0
  ) {
    problems.push(
      'HTTP_INGEST_KEYS / HTTP_READ_KEYS / HTTP_ADMIN_KEYS / HTTP_APPROVE_KEYS: no API key is set; set at least one (every endpoint but /healthz and /metrics needs a key)',
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
