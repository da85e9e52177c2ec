import { createMigratedDb } from '../support/databases';

/**
 * The settings the embedded database is opened with, read back from SQLite itself: a setting
 * better-sqlite3 or TypeORM dropped on the way would leave the worker on SQLite's defaults.
 */
describe('SQLite connection settings', () => {
  it('opens in WAL mode with foreign keys, NORMAL sync, a 32 MiB cache and a 10,000-page checkpoint threshold', async () => {
    const db = await createMigratedDb('sqlite');
    try {
      const one = async (pragma: string) => Object.values((await db.ds.query(`PRAGMA ${pragma}`))[0])[0];
      expect(await one('journal_mode')).toBe('wal');
      expect(await one('foreign_keys')).toBe(1);
      expect(await one('synchronous')).toBe(1); // NORMAL
      expect(await one('cache_size')).toBe(-32768);
      // the values docs/store.md states, as SQLite reports them
      expect(await one('wal_autocheckpoint')).toBe(10_000);
      expect(await one('journal_size_limit')).toBe(64 * 1024 * 1024);
    } finally {
      await db.close();
    }
  });
});
