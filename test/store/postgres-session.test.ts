import { createMigratedDb } from '../support/databases';

/**
 * What every PostgreSQL connection of the store runs with: its schema first on the search path
 * (raw SQL sees what TypeORM sees), JIT off and parallel query off (docs/store.md).
 */
describe('PostgreSQL: the settings of the store connections', () => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  beforeAll(async () => {
    db = await createMigratedDb('postgres');
  });
  afterAll(async () => db?.close());

  it('runs with its schema on the search path, JIT off and no parallel workers', async () => {
    const show = async (setting: string) => Object.values((await db.ds.query(`SHOW ${setting}`))[0])[0];
    expect(await show('jit')).toBe('off');
    expect(await show('max_parallel_workers_per_gather')).toBe('0');
    const [{ schema }] = await db.ds.query('SELECT current_schema() AS schema');
    expect(schema).toBe(db.db.target.schema);
  });
});
