import type { MigrationInterface, QueryRunner } from 'typeorm';
import { columnTypeFor, dialectOf, type ColumnKind, type Dialect } from '../src/store/sql/dialects';
import { addColumns, sql } from './1795219400000-incremental-store';

/**
 * What each step and plan cost (docs/cost.md):
 * - `plan_steps`: the usage a step's event reported beyond input and output tokens (provider,
 *   cache read and write tokens, reasoning tokens, the provider's own cost) and the cost fixed
 *   when the step was stored, its source (`reported`, `table`, `override`, `unpriced`) and the
 *   price used (`price_ref`).
 * - `execution_plans`: `total_cost`, the sum of its steps' costs, and `unpriced_steps`, the steps
 *   that used tokens at no known price, kept by the same incremental apply as the token totals.
 * Amounts are DECIMAL(24,12) (USD to the pico-dollar); on SQLite text in that exact form, since a
 * DECIMAL column there has numeric affinity and would keep a binary float.
 *
 * Existing rows: steps stored before this migration have no cost (source null) and plans a total
 * of 0 with no unpriced step: their cost is not known, and nothing prices them silently.
 */
export class StepCost1795219700000 implements MigrationInterface {
  name = 'StepCost1795219700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const zero = (table: string, column: string, value: string) =>
      `NOT NULL${d === 'mssql' ? ` CONSTRAINT ${q(`DF_${table}_${column}`)}` : ''} DEFAULT ${value}`;
    await addColumns(queryRunner, d, q('plan_steps'), [
      `${q('provider')} ${type(d, { varchar: 100 })} NULL`,
      `${q('cache_read_tokens')} ${type(d, 'int')} ${zero('plan_steps', 'cache_read_tokens', '0')}`,
      `${q('cache_write_tokens')} ${type(d, 'int')} ${zero('plan_steps', 'cache_write_tokens', '0')}`,
      `${q('reasoning_tokens')} ${type(d, 'int')} ${zero('plan_steps', 'reasoning_tokens', '0')}`,
      `${q('reported_cost')} ${type(d, 'money')} NULL`,
      `${q('cost')} ${type(d, 'money')} NULL`,
      `${q('cost_source')} ${type(d, { varchar: 20 })} NULL`,
      `${q('price_ref')} ${type(d, { varchar: 200 })} NULL`,
    ]);
    await addColumns(queryRunner, d, q('execution_plans'), [
      `${q('total_cost')} ${type(d, 'money')} ${zero('execution_plans', 'total_cost', d === 'sqlite' ? "'0.000000000000'" : '0')}`,
      `${q('unpriced_steps')} ${type(d, 'int')} ${zero('execution_plans', 'unpriced_steps', '0')}`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const drop = async (table: string, columns: string[], defaults: string[]) => {
      if (d === 'mssql')
        for (const c of defaults)
          await sql(queryRunner, `ALTER TABLE ${q(table)} DROP CONSTRAINT ${q(`DF_${table}_${c}`)}`);
      for (const c of columns) await sql(queryRunner, `ALTER TABLE ${q(table)} DROP COLUMN ${q(c)}`);
    };
    await drop('execution_plans', ['total_cost', 'unpriced_steps'], ['total_cost', 'unpriced_steps']);
    const counts = ['cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens'];
    await drop('plan_steps', ['provider', ...counts, 'reported_cost', 'cost', 'cost_source', 'price_ref'], counts);
  }
}

/** A column kind's SQL type: `decimal(24,12)`, `nvarchar(100)`, `int`. */
function type(d: Dialect, kind: ColumnKind | { varchar: number }): string {
  const t = columnTypeFor(d, kind);
  if (t.scale !== undefined) return `${String(t.type)}(${t.precision},${t.scale})`;
  const size = t.length ?? (t.precision !== undefined ? String(t.precision) : undefined);
  return size === undefined ? String(t.type) : `${String(t.type)}(${size})`;
}
