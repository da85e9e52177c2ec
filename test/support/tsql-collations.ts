import type { MssqlSchema } from './mssql-schema';

/**
 * The collation check of the recorded SQL Server workload: in each statement's syntax tree, every
 * comparison (`=`, `<>`, `<`..., `IN (list)`, `IN (subquery)`, a join's or a MERGE's ON) is resolved
 * to what each side is (a table column, an OPENJSON column, a parameter, a literal, a COLLATE'd
 * expression), and given SQL Server's collation label:
 * - a column is *implicit* in its collation: the one its DDL names, else the database's default;
 *   an OPENJSON `WITH` column likewise (its own COLLATE, else the database's default, or on a
 *   contained database the catalog's);
 * - `expr COLLATE c` is *explicit*; parameters and literals are *coercible* (they take the other
 *   side's collation).
 * Two implicit sides in different collations cannot be compared (Msg 468); neither can two
 * different explicit ones. A side in the database's default is never the same as a named
 * collation: on a database created with another default it is not.
 */

/** A side's collation label; `collation` null: the database's default. */
type Label =
  | { kind: 'implicit' | 'explicit'; collation: string | null; what: string }
  | { kind: 'coercible' | 'unknown' | 'not text'; what: string };

/** Columns a FROM item offers, by lower-cased name. */
type Source = Map<string, Label>;
/** The FROM items in scope, by lower-cased alias (or table name). */
type Scope = Map<string, Source>;

export interface Conflict {
  sql: string;
  left: string;
  right: string;
}

export interface CollationVerdict {
  conflicts: Conflict[];
  /** Comparisons of two text sides resolved to columns (table or OPENJSON), conflicting or not. */
  resolved: string[];
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const identValue = (v: unknown) => String(obj(v)?.value ?? '');

const show = (collation: string | null) => collation ?? "the database's default";
const describe = (l: Label) =>
  l.kind === 'implicit' || l.kind === 'explicit' ? `${l.what} (${l.kind}, ${show(l.collation)})` : l.what;

/** OPENJSON `WITH` columns' collations, read from the statement text (by column name and JSON path). */
export function openJsonCollations(sql: string): Map<string, string | null> {
  const out = new Map<string, string | null>();
  for (const m of sql.matchAll(/(?:"([^"]+)"|(\w+)) n?(?:var)?char\((?:\d+|MAX)\)(?: COLLATE (\w+))? '([^']*)'/g))
    out.set(`${(m[1] ?? m[2]).toLowerCase()}|${m[4]}`, m[3] ?? null);
  return out;
}

class Resolver {
  readonly conflicts: Conflict[] = [];
  readonly resolved: string[] = [];

  constructor(
    private readonly sql: string,
    private readonly schema: MssqlSchema,
    private readonly openJson: Map<string, string | null>,
  ) {}

  /** The columns a table offers. */
  private tableSource(table: string): Source {
    const src: Source = new Map();
    for (const c of this.schema.tables.get(table)?.values() ?? []) {
      const what = `${table}.${c.column}`;
      src.set(
        c.column.toLowerCase(),
        /char/i.test(c.type) ? { kind: 'implicit', collation: c.collation, what } : { kind: 'not text', what },
      );
    }
    return src;
  }

  private openJsonSource(node: Obj): Source {
    const src: Source = new Map();
    for (const col of arr(node.columns)) {
      const c = obj(col)!;
      const name = identValue(c.name);
      const what = `OPENJSON column ${name}`;
      const isText = 'Nvarchar' in (obj(c.type) ?? {}) || 'Varchar' in (obj(c.type) ?? {});
      const key = `${name.toLowerCase()}|${String(c.path ?? '')}`;
      src.set(
        name.toLowerCase(),
        isText ? { kind: 'implicit', collation: this.openJson.get(key) ?? null, what } : { kind: 'not text', what },
      );
    }
    return src;
  }

  /** A FROM item (Table, OpenJsonTable, Derived): its alias and the columns it offers. */
  private factor(node: unknown, outer: Scope[]): [string, Source] | undefined {
    const f = obj(node);
    if (!f) return undefined;
    if (f.Table) {
      const t = obj(f.Table)!;
      const parts = arr(t.name).map((p) => identValue(obj(p)?.Identifier ?? p));
      const table = parts[parts.length - 1];
      const alias = identValue(obj(t.alias)?.name) || table;
      return [alias.toLowerCase(), this.tableSource(table)];
    }
    if (f.OpenJsonTable) {
      const t = obj(f.OpenJsonTable)!;
      return [identValue(obj(t.alias)?.name).toLowerCase(), this.openJsonSource(t)];
    }
    if (f.Derived) {
      const d = obj(f.Derived)!;
      const select = obj(obj(obj(d.subquery)?.body)?.Select);
      const src: Source = new Map();
      if (select) {
        const inner = [this.scopeOf(select, outer), ...outer];
        for (const item of arr(select.projection)) {
          const named = obj(obj(item)?.ExprWithAlias);
          const expr = named ? named.expr : obj(item)?.UnnamedExpr;
          const label = this.label(expr, inner);
          const name = named ? identValue(named.alias) : (/([^.]+)$/.exec(label.what)?.[1] ?? '');
          src.set(name.toLowerCase(), label);
        }
      }
      return [identValue(obj(d.alias)?.name).toLowerCase(), src];
    }
    return undefined;
  }

  /** The FROM items a Select, Update, Delete or Merge node brings into scope. */
  private scopeOf(node: Obj, outer: Scope[]): Scope {
    const scope: Scope = new Map();
    const add = (factor: unknown) => {
      const got = this.factor(factor, outer);
      if (got) scope.set(got[0], got[1]);
    };
    const withJoins = (twj: unknown) => {
      const t = obj(twj);
      if (!t) return;
      if ('relation' in t) {
        add(t.relation);
        for (const j of arr(t.joins)) add(obj(j)?.relation);
      } else add(t);
    };
    for (const key of ['from', 'table', 'source', 'using']) {
      const v = node[key];
      const f = obj(v);
      const list = f?.WithFromKeyword ?? f?.WithoutKeyword ?? f?.BeforeSet ?? f?.AfterSet ?? v;
      if (Array.isArray(list)) list.forEach(withJoins);
      else withJoins(list);
    }
    return scope;
  }

  /** What an expression is, as a side of a comparison. */
  label(expr: unknown, scopes: Scope[]): Label {
    const e = obj(expr);
    if (!e) return { kind: 'unknown', what: 'nothing' };
    if (e.Nested) return this.label(e.Nested, scopes);
    if (e.Collate) {
      const c = obj(e.Collate)!;
      const name = arr(c.collation)
        .map((p) => identValue(obj(p)?.Identifier ?? p))
        .join('.');
      return { kind: 'explicit', collation: name, what: `COLLATE ${name}` };
    }
    if (e.Value) return { kind: 'coercible', what: 'a literal' };
    if (e.Identifier) {
      const name = identValue(e.Identifier);
      if (name.startsWith('@')) return { kind: 'coercible', what: `parameter ${name}` };
      for (const scope of scopes)
        for (const src of scope.values()) {
          const found = src.get(name.toLowerCase());
          if (found) return found;
        }
      return { kind: 'unknown', what: name };
    }
    if (e.CompoundIdentifier) {
      const parts = arr(e.CompoundIdentifier).map(identValue);
      const [alias, column] = parts.slice(-2).map((p) => p.toLowerCase());
      for (const scope of scopes) {
        const found = scope.get(alias)?.get(column);
        if (found) return found;
        if (scope.has(alias)) break;
      }
      return { kind: 'unknown', what: parts.join('.') };
    }
    if (e.Subquery) {
      const select = obj(obj(obj(e.Subquery)?.body)?.Select);
      if (!select) return { kind: 'unknown', what: 'a subquery' };
      return this.projected(select, scopes);
    }
    return { kind: 'unknown', what: Object.keys(e)[0] ?? 'an expression' };
  }

  /** The label of a subquery's (first) projected column. */
  private projected(select: Obj, scopes: Scope[]): Label {
    const first = obj(arr(select.projection)[0]);
    const expr = obj(first?.ExprWithAlias)?.expr ?? first?.UnnamedExpr;
    return this.label(expr, [this.scopeOf(select, scopes), ...scopes]);
  }

  private compare(left: Label, right: Label): void {
    const named = (l: Label): l is Extract<Label, { collation: string | null }> =>
      l.kind === 'implicit' || l.kind === 'explicit';
    if (!named(left) || !named(right)) return;
    this.resolved.push(`${left.what} ~ ${right.what}`);
    const conflict =
      (left.kind === 'implicit' && right.kind === 'implicit' && left.collation !== right.collation) ||
      (left.kind === 'explicit' && right.kind === 'explicit' && left.collation !== right.collation);
    if (conflict) this.conflicts.push({ sql: this.sql, left: describe(left), right: describe(right) });
  }

  walk(node: unknown, scopes: Scope[]): void {
    if (Array.isArray(node)) {
      for (const item of node) this.walk(item, scopes);
      return;
    }
    const o = obj(node);
    if (!o) return;
    for (const [key, value] of Object.entries(o)) {
      const v = obj(value);
      if (['Select', 'Update', 'Delete', 'Merge'].includes(key) && v) {
        this.walk(v, [this.scopeOf(v, scopes), ...scopes]);
        continue;
      }
      if (key === 'BinaryOp' && v && ['Eq', 'NotEq', 'Lt', 'LtEq', 'Gt', 'GtEq'].includes(String(v.op)))
        this.compare(this.label(v.left, scopes), this.label(v.right, scopes));
      if (key === 'InList' && v)
        for (const item of arr(v.list)) this.compare(this.label(v.expr, scopes), this.label(item, scopes));
      if (key === 'InSubquery' && v) {
        const select = obj(obj(obj(v.subquery)?.body)?.Select);
        if (select) this.compare(this.label(v.expr, scopes), this.projected(select, scopes));
      }
      this.walk(value, scopes);
    }
  }
}

/** The collation conflicts of one parsed statement against the schema. */
export function collationConflicts(sql: string, ast: unknown, schema: MssqlSchema): CollationVerdict {
  const r = new Resolver(sql, schema, openJsonCollations(sql));
  r.walk(ast, []);
  return { conflicts: r.conflicts, resolved: r.resolved };
}
