import type { EntityManager } from 'typeorm';
import { pgColumnLiteral } from './postgres-array';
import type { Upsert } from './sql-dialect';
import { setList, Statement } from './values-statements';

/**
 * PostgreSQL: the INSERT with one array parameter per column, unnested server-side. The text is
 * the same whatever the number of rows, and the server parses one array per column instead of
 * planning a VALUES list of rows x columns parameters, with less CPU on both sides (BENCHMARKS.md,
 * "End to end"). Row values are the store's own (strings, numbers, booleans, Dates, null); the
 * entities have no transformers. `upsert`: see Upsert. `jsonText`: text columns whose row values
 * are still JS values (an event's payload): all rows' values go as one JSON array, which the
 * server splits into each element's JSON text, exactly JSON.stringify's (the json type keeps its
 * input text). That saves a stringify and an escape pass per row on the worker, its busiest process.
 */
export function unnestInsertStatement(
  m: EntityManager,
  entity: string,
  rows: object[],
  options: { upsert?: Upsert; jsonText?: readonly string[] } = {},
): Statement {
  const driver = m.connection.driver;
  const meta = m.connection.getMetadata(entity);
  const json = new Set(options.jsonText);
  const params = meta.columns.map((c) =>
    json.has(c.propertyName)
      ? JSON.stringify(rows.map((row) => (row as Record<string, unknown>)[c.propertyName]))
      : pgColumnLiteral(rows, c.propertyName),
  );
  const columns = meta.columns.map((c) => driver.escape(c.databaseName)).join(', ');
  const arrays = meta.columns
    .map((c, i) =>
      json.has(c.propertyName)
        ? `ARRAY(SELECT j.v::text FROM json_array_elements($${i + 1}::json) WITH ORDINALITY AS j(v, n) ORDER BY j.n)`
        : `$${i + 1}::${c.type as string}[]`,
    )
    .join(', ');
  const table = driver.escape(meta.tableName);
  let conflict = '';
  if (options.upsert) {
    const col = (prop: string) => driver.escape(meta.findColumnWithPropertyName(prop)!.databaseName);
    const key = col(options.upsert.key);
    const sets = setList(
      options.upsert,
      col,
      `${key} = EXCLUDED.${key}`,
      (c) => `${c} = EXCLUDED.${c}`,
      (c, how) =>
        how === 'add'
          ? `${c} = ${table}.${c} + EXCLUDED.${c}`
          : `${c} = ${how === 'min' ? 'LEAST' : 'GREATEST'}(${table}.${c}, EXCLUDED.${c})`,
    );
    conflict = ` ON CONFLICT (${key}) DO UPDATE SET ${sets}`;
  }
  return { sql: `INSERT INTO ${table} (${columns}) SELECT * FROM unnest(${arrays})${conflict}`, params };
}

/**
 * PostgreSQL: UPDATE of existing rows, matched on `key`, setting only the `update` properties,
 * one array parameter per column. Columns left out are not rewritten (large text stays where it
 * is, and rows whose indexed columns do not change can be updated in place, HOT). The key array
 * also bounds the scan of the table (`= ANY($1)`): joined to the unnest alone, the planner hashes
 * the whole table once it is large next to the batch, a cost that grows with the stored history.
 */
export function unnestUpdateStatement(
  m: EntityManager,
  entity: string,
  rows: object[],
  key: string,
  update: readonly string[],
): Statement {
  const driver = m.connection.driver;
  const meta = m.connection.getMetadata(entity);
  const columns = [key, ...update].map((prop) => meta.findColumnWithPropertyName(prop)!);
  const params = columns.map((c) => pgColumnLiteral(rows, c.propertyName));
  const names = columns.map((c) => driver.escape(c.databaseName));
  const arrays = columns.map((c, i) => `$${i + 1}::${c.type as string}[]`).join(', ');
  const sets = names
    .slice(1)
    .map((n) => `${n} = v.${n}`)
    .join(', ');
  const table = driver.escape(meta.tableName);
  const k = `${table}.${names[0]}`;
  return {
    sql: `UPDATE ${table} SET ${sets} FROM unnest(${arrays}) AS v(${names.join(', ')}) WHERE ${k} = ANY($1::${columns[0].type as string}[]) AND ${k} = v.${names[0]}`,
    params,
  };
}
