import type { MigrationInterface, QueryRunner } from 'typeorm';
import { ENTITY } from '../src/store/entities';
import { STEPS_OF_AGENT } from '../src/store/plan-tables';
import { dialectOf, sqlDialectOf } from '../src/store/sql/dialects';
import { inMemory } from './1795224800000-rollup-session-tokens';

/**
 * `plan_agents` holds exactly the agents of each plan's steps (docs/store.md#reads-that-stay-flat):
 * the writer deletes a plan's row of an agent when its last step in the plan moves to another
 * agent, so `plans list --agent` reads the rows alone, without looking for a step of the agent.
 * No schema change.
 *
 * Existing rows: `migrate` deletes those whose plan has no step of their agent (left by a step
 * started by another agent), a page of rows at a time (keyset on the id); `--print-sql` prints
 * nothing for it (the rows need the data). Down leaves the rows as they are: the reads before this
 * migration check the steps.
 */
export class ExactPlanAgents1795227130000 implements MigrationInterface {
  name = 'ExactPlanAgents1795227130000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (!inMemory(queryRunner)) await deleteRowsWithoutSteps(queryRunner);
  }

  async down(): Promise<void> {}
}

/** Rows per page. */
const PAGE = 1000;

async function deleteRowsWithoutSteps(queryRunner: QueryRunner): Promise<void> {
  const driver = queryRunner.connection.driver;
  const q = (name: string) => driver.escape(name);
  const mssql = dialectOf(queryRunner) === 'mssql';
  const rows = sqlDialectOf(queryRunner).rows(queryRunner.manager);
  let after: string | undefined;
  for (;;) {
    const from = after === undefined ? '' : ` WHERE ${q('id')} > ${driver.createParameter('after', 0)}`;
    const page: Array<{ id: string }> = await queryRunner.query(
      `SELECT ${mssql ? `TOP (${PAGE}) ` : ''}${q('id')} AS id FROM ${q('plan_agents')}${from} ORDER BY ${q('id')}${mssql ? '' : ` LIMIT ${PAGE}`}`,
      after === undefined ? [] : [after],
    );
    if (page.length === 0) return;
    after = page[page.length - 1].id;
    await rows.deleteWhereIn(
      ENTITY.planAgent,
      'id',
      page.map((r) => r.id),
      STEPS_OF_AGENT,
    );
    if (page.length < PAGE) return;
  }
}
