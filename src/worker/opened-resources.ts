import type { RedisClient } from '../queue/connect-redis';
import type { DataSource } from 'typeorm';
import type { Logger } from '../shared/logger';

/** What startWorker opened itself, closed in reverse order; caller-owned clients are left alone. */
export class Opened {
  private readonly closers: { name: string; close: (clean: boolean) => Promise<unknown> }[] = [];
  private readonly lastly: (() => void)[] = [];

  constructor(private readonly logger: Logger) {}

  redis<T extends RedisClient>(client: T): T {
    client.on('error', (err) => this.logger.debug({ err }, 'redis connection error'));
    this.closers.push({
      name: 'redis',
      close: (clean) => (clean ? client.quit() : Promise.resolve(client.disconnect())),
    });
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

  /** Runs at finishClose(), after closeAll() or its deadline: the repeated-error logs sum up their last window. */
  afterClose(fn: () => void): void {
    this.lastly.push(fn);
  }

  async closeAll(clean: boolean): Promise<void> {
    for (const { name, close } of this.closers.splice(0).reverse()) {
      await close(clean).catch((err) => this.logger.warn({ err, what: name }, 'close failed'));
    }
  }

  /** What afterClose() registered, once (the shutdown calls it whether or not closeAll() finished in time). */
  finishClose(): void {
    for (const fn of this.lastly.splice(0)) fn();
  }
}
