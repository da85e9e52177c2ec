import { parseDatabaseUrl } from '../../src/config/database-url';
import { migrationSql } from '../../src/store/migrator';
import { BINARY_COLUMNS } from '../../migrations/1795219500000-databases-alike';

/**
 * SQL Server refuses to change a column's type or collation while a key, index, unique, foreign
 * key or default constraint covers it (ALTER TABLE, "ALTER COLUMN" remarks). Replays the DDL on a
 * model of those objects and returns every ALTER COLUMN that would fail.
 */
function alterColumnViolations(statements: string[]): string[] {
  const objects = new Map<string, { table: string; columns: string[] }>(); // by name
  const referencedBy = (table: string, column: string) =>
    [...objects.entries()].filter(([, o]) => o.table === table && o.columns.includes(column)).map(([n]) => n);
  const cols = (list: string) => [...list.matchAll(/"([a-z_]+)"/g)].map((m) => m[1]);
  const problems: string[] = [];
  for (const st of statements) {
    let m: RegExpMatchArray | null;
    if ((m = st.match(/^CREATE TABLE "([a-z_]+)" \((.*)\)$/))) {
      const table = m[1];
      for (const c of m[2].matchAll(/CONSTRAINT "([A-Za-z_]+)" (?:PRIMARY KEY|UNIQUE) \(([^)]*)\)/g))
        objects.set(c[1], { table, columns: cols(c[2]) });
      for (const c of m[2].matchAll(
        /CONSTRAINT "(FK_[a-z_]+)" FOREIGN KEY \(([^)]*)\) REFERENCES "([a-z_]+)" \(([^)]*)\)/g,
      )) {
        objects.set(c[1], { table, columns: cols(c[2]) });
        objects.set(`${c[1]}>`, { table: c[3], columns: cols(c[4]) }); // the referenced side
      }
      for (const c of m[2].matchAll(/"([a-z_]+)" [^,]*? CONSTRAINT "(DF_[a-z_]+)" DEFAULT/g))
        objects.set(c[2], { table, columns: [c[1]] });
    } else if ((m = st.match(/^CREATE (?:CLUSTERED |NONCLUSTERED )?INDEX "([A-Za-z_]+)" ON "([a-z_]+)" \(([^)]*)\)/))) {
      objects.set(m[1], { table: m[2], columns: cols(m[3]) });
    } else if (
      (m = st.match(/^DROP INDEX "([A-Za-z_]+)" ON/)) ||
      (m = st.match(/^ALTER TABLE "[a-z_]+" DROP CONSTRAINT "([A-Za-z_]+)"$/))
    ) {
      if (!objects.delete(m[1])) problems.push(`drops ${m[1]}, which does not exist: ${st}`);
      objects.delete(`${m[1]}>`);
    } else if (
      (m = st.match(
        /^ALTER TABLE "([a-z_]+)" ADD CONSTRAINT "([A-Za-z_]+)" (?:PRIMARY KEY(?: NONCLUSTERED)?|UNIQUE) \(([^)]*)\)$/,
      ))
    ) {
      objects.set(m[2], { table: m[1], columns: cols(m[3]) });
    } else if (
      (m = st.match(
        /^ALTER TABLE "([a-z_]+)" ADD CONSTRAINT "(FK_[a-z_]+)" FOREIGN KEY \(([^)]*)\) REFERENCES "([a-z_]+)" \(([^)]*)\)/,
      ))
    ) {
      objects.set(m[2], { table: m[1], columns: cols(m[3]) });
      objects.set(`${m[2]}>`, { table: m[4], columns: cols(m[5]) });
    } else if ((m = st.match(/^ALTER TABLE "([a-z_]+)" ADD CONSTRAINT "(DF_[a-z_]+)" DEFAULT .* FOR "([a-z_]+)"$/))) {
      objects.set(m[2], { table: m[1], columns: [m[3]] });
    } else if ((m = st.match(/^ALTER TABLE "([a-z_]+)" ALTER COLUMN "([a-z_]+)"/))) {
      const blocking = referencedBy(m[1], m[2]);
      if (blocking.length > 0) problems.push(`${m[1]}.${m[2]} is altered under ${blocking.join(', ')}`);
    }
  }
  return problems;
}

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
    expect(up).toContain(
      'CONSTRAINT "FK_plan_handoffs_steps" FOREIGN KEY ("step_id") REFERENCES "plan_steps" ("id") ON DELETE NO ACTION',
    );
    expect(up).toContain('CREATE INDEX "IX_execution_plans_session" ON "execution_plans" ("session_id", "created_at")');
    expect(up).toContain('CREATE INDEX "IX_plan_handoffs_step" ON "plan_handoffs" ("step_id")');
    const constraintNames = [...up.matchAll(/CONSTRAINT "([^"]+)"/g)].map((m) => m[1]);
    for (const name of constraintNames) expect(name).toMatch(/^(PK|FK|UQ|CK|DF)_[a-z_]+$/);
  });

  it('adds the incremental store columns with a named default, and backfills them', () => {
    expect(up).toContain(
      'ALTER TABLE "plan_heads" ADD "applied_seq" int NULL, "pending_events" int NOT NULL CONSTRAINT "DF_plan_heads_pending_events" DEFAULT 0, "gap_since" datetime2(3) NULL',
    );
    expect(up).toContain('ALTER TABLE "plan_handoffs" ADD "step_key" nvarchar(64) NULL');
    expect(up).toContain('CREATE INDEX "IX_plan_heads_gap" ON "plan_heads" ("gap_since")');
    expect(up).toContain(
      'UPDATE "plan_heads" SET "applied_seq" = "last_seq" WHERE EXISTS (SELECT 1 FROM "execution_plans" p WHERE p."id" = "plan_heads"."plan_id")',
    );
    expect(down).toContain('ALTER TABLE "plan_heads" DROP CONSTRAINT "DF_plan_heads_pending_events"');
  });

  it('adds plan_heads.restored_at (retention ages a restored plan from its restore)', () => {
    expect(up).toContain('ALTER TABLE "plan_heads" ADD "restored_at" datetime2(3) NULL');
    expect(down).toContain('ALTER TABLE "plan_heads" DROP COLUMN "restored_at"');
  });

  it('gives every id column (and the agent and model names analytics group by) a binary collation', () => {
    const statements = up.split(';\n');
    for (const c of BINARY_COLUMNS) {
      const alters = statements.filter((st) => st.startsWith(`ALTER TABLE "${c.table}" ALTER COLUMN "${c.column}" `));
      expect(alters.at(-1)).toMatch(
        new RegExp(
          `^ALTER TABLE "${c.table}" ALTER COLUMN "${c.column}" nvarchar\\((64|36|100)\\) COLLATE Latin1_General_100_BIN2 ${c.nullable ? 'NULL' : 'NOT NULL'}$`,
        ),
      );
    }
    // every id column of the schema is in the list, or created with the binary collation
    for (const m of up.matchAll(/CREATE TABLE "([a-z_]+)" \((.*)\)/g)) {
      for (const col of m[2].matchAll(
        /"([a-z_]*id|[a-z_]+_key)" nvarchar\((64|36)\)(?! COLLATE Latin1_General_100_BIN2)/g,
      )) {
        expect(BINARY_COLUMNS.map((b) => `${b.table}.${b.column}`)).toContain(`${m[1]}.${col[1]}`);
      }
    }
  });

  it('drops the column statistics on every column whose collation changes, before the first change (up and down)', () => {
    for (const ddl of [up, down]) {
      const statements = ddl.split(';\n');
      // the ids' migration's (the repair of later columns has its own, tested below)
      const drop = statements.findIndex(
        (st) => st.startsWith('DECLARE @drop nvarchar(MAX)') && st.includes("OBJECT_ID(N'sessions')"),
      );
      const firstCollate = statements.findIndex((st) =>
        BINARY_COLUMNS.some((c) => st.startsWith(`ALTER TABLE "${c.table}" ALTER COLUMN "${c.column}" `)),
      );
      expect(drop).toBeGreaterThanOrEqual(0);
      expect(drop).toBeLessThan(firstCollate);
      const st = statements[drop];
      // auto-created (`_WA_Sys_...`) and user-created ones, never an index's own statistics
      expect(st).toContain('WHERE (st.auto_created = 1 OR st.user_created = 1)');
      for (const c of BINARY_COLUMNS)
        expect(st).toContain(`(sc.object_id = OBJECT_ID(N'${c.table}') AND c.name = N'${c.column}')`);
      expect(st).toMatch(/IF @drop IS NOT NULL EXEC sp_executesql @drop$/);
      // one per migration that changes collations: the ids' and the repair of the columns added later
      expect(statements.filter((x) => x.startsWith('DECLARE @drop'))).toHaveLength(2);
    }
  });

  it('repairs the columns added in the database default: the parent index and statistics go first', () => {
    const statements = up.split(';\n');
    const at = (re: RegExp) => statements.findIndex((st) => re.test(st));
    const repaired = [
      ['execution_plans', 'parent_plan_id', 'nvarchar(64)', 'NULL'],
      ['execution_plans', 'fork_checkpoint', 'nvarchar(64)', 'NULL'],
      ['plan_steps', 'provider', 'nvarchar(100)', 'NULL'],
      ['plan_handoffs', 'reason', 'nvarchar(50)', 'NOT NULL'],
      ['price_overrides', 'provider', 'nvarchar(100)', 'NULL'],
    ];
    const drop = statements.map((st) => st.startsWith('DECLARE @drop')).lastIndexOf(true);
    for (const [table, column, type, nullable] of repaired) {
      const alter = `ALTER TABLE "${table}" ALTER COLUMN "${column}" ${type} COLLATE Latin1_General_100_BIN2 ${nullable}`;
      expect(statements.indexOf(alter)).toBeGreaterThan(drop);
      expect(statements[drop]).toContain(`(sc.object_id = OBJECT_ID(N'${table}') AND c.name = N'${column}')`);
    }
    expect(at(/^DROP INDEX "IX_execution_plans_parent"/)).toBeLessThan(drop);
    // recreated once the columns are repaired (the migrations after the repair come later still)
    const recreated = statements.lastIndexOf(
      'CREATE INDEX "IX_execution_plans_parent" ON "execution_plans" ("parent_plan_id")',
    );
    const lastAlter = Math.max(
      ...repaired.map(([table, column]) =>
        statements.findIndex(
          (st) => st.startsWith(`ALTER TABLE "${table}" ALTER COLUMN "${column}"`) && st.includes('BIN2'),
        ),
      ),
    );
    expect(recreated).toBeGreaterThan(lastAlter);
  });

  it('alters no column while a key, index, foreign key or default covers it, and recreates every one of them', () => {
    const statements = up.split(';\n');
    expect(alterColumnViolations(statements)).toEqual([]);
    // the model sees what covers a column: the schema before this migration refuses these
    const before = statements.slice(
      0,
      statements.findIndex((st) => st.includes('DROP CONSTRAINT "FK_execution_plans_sessions"')),
    );
    expect(
      alterColumnViolations([
        ...before,
        'ALTER TABLE "plan_events" ALTER COLUMN "plan_id" nvarchar(64) NOT NULL',
        'ALTER TABLE "sessions" ALTER COLUMN "id" nvarchar(64) NOT NULL',
        'ALTER TABLE "execution_plans" ALTER COLUMN "total_input_tokens" bigint NOT NULL',
      ]),
    ).toEqual([
      'plan_events.plan_id is altered under IX_plan_events_plan',
      'sessions.id is altered under PK_sessions, FK_execution_plans_sessions>',
      'execution_plans.total_input_tokens is altered under DF_execution_plans_total_input_tokens',
    ]);
    const last = statements.slice(
      statements.findIndex((st) => st.includes('DROP CONSTRAINT "FK_execution_plans_sessions"')),
    );
    for (const name of [
      'PK_sessions',
      'PK_plan_events',
      'UQ_plan_step_index',
      'FK_plan_handoffs_steps',
      'FK_workflow_checkpoints_plans',
      'IX_plan_handoffs_step',
      'IX_plan_steps_agent',
      'DF_execution_plans_total_input_tokens',
    ]) {
      expect(last.filter((st) => st.includes(`"${name}"`)).length).toBe(2); // dropped, then created again
    }
  });

  it('clusters plan_events by (plan_id, seq) with a nonclustered primary key', () => {
    expect(up).toContain(
      'ALTER TABLE "plan_events" ADD CONSTRAINT "PK_plan_events" PRIMARY KEY NONCLUSTERED ("event_id")',
    );
    expect(up).toContain('CREATE CLUSTERED INDEX "IX_plan_events_plan" ON "plan_events" ("plan_id", "seq")');
  });

  it('keeps row locks from escalating on every plan table, and makes token totals bigint', () => {
    for (const table of [
      'sessions',
      'execution_plans',
      'plan_steps',
      'plan_handoffs',
      'plan_decisions',
      'workflow_dags',
      'workflow_checkpoints',
      'plan_heads',
      'plan_events',
    ]) {
      expect(up).toContain(`ALTER TABLE "${table}" SET (LOCK_ESCALATION = DISABLE)`);
    }
    expect(up).toContain('ALTER TABLE "execution_plans" ALTER COLUMN "total_input_tokens" bigint NOT NULL');
    expect(up).toContain(
      'ALTER TABLE "execution_plans" ADD CONSTRAINT "DF_execution_plans_total_output_tokens" DEFAULT 0 FOR "total_output_tokens"',
    );
  });

  it('has a down() that drops every table', () => {
    for (const table of ['plan_events', 'plan_steps', 'execution_plans', 'sessions'])
      expect(down).toContain(`DROP TABLE "${table}"`);
  });
});
