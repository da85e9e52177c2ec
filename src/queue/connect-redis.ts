import IORedis from 'ioredis';
import { redactUrl } from '../config/database-url';

/**
 * A Redis connection for one-shot processes (the CLI, the demo): fails fast with one readable line
 * when Redis is unreachable, instead of BullMQ's silent wait. Not for workers, which need
 * `maxRetriesPerRequest: null`.
 */
/** Connects, or throws `cannot reach Redis at redis://host:port: <reason>`. */
export async function connectRedis(url: string, timeoutMs = 5_000): Promise<IORedis> {
  let lastError: Error | undefined;
  const redis = new IORedis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    // A one-shot command should fail, not hang, when Redis goes away mid-run.
    maxRetriesPerRequest: 1,
    retryStrategy: (times) => (times > 3 ? null : 200 * times),
  });
  redis.on('error', (err: Error) => (lastError = err));
  try {
    await redis.connect();
    return redis;
  } catch (err) {
    redis.disconnect();
    const reason = (lastError ?? (err as Error)).message || String(err);
    throw new Error(`cannot reach Redis at ${redactUrl(url)}: ${reason}`);
  }
}
