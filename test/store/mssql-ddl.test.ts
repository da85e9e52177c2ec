import { parseDatabaseUrl } from '../../src/config/database-url';
import { migrationSql } from '../../src/store/migrator';

// No SQL Server runs here: the DDL is generated in SQL memory mode and checked as text.
describe('SQL Server DDL', () => {
  let up: string;
  let down: string;
  beforeAll(async () => {
    const target = parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none');
    up = (await migrationSql(target, 'up')).flatMap((m) => m.statements).join(';\n');
    down = (await migrationSql(target, 'down')).flatMap((m) => m.statements).join(';\n');
  });

  it('uses SQL Server types: nvarchar(MAX), datetime2(3), bit with 0 defaults', () => {
    expect(up).toContain('"query" nvarchar(MAX) NOT NULL');
    expect(up).toContain('"created_at" datetime2(3) NOT NULL');
    expect(up).toMatch(/"requires_approval" bit NOT NULL CONSTRAINT "DF_execution_plans_requires_approval" DEFAULT 0/);
    expect(up).toContain('DEFAULT SYSUTCDATETIME()');
  });

  it('uses no type SQL Server rejects or deprecates', () => {
    // column definitions look like `"name" type`; no boolean, uuid, text, ntext, timestamptz, bare datetime
    const types = [...up.matchAll(/"[a-z_]+" ([a-z0-9]+)/g)].map((m) => m[1]);
    expect(types.length).toBeGreaterThan(50);
    for (const bad of ['boolean', 'uuid', 'text', 'ntext', 'timestamptz', 'datetime', 'longtext', 'varchar']) {
      expect(types).not.toContain(bad);
    }
  });

  it('names every key, index and constraint explicitly', () => {
    expect(up).toContain('CONSTRAINT "PK_execution_plans" PRIMARY KEY ("id")');
    expect(up).toContain('CONSTRAINT "UQ_plan_step_index" UNIQUE ("plan_id", "step_index")');
    expect(up).toContain('CONSTRAINT "FK_plan_handoffs_steps" FOREIGN KEY ("step_id") REFERENCES "plan_steps" ("id") ON DELETE NO ACTION');
    expect(up).toContain('CREATE INDEX "IX_execution_plans_session" ON "execution_plans" ("session_id", "created_at")');
    expect(up).toContain('CREATE INDEX "IX_plan_handoffs_step" ON "plan_handoffs" ("step_id")');
    const constraintNames = [...up.matchAll(/CONSTRAINT "([^"]+)"/g)].map((m) => m[1]);
    for (const name of constraintNames) expect(name).toMatch(/^(PK|FK|UQ|CK|DF)_[a-z_]+$/);
  });

  it('adds the incremental store columns with a named default, and backfills them', () => {
    expect(up).toContain('ALTER TABLE "plan_heads" ADD "applied_seq" int NULL, "pending_events" int NOT NULL CONSTRAINT "DF_plan_heads_pending_events" DEFAULT 0, "gap_since" datetime2(3) NULL');
    expect(up).toContain('ALTER TABLE "plan_handoffs" ADD "step_key" nvarchar(64) NULL');
    expect(up).toContain('CREATE INDEX "IX_plan_heads_gap" ON "plan_heads" ("gap_since")');
    expect(up).toContain('UPDATE "plan_heads" SET "applied_seq" = "last_seq" WHERE EXISTS (SELECT 1 FROM "execution_plans" p WHERE p."id" = "plan_heads"."plan_id")');
    expect(down).toContain('ALTER TABLE "plan_heads" DROP CONSTRAINT "DF_plan_heads_pending_events"');
  });

  it('has a down() that drops every table', () => {
    for (const table of ['plan_events', 'plan_steps', 'execution_plans', 'sessions']) expect(down).toContain(`DROP TABLE "${table}"`);
  });
});
