import {
  MigrationInterface,
  QueryRunner,
  Table,
  TableColumnOptions,
  TableForeignKeyOptions,
  TableIndexOptions,
} from 'typeorm';
import { booleanLiteral, columnTypeFor, ColumnKind, Dialect, nowExpression } from '../src/store/sql/dialects';
import { dialectOf } from '../src/store/sql/dialects';

/**
 * The whole v1 schema: the product's tables with their names and columns, plus what its uses
 * need (sessions, decisions, workflow DAG + checkpoints, step output content), the
 * append-only event log and `deleted_at` for soft delete. One migration for four dialects: types
 * come from `columnTypeFor`, every key, index and constraint carries an explicit name, and foreign
 * keys are declared inside each Table so SQL can be generated without a server (`--print-sql`).
 */
export class InitialSchema1795219200000 implements MigrationInterface {
  name = 'InitialSchema1795219200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    for (const table of buildTables(d)) await queryRunner.createTable(table, false, true, true);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    for (const table of buildTables(d).reverse()) await queryRunner.dropTable(table, false, true, true);
  }
}

type Col = [name: string, kind: ColumnKind | { varchar: number }, extra?: Partial<TableColumnOptions>];

function columns(d: Dialect, cols: Col[]): TableColumnOptions[] {
  return cols.map(([name, kind, extra]) => ({ name, ...columnTypeFor(d, kind), isNullable: false, ...extra }));
}

const nullable = { isNullable: true };
const zero = (_d: Dialect): Partial<TableColumnOptions> => ({ default: '0' });
const now = (d: Dialect): Partial<TableColumnOptions> => ({ default: nowExpression(d) });
const softDelete: Col = ['deleted_at', 'timestamp', nullable];

function index(name: string, columnNames: string[], extra: Partial<TableIndexOptions> = {}): TableIndexOptions {
  return { name, columnNames, ...extra };
}

/** CHECK constraints: MySQL/MariaDB drop or reject some of them; the worker validates anyway. */
function checkIn(d: Dialect, name: string, column: string, values: string[]) {
  if (d === 'mysql') return [];
  return [{ name, expression: `${column} IN (${values.map((v) => `'${v}'`).join(', ')})` }];
}

const PLAN_STATUSES = ['planning', 'executing', 'completed', 'failed', 'cancelled'];
const STEP_STATUSES = ['pending', 'in_progress', 'completed', 'failed', 'skipped'];

/** The tables in creation order (each after the tables it references). */
function buildTables(d: Dialect): Table[] {
  return [
    sessionsTable,
    plansTable,
    stepsTable,
    handoffsTable,
    decisionsTable,
    dagsTable,
    checkpointsTable,
    headsTable,
    eventsTable,
  ].map((table) => table(d));
}

/** A foreign key from `column` to the `id` of `referencedTableName`, deleted with its row. */
function cascadeFrom(name: string, column: string, referencedTableName: string): TableForeignKeyOptions {
  return { name, columnNames: [column], referencedTableName, referencedColumnNames: ['id'], onDelete: 'CASCADE' };
}

function sessionsTable(d: Dialect): Table {
  return new Table({
    name: 'sessions',
    columns: columns(d, [
      ['id', 'externalId', { isPrimary: true, primaryKeyConstraintName: 'PK_sessions' }],
      ['created_at', 'timestamp', now(d)],
      ['updated_at', 'timestamp', now(d)],
    ]),
  });
}

function plansTable(d: Dialect): Table {
  return new Table({
    name: 'execution_plans',
    columns: columns(d, [
      ['id', 'externalId', { isPrimary: true, primaryKeyConstraintName: 'PK_execution_plans' }],
      ['session_id', 'externalId'],
      ['query', 'longText'],
      ['status', { varchar: 20 }],
      ['summary', 'longText', nullable],
      ['failure_reason', 'longText', nullable],
      ['total_steps', 'int'],
      ['completed_steps', 'int', zero(d)],
      ['failed_steps', 'int', zero(d)],
      ['skipped_steps', 'int', zero(d)],
      ['total_input_tokens', 'int', zero(d)],
      ['total_output_tokens', 'int', zero(d)],
      ['requires_approval', 'boolean', { default: booleanLiteral(d, false) }],
      // null when no approval is required; else pending | approved | edited | rejected
      ['approval_status', { varchar: 20 }, nullable],
      ['complexity', 'int', nullable],
      ['created_at', 'timestamp', now(d)],
      ['updated_at', 'timestamp', now(d)],
      ['completed_at', 'timestamp', nullable],
      softDelete,
    ]),
    foreignKeys: [cascadeFrom('FK_execution_plans_sessions', 'session_id', 'sessions')],
    checks: checkIn(d, 'CK_execution_plans_status', 'status', PLAN_STATUSES),
    indices: [
      index('IX_execution_plans_session', ['session_id', 'created_at']),
      index('IX_execution_plans_status', ['status', 'completed_at']),
      index('IX_execution_plans_created', ['created_at']),
      index('IX_execution_plans_deleted', ['deleted_at']),
    ],
  });
}

function stepsTable(d: Dialect): Table {
  return new Table({
    name: 'plan_steps',
    columns: columns(d, [
      // derived from (plan_id, step_key) so a replayed plan.created yields the same row id
      ['id', 'uuid', { isPrimary: true, primaryKeyConstraintName: 'PK_plan_steps' }],
      ['plan_id', 'externalId'],
      ['step_key', 'externalId'], // the executor's stepId
      ['step_index', 'int'],
      ['agent_id', { varchar: 100 }],
      ['task', 'longText'],
      ['title', { varchar: 500 }, nullable],
      ['expected_output', { varchar: 50 }, nullable],
      ['depends_on', 'longText', nullable], // JSON array of step keys: the DAG edges
      ['status', { varchar: 20 }],
      ['result', 'longText', nullable],
      ['error', 'longText', nullable],
      ['output_content', 'longText', nullable], // the step's output, readable from any machine
      ['model', { varchar: 100 }, nullable],
      ['input_tokens', 'int', zero(d)],
      ['output_tokens', 'int', zero(d)],
      ['started_at', 'timestamp', nullable],
      ['completed_at', 'timestamp', nullable],
      ['created_at', 'timestamp', now(d)],
      softDelete,
    ]),
    foreignKeys: [cascadeFrom('FK_plan_steps_plans', 'plan_id', 'execution_plans')],
    uniques: [{ name: 'UQ_plan_step_index', columnNames: ['plan_id', 'step_index'] }],
    checks: checkIn(d, 'CK_plan_steps_status', 'status', STEP_STATUSES),
    indices: [index('IX_plan_steps_agent', ['agent_id'])],
  });
}

function handoffsTable(d: Dialect): Table {
  return new Table({
    name: 'plan_handoffs',
    columns: columns(d, [
      ['id', 'uuid', { isPrimary: true, primaryKeyConstraintName: 'PK_plan_handoffs' }],
      ['plan_id', 'externalId'],
      ['step_id', 'uuid', nullable],
      ['handoff_key', 'externalId'], // the executor's handoffId
      ['from_agent_id', { varchar: 100 }],
      ['to_agent_id', { varchar: 100 }],
      ['reason', { varchar: 50 }],
      ['explanation', 'longText', nullable],
      ['timestamp', 'timestamp', now(d)],
      softDelete,
    ]),
    foreignKeys: [
      cascadeFrom('FK_plan_handoffs_plans', 'plan_id', 'execution_plans'),
      // NO ACTION: a second cascade path plans -> steps -> handoffs is refused by SQL Server
      {
        name: 'FK_plan_handoffs_steps',
        columnNames: ['step_id'],
        referencedTableName: 'plan_steps',
        referencedColumnNames: ['id'],
        onDelete: 'NO ACTION',
      },
    ],
    indices: [index('IX_plan_handoffs_plan', ['plan_id'])],
  });
}

function decisionsTable(d: Dialect): Table {
  return new Table({
    name: 'plan_decisions',
    columns: columns(d, [
      ['id', 'uuid', { isPrimary: true, primaryKeyConstraintName: 'PK_plan_decisions' }], // the decision event's eventId
      ['plan_id', 'externalId'],
      ['session_id', 'externalId'],
      ['decision', { varchar: 10 }],
      ['modified_steps', 'longText', nullable], // JSON, edit only
      ['feedback', 'longText', nullable],
      ['decided_by', { varchar: 200 }, nullable],
      ['decided_at', 'timestamp'],
      softDelete,
    ]),
    foreignKeys: [cascadeFrom('FK_plan_decisions_plans', 'plan_id', 'execution_plans')],
    checks: checkIn(d, 'CK_plan_decisions_decision', 'decision', ['approve', 'edit', 'reject']),
    indices: [index('IX_plan_decisions_plan', ['plan_id', 'decided_at'])],
  });
}

function dagsTable(d: Dialect): Table {
  return new Table({
    name: 'workflow_dags',
    columns: columns(d, [
      ['workflow_id', 'externalId', { isPrimary: true, primaryKeyConstraintName: 'PK_workflow_dags' }], // = plan id
      ['dag', 'longText'], // JSON: steps with dependsOn and their topological layers, stored once
      ['intent', 'longText', nullable],
      ['created_at', 'timestamp', now(d)],
      ['expires_at', 'timestamp', nullable],
      softDelete,
    ]),
    foreignKeys: [cascadeFrom('FK_workflow_dags_plans', 'workflow_id', 'execution_plans')],
    indices: [index('IX_workflow_dags_expires', ['expires_at'])],
  });
}

function checkpointsTable(d: Dialect): Table {
  return new Table({
    name: 'workflow_checkpoints',
    columns: columns(d, [
      ['id', 'uuid', { isPrimary: true, primaryKeyConstraintName: 'PK_workflow_checkpoints' }],
      ['workflow_id', 'externalId'],
      ['checkpoint_key', 'externalId'], // the executor's checkpointId
      ['layer', 'int'],
      ['state', 'longText'], // JSON
      ['created_at', 'timestamp', now(d)],
      softDelete,
    ]),
    foreignKeys: [cascadeFrom('FK_workflow_checkpoints_plans', 'workflow_id', 'execution_plans')],
    indices: [index('IX_workflow_checkpoints_workflow', ['workflow_id', 'layer'])],
  });
}

function headsTable(d: Dialect): Table {
  return new Table({
    // one row per plan that has events: the row the worker locks to serialise a plan's writers
    name: 'plan_heads',
    columns: columns(d, [
      ['plan_id', 'externalId', { isPrimary: true, primaryKeyConstraintName: 'PK_plan_heads' }],
      ['session_id', 'externalId'],
      ['version', 'int', zero(d)],
      ['event_count', 'int', zero(d)],
      ['last_seq', 'int', zero(d)],
      ['updated_at', 'timestamp', now(d)],
      softDelete,
    ]),
  });
}

function eventsTable(d: Dialect): Table {
  return new Table({
    // append-only raw log; event_id is the idempotency key, so it is the primary key (TypeORM:
    // SQL Server's MERGE-based orIgnore matches on the primary key only)
    name: 'plan_events',
    columns: columns(d, [
      ['event_id', 'uuid', { isPrimary: true, primaryKeyConstraintName: 'PK_plan_events' }],
      ['plan_id', 'externalId'],
      ['session_id', 'externalId'],
      ['type', { varchar: 40 }],
      ['seq', 'int'],
      ['spec_version', 'int'],
      ['occurred_at', 'timestamp'],
      ['recorded_at', 'timestamp', now(d)],
      ['payload', 'longText'], // JSON
      softDelete,
    ]),
    indices: [index('IX_plan_events_plan', ['plan_id', 'seq']), index('IX_plan_events_deleted', ['deleted_at'])],
  });
}
