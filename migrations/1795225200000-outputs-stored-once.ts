import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf, type Dialect } from '../src/store/sql/dialects';
import { addColumns, sql, sqlType } from './1795219400000-incremental-store';
import { BINARY_COLLATION } from './1795219500000-databases-alike';

/**
 * A step's output is stored once, in the log (docs/schema.md#step-outputs): `plan_steps.output_event_id`
 * names the step.completed event (`plan_events.event_id`) whose payload holds the output, and
 * `plan_steps.output_content` stays, null on the rows written since.
 *
 * Existing rows: `migrate` itself moves each stored output to its event, a page of plans at a time
 * (`--print-sql` prints the schema change; the move needs the data). A row moves only when an event
 * of its plan completed the step with exactly the bytes the row holds (the last such event in the
 * log's order, by seq then event id); it then gets the event's id and loses its copy in one
 * statement, so a row is either moved or untouched. A row with no such event keeps its output
 * where it is, and the reads still find it there. Run again after an interruption, it moves the
 * rows left. `down` copies the outputs back from the log.
 */
export class OutputsStoredOnce1795225200000 implements MigrationInterface {
  name = 'OutputsStoredOnce1795225200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const binary = BINARY_COLLATION[d] ? ` COLLATE ${BINARY_COLLATION[d]}` : '';
    // a run interrupted during the move, where DDL commits at once (MySQL/MariaDB), added it already
    const added = !inMemory(queryRunner) && (await queryRunner.hasColumn('plan_steps', COLUMN));
    if (!added) await addColumns(queryRunner, d, q('plan_steps'), [`${q(COLUMN)} ${sqlType(d, 'uuid')}${binary} NULL`]);
    if (!inMemory(queryRunner)) await moveOutputs(queryRunner, d);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    if (!inMemory(queryRunner)) await copyOutputsBack(queryRunner, d);
    await sql(queryRunner, `ALTER TABLE ${q('plan_steps')} DROP COLUMN ${q(COLUMN)}`);
  }
}

const COLUMN = 'output_event_id';
/** Plans per page: their steps with an output and their step.completed events are read at once. */
const PLANS_PER_PAGE = 20;
/** Steps per page when copying back: each with its event's payload. */
const STEPS_PER_PAGE = 200;

interface StepWithOutput {
  id: string;
  plan_id: string;
  step_key: string;
  output_content: string;
}

interface CompletedEvent {
  event_id: string;
  plan_id: string;
  seq: number | string;
  payload: string;
}

/** Every row's output moved to the event that carried it, a page of plans at a time (plan id order). */
async function moveOutputs(queryRunner: QueryRunner, d: Dialect): Promise<void> {
  const q = (name: string) => queryRunner.connection.driver.escape(name);
  const steps = q('plan_steps');
  for (let after = ''; ;) {
    const page: Array<{ plan_id: string }> = await queryRunner.query(
      `SELECT DISTINCT ${top(d, PLANS_PER_PAGE)}${q('plan_id')} AS plan_id FROM ${steps} WHERE ${q('output_content')} IS NOT NULL AND ${q('plan_id')} > ${param(d, 0)} ORDER BY ${q('plan_id')}${limit(d, PLANS_PER_PAGE)}`,
      [after],
    );
    if (page.length === 0) return;
    const plans = page.map((r) => r.plan_id);
    after = plans[plans.length - 1];
    const rows: StepWithOutput[] = await queryRunner.query(
      `SELECT ${q('id')} AS id, ${q('plan_id')} AS plan_id, ${q('step_key')} AS step_key, ${q('output_content')} AS output_content FROM ${steps} WHERE ${q('plan_id')} IN (${params(d, plans)}) AND ${q('output_content')} IS NOT NULL`,
      plans,
    );
    const events: CompletedEvent[] = await queryRunner.query(
      `SELECT ${q('event_id')} AS event_id, ${q('plan_id')} AS plan_id, ${q('seq')} AS seq, ${q('payload')} AS payload FROM ${q('plan_events')} WHERE ${q('plan_id')} IN (${params(d, plans)}) AND ${q('type')} = 'step.completed'`,
      plans,
    );
    const carriers = carriersOf(events);
    for (const row of rows) {
      const eventId = carriers.get(outputKey(row.plan_id, row.step_key, row.output_content));
      if (eventId === undefined) continue;
      await queryRunner.query(
        `UPDATE ${steps} SET ${q(COLUMN)} = ${param(d, 0)}, ${q('output_content')} = NULL WHERE ${q('id')} = ${param(d, 1)}`,
        [eventId, row.id],
      );
    }
  }
}

/** By plan, step key and output: the last event (by seq, then event id) that completed the step with that output. */
function carriersOf(events: CompletedEvent[]): Map<string, string> {
  const sorted = [...events].sort(
    (a, b) => Number(a.seq) - Number(b.seq) || (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0),
  );
  const out = new Map<string, string>();
  for (const e of sorted) {
    const payload = JSON.parse(e.payload) as { stepId?: unknown; outputContent?: unknown };
    if (typeof payload.stepId !== 'string' || typeof payload.outputContent !== 'string') continue;
    out.set(outputKey(e.plan_id, payload.stepId, payload.outputContent), String(e.event_id).toLowerCase());
  }
  return out;
}

function outputKey(planId: string, stepKey: string, output: string): string {
  return JSON.stringify([planId, stepKey, output]);
}

/** `down`: each row's output copied back from its event, a page of steps at a time (id order). */
async function copyOutputsBack(queryRunner: QueryRunner, d: Dialect): Promise<void> {
  const q = (name: string) => queryRunner.connection.driver.escape(name);
  const steps = q('plan_steps');
  for (;;) {
    const rows: Array<{ id: string; event_id: string; payload: string | null }> = await queryRunner.query(
      `SELECT ${top(d, STEPS_PER_PAGE)}s.${q('id')} AS id, s.${q(COLUMN)} AS event_id, e.${q('payload')} AS payload FROM ${steps} s LEFT JOIN ${q('plan_events')} e ON e.${q('event_id')} = s.${q(COLUMN)} WHERE s.${q(COLUMN)} IS NOT NULL ORDER BY s.${q('id')}${limit(d, STEPS_PER_PAGE)}`,
    );
    if (rows.length === 0) return;
    for (const row of rows) {
      const output =
        row.payload === null ? null : (JSON.parse(row.payload) as { outputContent?: unknown }).outputContent;
      await queryRunner.query(
        `UPDATE ${steps} SET ${q('output_content')} = ${param(d, 0)}, ${q(COLUMN)} = NULL WHERE ${q('id')} = ${param(d, 1)}`,
        [typeof output === 'string' ? output : null, row.id],
      );
    }
  }
}

/** The dialect's placeholder of parameter `i` (0-based). */
function param(d: Dialect, i: number): string {
  return d === 'postgres' ? `$${i + 1}` : d === 'mssql' ? `@${i}` : '?';
}

function params(d: Dialect, values: readonly unknown[]): string {
  return values.map((_, i) => param(d, i)).join(', ');
}

/** SQL Server's row cap (`TOP (n)` after SELECT [DISTINCT]); the others use `limit`. */
function top(d: Dialect, n: number): string {
  return d === 'mssql' ? `TOP (${n}) ` : '';
}

function limit(d: Dialect, n: number): string {
  return d === 'mssql' ? '' : ` LIMIT ${n}`;
}

/** `--print-sql`: statements are recorded, not run, and nothing can be read. */
function inMemory(queryRunner: QueryRunner): boolean {
  return (queryRunner as unknown as { sqlMemoryMode?: boolean }).sqlMemoryMode === true;
}
