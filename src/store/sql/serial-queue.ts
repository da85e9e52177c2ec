import type { DataSource } from 'typeorm';
import { sqlDialectOf } from './dialects';

/**
 * Runs async tasks one at a time, in call order. better-sqlite3 has one shared connection:
 * two overlapping `transaction()` calls collide and write outside any transaction, so every write
 * to a database whose dialect `serializesWrites` (SQLite) goes through one of these.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/**
 * One queue per such DataSource, shared by every writer on it (event store, retention, restore),
 * kept beside the DataSource rather than in any writer so that two writers cannot interleave.
 */
const queues = new WeakMap<DataSource, SerialQueue>();

/** Run a write task on `ds`: one at a time where the dialect serializes writes (SQLite), straight through elsewhere. */
export function runSerialized<T>(ds: DataSource, task: () => Promise<T>): Promise<T> {
  if (!sqlDialectOf(ds).serializesWrites) return task();
  let queue = queues.get(ds);
  if (!queue) queues.set(ds, (queue = new SerialQueue()));
  return queue.run(task);
}
