import type { DataSource } from 'typeorm';
import { ENTITY } from '../entities';
import type { SqlDialect } from './sql-dialect';

/** Which outbox rows a delivery round takes: up to `limit` due at `at` whose lease is free, leased to `token` until `until`. */
export interface DeliveryClaim {
  token: string;
  at: Date;
  until: Date;
  limit: number;
}

/** A leased outbox row as the delivery loop sends it: its columns as stored, no entity built. */
export interface ClaimedDelivery {
  /** The `webhook-id` header. */
  id: string;
  subscriptionId: string;
  eventType: string;
  payload: string;
  attempts: number;
  /** When the row was written (the lag's start), in epoch milliseconds. */
  createdAtMs: number;
}

/** The columns a claim answers and the properties they come back as. */
const ANSWERED: ReadonlyArray<[column: string, property: string]> = [
  ['id', 'id'],
  ['subscription_id', 'subscriptionId'],
  ['event_type', 'eventType'],
  ['payload', 'payload'],
  ['attempts', 'attempts'],
  ['created_at', 'createdAt'],
];

/** Leases due outbox rows to `claim.token` and returns them, each in the statements its dialect allows. */
export async function claimDeliveries(
  ds: DataSource,
  dialect: SqlDialect,
  claim: DeliveryClaim,
): Promise<ClaimedDelivery[]> {
  const how = dialect.deliveryClaim;
  const q = (name: string) => ds.driver.escape(name);
  const table = q(ds.getMetadata(ENTITY.webhookDelivery).tableName);
  const due = `${q('status')} = :pending AND ${q('next_attempt_at')} <= :at AND (${q('lease_until')} IS NULL OR ${q('lease_until')} < :at)`;
  const answered = (prefix: string) => ANSWERED.map(([c, p]) => `${prefix}${q(c)} AS ${q(p)}`).join(', ');
  const params = {
    pending: 'pending',
    at: dialect.instant(claim.at),
    until: dialect.instant(claim.until),
    token: claim.token,
    limit: claim.limit,
  };
  const lease = `${q('lease_owner')} = :token, ${q('lease_until')} = :until`;
  const order = `ORDER BY ${q('next_attempt_at')}`;
  let rows: Record<string, unknown>[];
  if (how.kind === 'returning') {
    const pick = `SELECT ${q('id')} FROM ${table} WHERE ${due} ${order} LIMIT :limit${how.lockClause ? ` ${how.lockClause}` : ''}`;
    rows = await run(
      ds,
      `UPDATE ${table} SET ${lease} WHERE ${q('id')} IN (${pick}) RETURNING ${answered('')}`,
      params,
    );
  } else if (how.kind === 'output') {
    const kept = [...new Set([...ANSWERED.map(([c]) => c), 'status', 'next_attempt_at', 'lease_owner', 'lease_until'])];
    rows = await run(
      ds,
      `WITH ${q('due')} AS (SELECT TOP (:limit) ${kept.map(q).join(', ')} FROM ${table} WITH (ROWLOCK, UPDLOCK, READPAST) WHERE ${due} ${order}) ` +
        `UPDATE ${q('due')} SET ${lease} OUTPUT ${answered('inserted.')}`,
      params,
    );
  } else {
    const ids = (
      await run(ds, `SELECT ${q('id')} AS ${q('id')} FROM ${table} WHERE ${due} ${order} LIMIT :limit`, params)
    ).map((r) => String(r.id));
    if (ids.length === 0) return [];
    await run(ds, `UPDATE ${table} SET ${lease} WHERE ${q('id')} IN (:...ids) AND ${due}`, { ...params, ids });
    rows = await run(
      ds,
      `SELECT ${answered('')} FROM ${table} WHERE ${q('id')} IN (:...ids) AND ${q('lease_owner')} = :token`,
      {
        ids,
        token: claim.token,
      },
    );
  }
  return rows.map((r) => ({
    id: String(r.id),
    subscriptionId: String(r.subscriptionId),
    eventType: String(r.eventType),
    payload: String(r.payload),
    attempts: Number(r.attempts),
    createdAtMs: instantMs(r.createdAt),
  }));
}

/** Sends one statement with named parameters (`:name`, `:...list`) on a pooled connection; its rows. */
async function run(ds: DataSource, sql: string, params: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const [text, values] = ds.driver.escapeQueryWithParameters(sql, params);
  const runner = ds.createQueryRunner();
  try {
    const result = await runner.query(text, values, true);
    return (result.records ?? []) as Record<string, unknown>[];
  } finally {
    await runner.release();
  }
}

/** A timestamp column's value as its driver returns it (a Date, or SQLite's UTC text), in epoch milliseconds. */
export function instantMs(value: unknown): number {
  if (value instanceof Date) return value.getTime();
  const text = String(value);
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text.replace(' ', 'T')}Z`).getTime();
}
