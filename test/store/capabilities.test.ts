import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config/config';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { assertCapabilities } from '../../src/store/capabilities';
import { openDataSource } from '../../src/store/data-source';
import { startWorker } from '../../src/worker';
import { runCli } from '../support/cli';
import { createMigratedDb, createThrowawayDb } from '../support/databases';
import { recordingMssql } from '../support/recording-mssql';
import { TsqlParser } from '../support/tsql-gate';
import { REDIS_URL, silentLogger, uniquePrefix } from '../worker/helpers/queue-harness';

/**
 * The capability probe: `migrate` and a starting worker ask the database whether it can run what
 * they send and refuse in one line naming what is missing, before any DDL or any event.
 */
describe('capability probe on PostgreSQL (a real server, real logins)', () => {
  it('migrate refuses a login without CREATE on its schema, in one line, before any DDL', async () => {
    const db = await createThrowawayDb('postgres');
    const owner = await openDataSource(db.target);
    const login = `pl_m_${randomBytes(4).toString('hex')}`;
    const schema = new URL(db.url).searchParams.get('schema')!;
    try {
      await owner.query(`CREATE ROLE "${login}" LOGIN`);
      await owner.query(`GRANT USAGE ON SCHEMA "${schema}" TO "${login}"`);
      const u = new URL(db.url);
      u.username = login;
      const refused = await runCli(['migrate'], { DATABASE_URL: u.toString() });
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toContain(`cannot serve plan-ledger migrate: the login has no CREATE on schema ${schema}`);
      const [tables] = await owner.query(
        `SELECT COUNT(*)::int AS n FROM information_schema.tables WHERE table_schema = $1`,
        [schema],
      );
      expect(tables.n).toBe(0); // nothing was created
      await owner.query(`GRANT CREATE ON SCHEMA "${schema}" TO "${login}"`);
      expect((await runCli(['migrate'], { DATABASE_URL: u.toString() })).code).toBe(0);
    } finally {
      await owner.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await owner.query(`DROP OWNED BY "${login}"`).catch(() => undefined);
      await owner.query(`DROP ROLE IF EXISTS "${login}"`);
      await owner.destroy();
      await db.drop();
    }
  });

  it('a worker refuses to start on a login that cannot INSERT into plan_events or DELETE from plan_heads', async () => {
    const db = await createMigratedDb('postgres');
    const login = `pl_w_${randomBytes(4).toString('hex')}`;
    const schema = new URL(db.db.url).searchParams.get('schema')!;
    try {
      await db.ds.query(`CREATE ROLE "${login}" LOGIN`);
      await db.ds.query(`GRANT USAGE ON SCHEMA "${schema}" TO "${login}"`);
      await db.ds.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO "${login}"`);
      await db.ds.query(`REVOKE INSERT ON plan_events FROM "${login}"`);
      await db.ds.query(`REVOKE DELETE ON plan_heads FROM "${login}"`);
      const u = new URL(db.db.url);
      u.username = login;
      const ds = await openDataSource(parseDatabaseUrl(u.toString()));
      try {
        const started = startWorker({
          config: loadConfig({ REDIS_URL, QUEUE_PREFIX: uniquePrefix('caps'), DATABASE_URL: u.toString() }),
          dataSource: ds,
          logger: silentLogger(),
          settings: { healthPort: null },
        });
        await expect(started).rejects.toThrow(
          /cannot serve the worker: the login has no INSERT on plan_events; the login has no DELETE on plan_heads$/,
        );
        // the owner has every privilege
        await expect(assertCapabilities(db.ds, db.db.target, 'worker')).resolves.toBeUndefined();
      } finally {
        await ds.destroy();
      }
    } finally {
      await db.ds.query(`DROP OWNED BY "${login}"`);
      await db.ds.query(`DROP ROLE "${login}"`);
      await db.close();
    }
  });
});

describe('capability probe on SQL Server (recorded, no server)', () => {
  const target = parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none');
  const database = {
    compatibility_level: 160,
    containment: 'NONE',
    collation_name: 'SQL_Latin1_General_CP1_CI_AS',
    rcsi: true,
    can_create_table: 1,
    can_alter_schema: 1,
  };
  const table = (name: string, denied: string[] = []) => ({
    ...database,
    table_name: name,
    ...Object.fromEntries(
      ['select', 'insert', 'update', 'delete'].map((p) => [`can_${p}`, denied.includes(p) ? 0 : 1]),
    ),
  });

  async function probe(purpose: 'migrate' | 'worker', rows: Record<string, unknown>[]) {
    const { ds, statements } = await recordingMssql((sql) => (/FROM sys\.databases/.test(sql) ? rows : undefined));
    const error = await assertCapabilities(ds, target, purpose).then(
      () => undefined,
      (err: Error) => err.message,
    );
    return { error, statements };
  }

  it('refuses a database restored with compatibility level 120 (no OPENJSON), for migrate and the worker', async () => {
    for (const purpose of ['migrate', 'worker'] as const) {
      const { error } = await probe(purpose, [{ ...database, compatibility_level: 120, table_name: null }]);
      expect(error).toMatch(/compatibility level 120 is below 130, which OPENJSON needs/);
    }
  });

  it("names the worker login's missing permissions per table, and migrate's missing DDL permissions", async () => {
    const worker = await probe('worker', [table('plan_events', ['insert']), table('plan_heads', ['insert', 'update'])]);
    expect(worker.error).toBe(
      'database mssql://sa:***@127.0.0.1:1/none cannot serve the worker: the login has no INSERT on plan_events, plan_heads; the login has no UPDATE on plan_heads',
    );
    const migrate = await probe('migrate', [{ ...database, can_create_table: 0, table_name: null }]);
    expect(migrate.error).toMatch(/cannot serve plan-ledger migrate: the login has no CREATE TABLE permission$/);
    expect((await probe('worker', [table('plan_events')])).error).toBeUndefined();
  });

  it('sends one statement, with parameters, without OPENJSON, that the T-SQL parser accepts', async () => {
    const { statements } = await probe('worker', [table('plan_events')]);
    const sent = statements.filter((s) => /sys\.databases/.test(s.sql));
    expect(sent).toHaveLength(1);
    expect(sent[0].sql).not.toMatch(/OPENJSON/i);
    expect(sent[0].params.length).toBeGreaterThan(5); // the entities' table names
    const parser = new TsqlParser();
    try {
      const [result] = await parser.parse([sent[0].sql]);
      expect(result).toEqual({ ast: expect.any(Array) });
    } finally {
      await parser.close();
    }
  });
});
