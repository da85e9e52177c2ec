import pino, { DestinationStream, Logger } from 'pino';
import { redactUrl } from './redact-url';
import { hideRedisCommandArguments } from './redis-debug';

export type { Logger } from 'pino';

export interface LoggerOptions {
  /** @defaultValue `info` */
  level?: string;
  /** Where lines go. @defaultValue stdout (fd 1); tests pass a stream or use level `silent`. */
  destination?: DestinationStream;
  /** Static bindings on every line, e.g. `{ component: 'worker' }`. */
  base?: Record<string, unknown>;
}

/** Paths fixed at start-up (pino compiles them once): credentials never reach a line. */
const REDACT_PATHS = [
  'password',
  '*.password',
  'config.database.password',
  'database.password',
  'headers.authorization',
];

/**
 * Scrub `scheme://user:password@` from every top-level string and from error messages: URLs turn
 * up in driver error messages too, not only where we put them.
 */
function scrub(obj: Record<string, unknown>): Record<string, unknown> {
  for (const [key, value] of Object.entries(obj)) {
    if (typeof value === 'string' && value.includes('@')) obj[key] = redactUrl(value);
  }
  return obj;
}

/**
 * An ioredis error carries the command it answered, arguments included: a BullMQ script's whole
 * source (~10 KB a line) or a job's events. Only the command's name and argument count are kept.
 */
function errSerializer(err: unknown): unknown {
  const serialized = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  if (!serialized || typeof serialized !== 'object') return serialized;
  const command = serialized.command as { name?: unknown; args?: unknown } | undefined;
  const copy = { ...serialized };
  if (command && typeof command === 'object' && Array.isArray(command.args))
    copy.command = { name: command.name, args: command.args.length };
  return scrub(copy);
}

/** Also hides ioredis's command arguments from `DEBUG=ioredis:*` output (see redis-debug.ts). */
export function createLogger(options: LoggerOptions = {}): Logger {
  hideRedisCommandArguments();
  return pino(
    {
      level: options.level ?? 'info',
      base: options.base ?? null,
      redact: { paths: REDACT_PATHS, censor: '***' },
      serializers: { err: errSerializer, error: errSerializer },
      formatters: { log: scrub },
      hooks: {
        logMethod(args, method) {
          if (typeof args[0] === 'string') args[0] = redactUrl(args[0]);
          if (typeof args[1] === 'string') args[1] = redactUrl(args[1]);
          return method.apply(this, args as Parameters<typeof method>);
        },
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? pino.destination({ fd: 1, sync: false }),
  );
}
