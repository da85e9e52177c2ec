import type { MigrationInterface, QueryRunner } from 'typeorm';
import { derivedId } from '../src/store/projection/derived-id';
import { columnTypeFor, dialectOf, type Dialect } from '../src/store/sql/dialects';
import { sql, sqlType } from './1795219400000-incremental-store';
import { BINARY_COLLATION } from './1795219500000-databases-alike';

/**
 * `plans list` and its filters read a page, not the table (docs/store.md#reads-that-stay-flat):
 *
 * - `plan_agents`: one row per plan and agent its steps are given to, with the plan's creation
 *   time, indexed by (agent, creation, plan): the plans of one agent, newest first, a page at a
 *   time, however many plans and steps are stored. Written with the plan's steps; a row whose
 *   agent has no step left in its plan (an edit, a step started by another agent) stays until the
 *   plan is rebuilt, and the list checks the plan's steps. Its id is derived from the plan and the
 *   agent (src/store/projection/derived-id.ts), so `coder` and `coder ` stay two rows on the
 *   databases whose comparisons ignore trailing spaces. Rows go with their plan (ON DELETE CASCADE).
 * - `IX_execution_plans_created_id` (created_at, id) replaces `IX_execution_plans_created`: the
 *   newest-first order and the cursor `(created_at, id)` are one index range;
 *   `IX_execution_plans_status_created` (status, created_at, id) does the same for one status.
 *
 * Existing plans: `plan_agents` is filled from `plan_steps`, a page of plans at a time, by
 * `migrate` itself (`--print-sql` prints the schema changes; the rows need the data).
 */
export class PlanList1795221000000 implements MigrationInterface {
  name = 'PlanList1795221000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const binary = BINARY_COLLATION[d] ? ` COLLATE ${BINARY_COLLATION[d]}` : '';
    const tableOptions = d === 'mysql' ? ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci' : '';
    const agents = q('plan_agents');
    await sql(
      queryRunner,
      `CREATE TABLE ${agents} (${[
        `${q('id')} ${sqlType(d, 'uuid')}${binary} NOT NULL`,
        `${q('plan_id')} ${sqlType(d, 'externalId')}${binary} NOT NULL`,
        `${q('agent_id')} ${varchar(d, 100)}${binary} NOT NULL`,
        `${q('created_at')} ${sqlType(d, 'timestamp')} NOT NULL`,
        `CONSTRAINT ${q('PK_plan_agents')} PRIMARY KEY (${q('id')})`,
        `CONSTRAINT ${q('FK_plan_agents_plans')} FOREIGN KEY (${q('plan_id')}) REFERENCES ${q('execution_plans')} (${q('id')}) ON DELETE CASCADE`,
      ].join(', ')})${tableOptions}`,
    );
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_plan_agents_agent')} ON ${agents} (${q('agent_id')}, ${q('created_at')}, ${q('plan_id')})`,
    );
    // MySQL/MariaDB index the foreign key's column themselves (and would move the key onto this index)
    if (d !== 'mysql')
      await sql(queryRunner, `CREATE INDEX ${q('IX_plan_agents_plan')} ON ${agents} (${q('plan_id')})`);
    if (d === 'mssql') await sql(queryRunner, `ALTER TABLE ${agents} SET (LOCK_ESCALATION = DISABLE)`);

    const plans = q('execution_plans');
    await sql(queryRunner, dropIndex(d, q, 'IX_execution_plans_created', plans));
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_execution_plans_created_id')} ON ${plans} (${q('created_at')}, ${q('id')})`,
    );
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_execution_plans_status_created')} ON ${plans} (${q('status')}, ${q('created_at')}, ${q('id')})`,
    );
    if (!inMemory(queryRunner)) await fillPlanAgents(queryRunner, d);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const plans = q('execution_plans');
    await sql(queryRunner, dropIndex(d, q, 'IX_execution_plans_status_created', plans));
    await sql(queryRunner, dropIndex(d, q, 'IX_execution_plans_created_id', plans));
    await sql(queryRunner, `CREATE INDEX ${q('IX_execution_plans_created')} ON ${plans} (${q('created_at')})`);
    await sql(queryRunner, `DROP TABLE ${q('plan_agents')}`);
  }
}

/** Plans per page of the backfill. */
const FILL_PAGE = 500;

/**
 * `plan_agents` of the stored plans, a page of plans at a time (keyset on the plan id). Each page's
 * rows are deleted first, so a MySQL/MariaDB migration interrupted half-way (its DDL is not
 * transactional) fills the same rows when run again.
 */
async function fillPlanAgents(queryRunner: QueryRunner, d: Dialect): Promise<void> {
  const driver = queryRunner.connection.driver;
  const q = (name: string) => driver.escape(name);
  const p = (i: number) => driver.createParameter(`p${i}`, i);
  let after = '';
  for (;;) {
    const plans: Array<{ id: string; created_at: unknown }> = await queryRunner.query(
      `SELECT ${top(d, FILL_PAGE)}${q('id')} AS id, ${q('created_at')} AS created_at FROM ${q('execution_plans')} WHERE ${q('id')} > ${p(0)} ORDER BY ${q('id')}${limit(d, FILL_PAGE)}`,
      [after],
    );
    if (plans.length === 0) return;
    after = plans[plans.length - 1].id;
    const ids = plans.map((r) => r.id);
    const created = new Map(plans.map((r) => [r.id, r.created_at]));
    const list = ids.map((_, i) => p(i)).join(', ');
    // grouped by byte length too where `=` ignores trailing spaces: `coder` and `coder ` are two agents
    const length = d === 'mssql' ? 'DATALENGTH' : 'LENGTH';
    const groups = d === 'mysql' || d === 'mssql' ? `, ${length}(${q('agent_id')})` : '';
    const pairs: Array<{ plan_id: string; agent_id: string }> = await queryRunner.query(
      `SELECT ${q('plan_id')} AS plan_id, MIN(${q('agent_id')}) AS agent_id FROM ${q('plan_steps')} WHERE ${q('plan_id')} IN (${list}) GROUP BY ${q('plan_id')}, ${q('agent_id')}${groups}`,
      ids,
    );
    await queryRunner.query(`DELETE FROM ${q('plan_agents')} WHERE ${q('plan_id')} IN (${list})`, ids);
    const rows = new Map<string, unknown[]>();
    for (const r of pairs) {
      const id = derivedId(r.plan_id, 'agent', r.agent_id);
      rows.set(id, [id, r.plan_id, r.agent_id, created.get(r.plan_id)]);
    }
    const all = [...rows.values()];
    for (let i = 0; i < all.length; i += 250) {
      const part = all.slice(i, i + 250);
      const values = part.map((_, r) => `(${[0, 1, 2, 3].map((c) => p(r * 4 + c)).join(', ')})`).join(', ');
      await queryRunner.query(
        `INSERT INTO ${q('plan_agents')} (${q('id')}, ${q('plan_id')}, ${q('agent_id')}, ${q('created_at')}) VALUES ${values}`,
        part.flat(),
      );
    }
    if (plans.length < FILL_PAGE) return;
  }
}

function top(d: Dialect, n: number): string {
  return d === 'mssql' ? `TOP (${n}) ` : '';
}

function limit(d: Dialect, n: number): string {
  return d === 'mssql' ? '' : ` LIMIT ${n}`;
}

export function dropIndex(d: Dialect, q: (name: string) => string, name: string, table: string): string {
  return d === 'mysql' || d === 'mssql' ? `DROP INDEX ${q(name)} ON ${table}` : `DROP INDEX ${q(name)}`;
}

/** `nvarchar(n)` / `varchar(n)` as the dialect spells a short string. */
function varchar(d: Dialect, length: number): string {
  const t = columnTypeFor(d, { varchar: length });
  return `${String(t.type)}(${t.length})`;
}

/** `--print-sql`: statements are recorded, not run, and nothing can be read. */
function inMemory(queryRunner: QueryRunner): boolean {
  return (queryRunner as unknown as { sqlMemoryMode?: boolean }).sqlMemoryMode === true;
}
