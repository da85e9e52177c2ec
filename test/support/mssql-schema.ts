import { ID_COLLATION } from '../../src/store/sql/mssql';
import type { TextColumnFacts } from '../../src/store/sql/sql-dialect';

/**
 * The SQL Server schema as `migrate --print-sql`'s DDL leaves it, read from the statements alone
 * (no server runs here): each table's columns with their type and collation (null: none named,
 * so the database's default), and the keys, unique constraints and indexes over them. The DDL
 * comes from a few generators (TypeORM's CREATE TABLE, the migrations' ALTER statements), so a
 * statement of a shape not read here is listed in `unread` rather than guessed at.
 */

export interface ModelColumn {
  table: string;
  column: string;
  type: string;
  collation: string | null;
}

export interface ModelKey {
  table: string;
  name: string;
  kind: 'primary key' | 'foreign key' | 'unique' | 'index';
  columns: string[];
  /** A foreign key's referenced table and columns. */
  references?: { table: string; columns: string[] };
}

export interface MssqlSchema {
  tables: Map<string, Map<string, ModelColumn>>;
  keys: ModelKey[];
  /** DDL statements of a shape the reader does not know (must be empty for the model to hold). */
  unread: string[];
}

const NAME = '"([^"]+)"';
const names = (list: string) => [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1]);

/** Top-level comma-separated items of a parenthesised list's inside. */
function items(inside: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted: string | null = null;
  let start = 0;
  for (let i = 0; i < inside.length; i++) {
    const c = inside[i];
    if (quoted) {
      if (c === quoted) quoted = null;
    } else if (c === '"' || c === "'") quoted = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(inside.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(inside.slice(start).trim());
  return out.filter((s) => s.length > 0);
}

/** `"name" type[(n[,m])] [COLLATE c] ...` */
function columnDef(table: string, def: string): ModelColumn | undefined {
  const m = new RegExp(`^${NAME} (\\w+(?:\\((?:MAX|\\d+(?:, ?\\d+)?)\\))?)(?: COLLATE (\\w+))?`, 'i').exec(def);
  return m ? { table, column: m[1], type: m[2], collation: m[3] ?? null } : undefined;
}

/** A table constraint: `CONSTRAINT "n" PRIMARY KEY [NONCLUSTERED] (...)`, `FOREIGN KEY (...) REFERENCES "t" (...)`, `UNIQUE (...)`. */
function constraintDef(table: string, def: string): ModelKey | 'other' | undefined {
  const head = new RegExp(`^CONSTRAINT ${NAME} (.*)$`).exec(def);
  if (!head) return undefined;
  const [, name, rest] = head;
  let m = /^PRIMARY KEY(?: (?:NON)?CLUSTERED)? \(([^)]*)\)$/.exec(rest);
  if (m) return { table, name, kind: 'primary key', columns: names(m[1]) };
  m = /^UNIQUE \(([^)]*)\)$/.exec(rest);
  if (m) return { table, name, kind: 'unique', columns: names(m[1]) };
  m = new RegExp(`^FOREIGN KEY \\(([^)]*)\\) REFERENCES ${NAME} ?\\(([^)]*)\\)`).exec(rest);
  if (m)
    return {
      table,
      name,
      kind: 'foreign key',
      columns: names(m[1]),
      references: { table: m[2], columns: names(m[3]) },
    };
  if (/^(CHECK|DEFAULT) /.test(rest)) return 'other';
  return undefined;
}

export function schemaFromDdl(statements: readonly string[]): MssqlSchema {
  const tables = new Map<string, Map<string, ModelColumn>>();
  let keys: ModelKey[] = [];
  const unread: string[] = [];
  const columnsOf = (table: string) => {
    const t = tables.get(table);
    if (!t) throw new Error(`DDL names table "${table}" before creating it`);
    return t;
  };
  const addColumn = (c: ModelColumn) => columnsOf(c.table).set(c.column, c);
  const dropKey = (table: string, name: string) => {
    keys = keys.filter((k) => !(k.table === table && k.name === name));
  };

  for (const sql of statements) {
    let m: RegExpExecArray | null;
    if ((m = new RegExp(`^CREATE TABLE ${NAME} \\((.*)\\)$`, 's').exec(sql))) {
      const table = m[1];
      tables.set(table, new Map());
      for (const def of items(m[2])) {
        const key = constraintDef(table, def);
        if (key === 'other') continue;
        if (key) keys.push(key);
        else {
          const c = columnDef(table, def);
          if (c) addColumn(c);
          else unread.push(sql);
        }
      }
    } else if ((m = new RegExp(`^ALTER TABLE ${NAME} ADD (CONSTRAINT .*)$`, 's').exec(sql))) {
      const key = constraintDef(m[1], m[2]);
      if (key && key !== 'other') keys.push(key);
      else if (!key) unread.push(sql);
    } else if ((m = new RegExp(`^ALTER TABLE ${NAME} ADD (.*)$`, 's').exec(sql))) {
      for (const def of items(m[2])) {
        const c = columnDef(m[1], def);
        if (c) addColumn(c);
        else unread.push(sql);
      }
    } else if ((m = new RegExp(`^ALTER TABLE ${NAME} ALTER COLUMN (.*)$`, 's').exec(sql))) {
      // SQL Server's ALTER COLUMN restates the column: no COLLATE means the database's default again
      const c = columnDef(m[1], m[2]);
      if (c) addColumn(c);
      else unread.push(sql);
    } else if ((m = new RegExp(`^ALTER TABLE ${NAME} DROP COLUMN ${NAME}$`).exec(sql))) {
      columnsOf(m[1]).delete(m[2]);
    } else if ((m = new RegExp(`^ALTER TABLE ${NAME} DROP CONSTRAINT ${NAME}$`).exec(sql))) {
      dropKey(m[1], m[2]);
    } else if (
      (m = new RegExp(`^CREATE (?:UNIQUE )?(?:(?:NON)?CLUSTERED )?INDEX ${NAME} ON ${NAME} \\(([^)]*)\\)\\s*$`).exec(
        sql,
      ))
    ) {
      keys.push({ table: m[2], name: m[1], kind: 'index', columns: names(m[3]) });
    } else if ((m = new RegExp(`^DROP INDEX ${NAME} ON ${NAME}$`).exec(sql))) {
      dropKey(m[2], m[1]);
    } else if ((m = new RegExp(`^DROP TABLE ${NAME}$`).exec(sql))) {
      tables.delete(m[1]);
      keys = keys.filter((k) => k.table !== m![1]);
    } else if (/^ALTER TABLE "[^"]+" SET \(LOCK_ESCALATION = \w+\)$/.test(sql)) {
      continue;
    } else if (/^(UPDATE|INSERT INTO|DELETE FROM) "/.test(sql)) {
      continue; // a migration's data change
    } else if (/^DECLARE @drop nvarchar\(MAX\); SELECT @drop = STRING_AGG\(.*sys\.stats/.test(sql)) {
      continue; // drops column statistics: no column or key changes
    } else {
      unread.push(sql);
    }
  }
  return { tables, keys, unread };
}

/** The model's text columns as the collation lint reads a schema (null collation: the database's default). */
export function textColumnsOf(schema: MssqlSchema): TextColumnFacts[] {
  return [...schema.tables.values()]
    .flatMap((t) => [...t.values()])
    .filter((c) => /char/i.test(c.type))
    .map((c) => ({
      table: c.table,
      column: c.column,
      collation: c.collation,
      comparesBytes: c.collation === ID_COLLATION,
    }));
}
