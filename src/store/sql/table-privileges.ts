/** The row privileges a worker needs on each table (reads, inserts, updates, deletes of rows). */
export const ROW_PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] as const;

const granted = (v: unknown) => v === true || v === 1 || v === '1' || v === 't';

/**
 * What a capability probe's rows (one per table: `table_name`, `can_select` ... `can_delete`)
 * say the login lacks, one item per privilege: "no INSERT on plan_events, plan_heads".
 */
export function missingRowPrivileges(rows: Record<string, unknown>[]): string[] {
  const missing: string[] = [];
  for (const privilege of ROW_PRIVILEGES) {
    const tables = rows
      .filter((r) => r.table_name != null && !granted(r[`can_${privilege.toLowerCase()}`]))
      .map((r) => String(r.table_name))
      .sort();
    if (tables.length > 0) missing.push(`the login has no ${privilege} on ${tables.join(', ')}`);
  }
  return missing;
}

export { granted as isGranted };
