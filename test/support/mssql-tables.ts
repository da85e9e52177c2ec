import type { DataSource } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import { moneyColumns } from '../../src/store/entities';
import { paramValue, type Answer } from './recording-mssql';

/** A stored row, by column name, with the values a SQL Server driver returns (Dates for datetime2). */
export type Row = Record<string, unknown>;

/**
 * The event store's tables in memory, behind a recording SQL Server DataSource: an `Answer` that
 * carries out the statements the store sends on SQL Server (MERGE and INSERT from one OPENJSON
 * parameter, the heads' version bump, DELETE by an OPENJSON id list, unless matched) and answers its reads (rows by
 * an OPENJSON id list, a plan's log page, the gap scans), so that a recorded workload takes the
 * store's real paths: redeliveries find their events, a late event finds the plan's rows and log.
 * Only the statement shapes the store sends are known: any other is answered with no rows and
 * kept in `unknown`, for the caller to fail on. There are no transactions: the writes of one that
 * rolls back stay (a conflict is thrown before any row of the refused event is written).
 */
export class MssqlTables {
  /** Statements of a shape these tables do not model. */
  readonly unknown: string[] = [];
  private readonly tables = new Map<string, Row[]>();
  private ds?: DataSource;

  /** The DataSource whose entity metadata maps the JSON parameters' properties to columns. */
  bind(ds: DataSource): void {
    this.ds = ds;
  }

  rows(table: string): Row[] {
    let rows = this.tables.get(table);
    if (!rows) this.tables.set(table, (rows = []));
    return rows;
  }

  readonly answer: Answer = (sql, params) => {
    const p = (i: number) => paramValue(params[i]);
    let m: RegExpMatchArray | null;
    if (
      (m = sql.match(
        /^MERGE INTO "(\w+)"(?: WITH \(HOLDLOCK\))? AS t USING OPENJSON\(@0\) .*? ON t\."(\w+)" = s\."\w+" WHEN MATCHED THEN UPDATE SET (.*?) WHEN NOT MATCHED/,
      ))
    ) {
      const [, table, key, sets] = m;
      const copied = [...sets.matchAll(/"(\w+)" = s\."\1"/g)].map((s) => s[1]);
      // counters that add the new row's value to the stored one (the analytics rollups)
      const added = [...sets.matchAll(/"(\w+)" = t\."\1" \+ s\."\1"/g)].map((s) => s[1]);
      for (const row of this.fromJson(table, p(0))) {
        const stored = this.rows(table).find((r) => r[key] === row[key]);
        if (!stored) this.rows(table).push(row);
        else {
          for (const c of copied) stored[c] = row[c];
          for (const c of added) stored[c] = Number(stored[c]) + Number(row[c]);
        }
      }
      return [];
    }
    if ((m = sql.match(/^INSERT INTO "(\w+)" \(.*\) SELECT .* FROM OPENJSON\(@0\) WITH \(/))) {
      const table = m[1];
      const rows = this.fromJson(table, p(0));
      const key = this.meta(table).primaryColumns.map((c) => c.databaseName);
      const same = (a: Row, b: Row) => key.every((k) => a[k] === b[k]);
      // the statement fails whole on a stored key, as SQL Server's 2627 does
      if (rows.some((r) => this.rows(table).some((stored) => same(r, stored))))
        throw Object.assign(new Error(`Violation of PRIMARY KEY constraint on ${table}`), { number: 2627 });
      for (const row of rows) this.rows(table).push(row);
      return [];
    }
    if (
      /^UPDATE "plan_heads" SET "version" = "version" \+ 1 WHERE "plan_id" IN \(SELECT v FROM OPENJSON\(@0\)/.test(sql)
    ) {
      const ids = idSet(p(0));
      for (const r of this.rows('plan_heads')) if (ids.has(r.plan_id as string)) r.version = Number(r.version) + 1;
      return [];
    }
    if ((m = sql.match(/^DELETE FROM "(\w+)" WHERE "(\w+)" IN \(SELECT v FROM OPENJSON\(@0\)/))) {
      const [, table, column] = m;
      const ids = idSet(p(0));
      // `AND NOT EXISTS (SELECT 1 FROM "other" "m" WHERE ("m"."c" = "table"."c" AND DATALENGTH(...) ...) AND ...)`
      const unless = sql.match(/ AND NOT EXISTS \(SELECT 1 FROM "(\w+)" "m" WHERE (.*)\)$/);
      const on = unless ? [...unless[2].matchAll(/\("m"\."(\w+)" = "\w+"\."\1" AND DATALENGTH/g)].map((c) => c[1]) : [];
      const matched = (r: Row) => !!unless && this.rows(unless[1]).some((o) => on.every((c) => o[c] === r[c]));
      this.tables.set(
        table,
        this.rows(table).filter((r) => !ids.has(r[column] as string) || matched(r)),
      );
      return [];
    }
    if (
      /^SELECT "event_id", "plan_id" FROM "plan_events" WHERE "event_id" IN \(SELECT v FROM OPENJSON\(@0\)/.test(sql)
    ) {
      const ids = idSet(p(0));
      return this.rows('plan_events')
        .filter((r) => ids.has(r.event_id as string))
        .map((r) => ({ event_id: r.event_id, plan_id: r.plan_id }));
    }
    if (!sql.startsWith('SELECT ')) return this.unmodelled(sql);
    // a read by an id list: the RowStore's findIn
    if ((m = sql.match(/ FROM "(\w+)" "(\w+)" WHERE "?\2"?\."(\w+)" IN \(SELECT v FROM OPENJSON\(@0\)/))) {
      const [, table, , column] = m;
      const ids = idSet(p(0));
      return project(
        sql,
        this.rows(table).filter((r) => ids.has(r[column] as string)),
      );
    }
    // the rows of a list of plans (what they add to the rollups), soft-deleted ones left out
    if (
      (m = sql.match(
        / FROM "(\w+)" "(\w+)" WHERE \( "\2"\."(\w+)" IN \(SELECT v FROM OPENJSON\(@0\) .*\) \)( AND \( "\2"\."deleted_at" IS NULL \))?$/,
      ))
    ) {
      const [, table, , column, live] = m;
      const ids = idSet(p(0));
      return project(
        sql,
        this.rows(table).filter((r) => ids.has(r[column] as string) && (!live || r.deleted_at === null)),
      );
    }
    // whether a row with this value exists (a repository's exists: the new fork's id is free)
    if (
      (m = sql.match(
        /^SELECT 1 AS "row_exists" FROM \(SELECT 1 AS dummy_column\) "dummy_table" WHERE EXISTS \(SELECT 1 FROM "(\w+)" "(\w+)" WHERE \(\("\2"\."(\w+)" = @0\)\)\)/,
      ))
    ) {
      const [, table, , column] = m;
      return this.rows(table).some((r) => r[column] === p(0)) ? [{ row_exists: 1 }] : [];
    }
    // a row by one column, as a repository's findOne or find sends it (`plans fork` reading its parent)
    if (
      (m = sql.match(
        / FROM "(\w+)" "(\w+)" WHERE \( \(\("\2"\."(\w+)" = @0\)\) \)( AND \( "\2"\."deleted_at" IS NULL \))?(?: ORDER BY \(SELECT NULL\) OFFSET 0 ROWS FETCH NEXT (\d+) ROWS ONLY)?$/,
      ))
    ) {
      const [, table, , column, live, fetch] = m;
      const rows = this.rows(table).filter((r) => r[column] === p(0) && (!live || r.deleted_at === null));
      return project(sql, fetch ? rows.slice(0, Number(fetch)) : rows);
    }
    // one plan's rows of a table (a rebuild's stored step prices)
    if ((m = sql.match(/ FROM "(\w+)" "(\w+)" WHERE \(\("\2"\."(\w+)" = @0\)\)$/))) {
      const [, table, , column] = m;
      return project(
        sql,
        this.rows(table).filter((r) => r[column] === p(0)),
      );
    }
    // `approvals repair`: how many approvals are undecided and unconsumed, and a page of them after an approvalId
    const undecided = () => this.rows('approvals').filter((r) => r.decision === null && r.consumed_at === null);
    if (
      /^SELECT COUNT\(\*\) AS "n" FROM "approvals" "a" WHERE "a"\."decision" IS NULL AND "a"\."consumed_at" IS NULL$/.test(
        sql,
      )
    )
      return [{ n: undecided().length }];
    if (
      / FROM "approvals" "a" WHERE "a"\."decision" IS NULL AND "a"\."consumed_at" IS NULL AND "a"\."approval_id" > @0 ORDER BY "a"\."approval_id" ASC OFFSET 0 ROWS FETCH NEXT \d+ ROWS ONLY$/.test(
        sql,
      )
    ) {
      const after = String(p(0));
      // BIN2 order: UTF-16 code units, as JavaScript compares strings
      const rows = undecided()
        .filter((r) => String(r.approval_id) > after)
        .sort((a, b) => (String(a.approval_id) < String(b.approval_id) ? -1 : 1));
      return project(sql, rows.slice(0, fetchNext(sql)));
    }
    // decisions stored before their request: by plan id and seq lists and type (live rows)
    if (
      (m = sql.match(
        / FROM "plan_events" "e" WHERE \( "e"\."plan_id" IN \(([@\d, ]+)\) AND "e"\."seq" IN \(([@\d, ]+)\) AND "e"\."type" = @(\d+) \) AND \( "e"\."deleted_at" IS NULL \)$/,
      ))
    ) {
      const values = (list: string) => new Set(list.split(', ').map((v) => p(Number(v.slice(1)))));
      const [plans, seqs, type] = [values(m[1]), values(m[2]), p(Number(m[3]))];
      return project(
        sql,
        this.rows('plan_events').filter(
          (r) => plans.has(r.plan_id) && seqs.has(Number(r.seq)) && r.type === type && r.deleted_at === null,
        ),
      );
    }
    // a page of one plan's log, or its defining plan.created
    if (/ FROM "plan_events" "e" WHERE "e"\."plan_id" = @0/.test(sql)) {
      let rows = this.rows('plan_events').filter((r) => r.plan_id === p(0));
      if (/"e"\."type" = @1/.test(sql)) rows = rows.filter((r) => r.type === p(1));
      if (/"e"\."seq" >= @1 AND/.test(sql)) {
        const [seq, id] = [Number(p(1)), String(p(2))];
        rows = rows.filter((r) => Number(r.seq) > seq || (Number(r.seq) === seq && String(r.event_id) > id));
      } else if (/"e"\."seq" > @1/.test(sql)) rows = rows.filter((r) => Number(r.seq) > Number(p(1)));
      rows = [...rows].sort(
        (a, b) => Number(a.seq) - Number(b.seq) || (String(a.event_id) < String(b.event_id) ? -1 : 1),
      );
      return project(sql, rows.slice(0, fetchNext(sql)));
    }
    if (/ FROM "plan_heads" "h" WHERE "h"\."gap_since" <= @0/.test(sql)) {
      const cutoff = p(0) as Date;
      const rows = this.rows('plan_heads')
        .filter((r) => r.gap_since instanceof Date && r.gap_since <= cutoff)
        .sort((a, b) => (a.gap_since as Date).getTime() - (b.gap_since as Date).getTime());
      return project(sql, rows.slice(0, fetchNext(sql)));
    }
    // the price overrides a store prices with (none are set in the recorded workload)
    if (/^SELECT .* FROM "price_overrides" "PriceOverride" ORDER BY/.test(sql)) return [];
    // the webhook subscriptions a store writes outbox rows for (none in the store's workload)
    if (/^SELECT .* FROM "webhook_subscriptions" "WebhookSubscription"( ORDER BY |$)/.test(sql)) return [];
    if (/^SELECT COUNT\(\*\) AS "n" FROM "plan_heads" "h" WHERE "h"\."gap_since" IS NOT NULL/.test(sql))
      return [{ n: this.rows('plan_heads').filter((r) => r.gap_since !== null).length }];
    return this.unmodelled(sql);
  };

  private unmodelled(sql: string): Row[] {
    this.unknown.push(sql.slice(0, 160));
    return [];
  }

  private meta(table: string) {
    const meta = this.ds!.entityMetadatas.find((e) => e.tableName === table);
    if (!meta) throw new Error(`MssqlTables: no entity for table ${table}`);
    return meta;
  }

  /** The rows of an OPENJSON parameter (keyed by property, instants as ISO text without a zone), by column. */
  private fromJson(table: string, json: unknown): Row[] {
    const meta = this.meta(table);
    return (JSON.parse(String(json)) as Array<Record<string, unknown>>).map((item) => {
      const row: Row = {};
      for (const c of meta.columns) row[c.databaseName] = fromJsonValue(c, item[c.propertyName]);
      return row;
    });
  }
}

function fromJsonValue(c: ColumnMetadata, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (c.type === 'datetime2' && typeof value === 'string') return new Date(`${value}Z`);
  return value;
}

function idSet(json: unknown): Set<string> {
  return new Set(JSON.parse(String(json)) as string[]);
}

/** `OFFSET 0 ROWS FETCH NEXT n ROWS ONLY`'s n; every row without one. */
function fetchNext(sql: string): number {
  const m = sql.match(/FETCH NEXT (\d+) ROWS ONLY$/);
  return m ? Number(m[1]) : Infinity;
}

/**
 * The rows as a SELECT list of `"alias"."column" AS "name"` items returns them, as the driver
 * reads them: a DECIMAL column (money, kept as the exact text the JSON parameter carried) as a JS
 * number, the way tedious reads it, unless the statement converts it to text
 * (`CONVERT(varchar(40), "alias"."column")`).
 */
function project(sql: string, rows: Row[]): Row[] {
  const list = sql.slice(0, sql.indexOf(' FROM '));
  const items = [...list.matchAll(/(CONVERT\(varchar\(40\), )?"\w+"\."(\w+)"\)? AS "(\w+)"/g)];
  const value = (r: Row, column: string, asText: boolean) => {
    const v = r[column];
    return typeof v === 'string' && MONEY_COLUMNS.has(column) && !asText ? tediousDecimal(v) : v;
  };
  return rows.map((r) => Object.fromEntries(items.map(([, text, column, name]) => [name, value(r, column, !!text)])));
}

/** The money columns (DECIMAL(24,12) on SQL Server) of the plan-ledger tables. */
const MONEY_COLUMNS = new Set(moneyColumns().map((c) => c.column));

/** A DECIMAL(24,12) as tedious reads it: its digits as a double, divided by 10^12 (readNumeric). */
export function tediousDecimal(text: string): number {
  const [whole, frac = ''] = text.split('.');
  return Number(`${whole}${frac.padEnd(12, '0').slice(0, 12)}`) / 10 ** 12;
}
