import type { RedisClient } from '../queue/connect-redis';
import type { DataSource } from 'typeorm';
import type { Logger } from '../shared/logger';

/** What startWorker opened itself, closed in reverse order; caller-owned clients are left alone. */
export class Opened {
  private readonly closers: { name: string; close: (clean: boolean) => Promise<unknown> }[] = [];

  constructor(private readonly logger: Logger) {}

  redis<T extends RedisClient>(client: T): T {
    client.on('error', (err) => this.logger.debug({ err }, 'redis connection error'));
    this.closers.push({ name: 'redis', close: (clean) => (clean ? client.quit() : Promise.resolve(client.disconnect())) });
    return client;
  }

  dataSource(ds: DataSource): DataSource {
    this.closers.push({ name: 'database', close: () => (ds.isInitialized ? ds.destroy() : Promise.resolve()) });
    return ds;
  }

  closable<T extends { close(): Promise<unknown> }>(thing: T): T {
    this.closers.push({ name: thing.constructor.name, close: () => thing.close() });
    return thing;
  }

  async closeAll(clean: boolean): Promise<void> {
    for (const { name, close } of this.closers.splice(0).reverse()) {
      await close(clean).catch((err) => this.logger.warn({ err, what: name }, 'close failed'));
    }
  }
}
