import { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { identifierColumns } from '../../src/store/entities';
import { migrationSql, runMigrations } from '../../src/store/migrator';
import { MIGRATIONS } from '../../migrations';
import { lintCollations, lintSchemaCollations } from '../../src/store/schema-lint';
import { mssql } from '../../src/store/sql/mssql';
import { ALL_TEST_DBS, createMigratedDb, MSSQL_ONLY } from '../support/databases';
import { schemaFromDdl, textColumnsOf } from '../support/mssql-schema';

/**
 * The collation lint over the schema as migrated: every column that holds an id, a key or a name
 * compared with one (the entities declare which) compares byte for byte. On SQL Server, where no
 * server runs here, over the columns the recorded `migrate --print-sql` DDL leaves; elsewhere over
 * the live database's catalog.
 */

describe('collation lint: SQL Server, from the recorded DDL', () => {
  let ddl: string[];
  beforeAll(async () => {
    ddl = (await migrationSql(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'))).flatMap((m) => m.statements);
  });

  it('reads every DDL statement the migrations send', () => {
    expect(schemaFromDdl(ddl).unread).toEqual([]);
  });

  it('leaves every identifier column in the ids binary collation', () => {
    expect(lintCollations(mssql, textColumnsOf(schemaFromDdl(ddl)))).toEqual([]);
  });

  it('declares every text column of a key, unique constraint or foreign key as an identifier', () => {
    const schema = schemaFromDdl(ddl);
    const declared = new Set(identifierColumns().map((c) => `${c.table}.${c.column}`));
    const text = new Set(textColumnsOf(schema).map((c) => `${c.table}.${c.column}`));
    const undeclared = schema.keys
      .filter((k) => k.kind !== 'index')
      .flatMap((k) => k.columns.map((c) => `${k.table}.${c}`))
      .filter((c) => text.has(c) && !declared.has(c));
    expect(undeclared).toEqual([]);
  });

  it('names a column the DDL leaves in the database default', () => {
    // ALTER COLUMN without COLLATE puts a column back in the database's default
    const schema = schemaFromDdl([...ddl, 'ALTER TABLE "plan_steps" ALTER COLUMN "plan_id" nvarchar(64) NOT NULL']);
    expect(lintCollations(mssql, textColumnsOf(schema))).toEqual([
      "plan_steps.plan_id is in the database's default collation, not Latin1_General_100_BIN2: ids and the names compared with them must compare byte for byte",
    ]);
  });
});

describe.each(ALL_TEST_DBS)('collation lint on %s, from the migrated database', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
  });
  afterAll(() => close());

  it('finds every identifier column comparing byte for byte', async () => {
    expect(await lintSchemaCollations(ds)).toEqual([]);
  });
});

// MariaDB and PostgreSQL themselves: not part of a SQL Server-only run (`npm run test:mssql`)
(MSSQL_ONLY ? describe.skip : describe)('the lint names a column changed to a collation that ignores case', () => {
  it('on MariaDB', async () => {
    const { ds, close } = await createMigratedDb('mariadb');
    try {
      await ds.query(
        'ALTER TABLE `plan_handoffs` MODIFY `handoff_key` varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL',
      );
      expect(await lintSchemaCollations(ds)).toEqual([
        'plan_handoffs.handoff_key is in utf8mb4_unicode_ci, not utf8mb4_bin: ids and the names compared with them must compare byte for byte',
      ]);
    } finally {
      await close();
    }
  });

  it('on PostgreSQL (a nondeterministic ICU collation)', async () => {
    const { ds, close } = await createMigratedDb('postgres');
    try {
      await ds.query(`CREATE COLLATION "ids_ci" (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`);
      await ds.query(`ALTER TABLE "plan_handoffs" ALTER COLUMN "handoff_key" TYPE varchar(64) COLLATE "ids_ci"`);
      expect(await lintSchemaCollations(ds)).toEqual([
        'plan_handoffs.handoff_key is in ids_ci, not a deterministic collation: ids and the names compared with them must compare byte for byte',
      ]);
    } finally {
      await close();
    }
  });
});

describe.each(['sqlite', 'postgres', 'mariadb'] as const)(
  'the repair migration on %s: a database created by the previous version',
  (kind) => {
    it('moves the columns the lint names into the binary collation and keeps their rows', async () => {
      const { ds, close } = await createMigratedDb(kind);
      // the repair and every migration after it undone: the schema the previous version created
      const later = MIGRATIONS.map((m) => m.name).slice(
        MIGRATIONS.findIndex((m) => m.name === 'IdentifierCollations1795220000000'),
      );
      try {
        for (let i = 0; i < later.length; i++) await ds.undoLastMigration({ transaction: 'each' });
        await ds.query(`INSERT INTO sessions (id) VALUES ('s1')`);
        for (const [id, parent] of [
          ['plan_a', null],
          ['Plan_A', null],
          ['fork_1', 'plan_a'],
        ])
          await ds.query(
            `INSERT INTO execution_plans (id, session_id, query, status, total_steps, parent_plan_id) VALUES ('${id}', 's1', 'q', 'completed', 0, ${parent ? `'${parent}'` : 'NULL'})`,
          );
        if (kind === 'mariadb')
          expect((await lintSchemaCollations(ds)).map((p) => p.split(' ')[0])).toEqual([
            'execution_plans.parent_plan_id',
            'execution_plans.fork_checkpoint',
            'plan_steps.provider',
            'plan_handoffs.reason',
            'price_overrides.provider',
          ]);
        expect((await runMigrations(ds)).applied).toEqual(later);
        expect(await lintSchemaCollations(ds)).toEqual([]);
        // the forks of plan_a are not the forks of Plan_A
        const forks = (id: string) => ds.query(`SELECT id FROM execution_plans WHERE parent_plan_id = '${id}'`);
        expect(await forks('plan_a')).toEqual([{ id: 'fork_1' }]);
        expect(await forks('Plan_A')).toEqual([]);
      } finally {
        await close();
      }
    });
  },
);
