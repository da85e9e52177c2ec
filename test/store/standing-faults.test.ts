import type { DataSource } from 'typeorm';
import { isDuplicateKeyError, standingFault } from '../../src/store/db-errors';
import { openDataSource } from '../../src/store/data-source';
import { createThrowawayDb, type TestDb, type ThrowawayDb } from '../support/databases';

/**
 * The breaker's classifier on the errors the real servers raise: a missing table, column or function
 * cannot depend on the event (a standing fault: the worker pauses instead of dead-lettering), while a
 * duplicate key or a value the database refuses is about the event and is not one.
 */
const KINDS: TestDb[] = ['sqlite', 'postgres', 'mariadb'];

async function errorOf(ds: DataSource, sql: string): Promise<unknown> {
  try {
    await ds.query(sql);
  } catch (err) {
    return err;
  }
  throw new Error(`expected ${sql} to fail`);
}

describe.each(KINDS)('standing faults raised by %s', (kind) => {
  let db: ThrowawayDb;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createThrowawayDb(kind);
    ds = await openDataSource(db.target);
    await ds.query('CREATE TABLE probe_rows (id INTEGER PRIMARY KEY, label VARCHAR(4) NOT NULL)');
    await ds.query("INSERT INTO probe_rows (id, label) VALUES (1, 'one')");
  });

  afterAll(async () => {
    if (ds?.isInitialized) await ds.destroy();
    await db?.drop();
  });

  it.each([
    ['a missing table', 'SELECT id FROM no_such_table'],
    ['a missing column', 'SELECT no_such_column FROM probe_rows'],
    ['a missing function', 'SELECT no_such_function(id) FROM probe_rows'],
  ])('%s is a standing fault', async (_what, sql) => {
    const fault = standingFault(await errorOf(ds, sql));
    expect(fault?.kind).toBe('missing table, column or function');
    expect(fault?.message).toMatch(/no_such_/);
  });

  it('a duplicate key is about the event, not a standing fault', async () => {
    const err = await errorOf(ds, "INSERT INTO probe_rows (id, label) VALUES (1, 'dup')");
    expect(isDuplicateKeyError(err)).toBe(true);
    expect(standingFault(err)).toBeUndefined();
  });

  it('a NULL the column refuses is about the event, not a standing fault', async () => {
    expect(standingFault(await errorOf(ds, 'INSERT INTO probe_rows (id, label) VALUES (2, NULL)'))).toBeUndefined();
  });
});
