/**
 * SQL Server runs every connection with XACT_ABORT ON: an error or a cancelled request rolls the
 * whole transaction back on the server. Checked without a server: the option the driver logs in
 * with, and what the store does when an error has ended its transaction (mssql's aborted
 * transaction refuses every later request on it, as the recording runner does here).
 */
import { QueryFailedError } from 'typeorm';
import * as mssqlDriver from 'mssql';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { dataSourceOptions } from '../../src/store/data-source';
import { EventIdConflictError } from '../../src/store/ledger/event-conflict';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { planRun } from '../support/event-factory';
import { paramValue, recordingMssql } from '../support/recording-mssql';

describe('SQL Server XACT_ABORT', () => {
  it('the driver logs in with SET XACT_ABORT ON', () => {
    const options = dataSourceOptions(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none')) as {
      options?: { abortTransactionOnError?: boolean };
    };
    expect(options.options?.abortTransactionOnError).toBe(true);
  });

  it('an id stored for another plan is still reported as a conflict naming both plans when the insert ended the transaction', async () => {
    const [created] = planRun({ seed: 41, steps: 1 });
    const doomed = new Set<number>();
    const { ds, statements } = await recordingMssql((sql, params, runner) => {
      if (doomed.has(runner)) throw new mssqlDriver.TransactionError('Transaction has been aborted.', 'EABORT');
      if (/^SELECT/.test(sql) && sql.includes('FROM "plan_heads"'))
        return (JSON.parse(String(paramValue(params[0]))) as string[]).map((id) => ({
          r_plan_id: id,
          r_session_id: created.sessionId,
          r_version: 1, // created by this transaction: a plan seen for the first time
          r_event_count: 0,
          r_last_seq: 0,
          r_applied_seq: null,
          r_pending_events: 0,
          r_gap_since: null,
          r_updated_at: new Date(),
          r_restored_at: null,
          r_deleted_at: null,
        }));
      if (/^INSERT INTO "plan_events"/.test(sql)) {
        doomed.add(runner); // XACT_ABORT: the server rolled the transaction back
        const err = Object.assign(
          new mssqlDriver.RequestError(
            "Violation of PRIMARY KEY constraint 'PK_plan_events'. Cannot insert duplicate key in object 'dbo.plan_events'.",
            'EREQUEST',
          ),
          { number: 2627 },
        );
        throw new QueryFailedError(sql, params, err);
      }
      if (/^SELECT/.test(sql) && sql.includes('FROM "plan_events"'))
        return [
          {
            r_event_id: created.eventId,
            r_plan_id: 'plan-that-owns-the-id',
            r_session_id: created.sessionId,
            r_type: created.type,
            r_seq: created.seq,
            r_spec_version: 1,
            r_occurred_at: new Date(created.occurredAt),
            r_recorded_at: new Date(),
            r_payload: JSON.stringify(created.payload),
            r_deleted_at: null,
          },
        ];
      return undefined;
    });
    const store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0 });
    const refused = await store.persist([created]).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(EventIdConflictError);
    expect((refused as Error).message).toContain(`of plan ${created.planId}`);
    expect((refused as Error).message).toContain('stored for an event of plan plan-that-owns-the-id');
    // the stored row was read on another connection, after the insert that ended the transaction
    const insert = statements.findIndex((s) => /^INSERT INTO "plan_events"/.test(s.sql));
    const read = statements.findIndex((s, i) => i > insert && /^SELECT/.test(s.sql) && s.sql.includes('"plan_events"'));
    expect(read).toBeGreaterThan(insert);
    expect(statements[read].runner).not.toBe(statements[insert].runner);
  });
});
