import { claimDeliveries } from '../../src/store/sql/delivery-claims';
import { sqlDialectOf } from '../../src/store/sql/dialects';
import { paramValue, recordingMssql } from '../support/recording-mssql';
import { judge, passes, TsqlParser } from '../support/tsql-gate';

/**
 * No SQL Server runs here: the delivery loop's claim on SQL Server (one UPDATE of the TOP (n) due
 * rows read past locked ones, OUTPUT answering the leased rows) is recorded on a DataSource that
 * never connects, checked for its parameters and parsed by both T-SQL parsers of the syntax gate.
 */
const AT = new Date('2026-03-01T12:00:00.000Z');
const UNTIL = new Date('2026-03-01T12:01:00.000Z');
const TOKEN = '6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b';

describe('webhook delivery claim: the SQL sent to SQL Server (generated, no server)', () => {
  let parser: TsqlParser;
  beforeAll(() => {
    parser = new TsqlParser();
  });
  afterAll(() => parser.close());

  it('leases and returns the due rows in one statement, oldest first, locked rows skipped, values as parameters', async () => {
    const answered = {
      id: 'a1b2c3d4-0000-4000-8000-000000000001',
      subscriptionId: 'wh-000000000001',
      eventType: 'plan.finalized',
      payload: '{"type":"plan.finalized"}',
      attempts: 2,
      createdAt: AT,
    };
    const { ds, statements } = await recordingMssql((sql) => (/^WITH /.test(sql) ? [answered] : undefined));
    const rows = await claimDeliveries(ds, sqlDialectOf(ds), { token: TOKEN, at: AT, until: UNTIL, limit: 64 });
    expect(rows).toEqual([
      {
        id: answered.id,
        subscriptionId: answered.subscriptionId,
        eventType: 'plan.finalized',
        payload: answered.payload,
        attempts: 2,
        createdAtMs: AT.getTime(),
      },
    ]);
    expect(statements).toHaveLength(1);
    const [{ sql, params }] = statements;
    expect(sql).toBe(
      'WITH "due" AS (SELECT TOP (@0) "id", "subscription_id", "event_type", "payload", "attempts", "created_at", "status", "next_attempt_at", "lease_owner", "lease_until" FROM "webhook_deliveries" WITH (ROWLOCK, UPDLOCK, READPAST) ' +
        'WHERE "status" = @1 AND "next_attempt_at" <= @2 AND ("lease_until" IS NULL OR "lease_until" < @2) ORDER BY "next_attempt_at") ' +
        'UPDATE "due" SET "lease_owner" = @3, "lease_until" = @4 OUTPUT inserted."id" AS "id", inserted."subscription_id" AS "subscriptionId", inserted."event_type" AS "eventType", inserted."payload" AS "payload", inserted."attempts" AS "attempts", inserted."created_at" AS "createdAt"',
    );
    expect(params.map(paramValue)).toEqual([64, 'pending', AT, TOKEN, UNTIL]);
    // the instants as datetime2(3), like the columns, not the legacy datetime a bare Date would be
    expect(params[2]).toMatchObject({ type: 'datetime2', params: [3] });
    expect(params[4]).toMatchObject({ type: 'datetime2', params: [3] });
    const failing = (await judge(parser, [sql]))
      .filter((v) => !passes(v))
      .map((v) => ({ parseError: v.parseError, second: v.second.parseError, forbidden: v.forbidden }));
    expect(failing).toEqual([]);
  });
});
