/**
 * The error vocabulary. Every error plan-ledger raises on purpose is a `PlanLedgerError`: a stable
 * `name` (what logs and API clients match on) and a kind (what went wrong, for whoever decides
 * what it means to a caller). The kinds are mapped in one place each: to the CLI's exit codes
 * (cli/exit-codes.ts) and to HTTP statuses (http/http-errors.ts), so one kind ends the same way
 * in every command and every route.
 *
 * - `usage`: the request itself is wrong (an argument, a filter, a body); nothing was done.
 * - `config`: the configuration is wrong (an environment variable, an option); nothing started.
 * - `not-found`: what was asked for does not exist.
 * - `conflict`: it clashes with what is stored (an event id reused for another event).
 * - `permanent`: refused for good (an event that breaks the contract); retrying cannot help.
 * - `failed`: the operation ran and failed (a server unreachable, a deadline missed).
 */
export type ErrorKind = 'usage' | 'config' | 'not-found' | 'conflict' | 'permanent' | 'failed';

export abstract class PlanLedgerError extends Error {
  abstract readonly kind: ErrorKind;
}

/** The kind of a plan-ledger error; undefined for anything else (a bug, a driver's error). */
export function errorKindOf(err: unknown): ErrorKind | undefined {
  return err instanceof PlanLedgerError ? err.kind : undefined;
}
