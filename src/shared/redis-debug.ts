import * as path from 'node:path';
import { lazyRequire } from './lazy-require';

/**
 * ioredis logs every command it writes through the `debug` package (`DEBUG=ioredis:*`), arguments
 * included: `auth` with the Redis password, `hello ... AUTH`, and every event payload. Those lines
 * are for following the connection, not the data, so ioredis's `%o`/`%O` arguments are shown as a
 * count. Filtered by namespace: other `debug` users keep their output.
 */
const HIDDEN = (value: unknown) =>
  Array.isArray(value) ? `[${value.length} argument${value.length === 1 ? '' : 's'} hidden]` : '[hidden]';

interface DebugModule {
  formatters: Record<string, (this: { namespace?: string }, value: unknown) => string>;
}

let installed = false;

/** Installs the filter on the `debug` instance ioredis uses; idempotent, and harmless if absent. */
export function hideRedisCommandArguments(): void {
  if (installed) return;
  installed = true;
  let debug: DebugModule;
  try {
    // the copy ioredis resolves, wherever npm placed it
    debug = lazyRequire<DebugModule>(
      require,
      require.resolve('debug', { paths: [path.dirname(require.resolve('ioredis'))] }),
    )();
  } catch {
    return;
  }
  for (const letter of ['o', 'O']) {
    const original = debug.formatters[letter];
    debug.formatters[letter] = function (this: { namespace?: string }, value: unknown): string {
      if (this?.namespace?.startsWith('ioredis')) return HIDDEN(value);
      return original ? original.call(this, value) : String(value);
    };
  }
}
