import { ErrorKind, errorKindOf } from '../shared/errors';

/** Each kind of error (shared/errors.ts) and the HTTP status it is answered with: the one place. */
const STATUS_BY_KIND: Readonly<Record<ErrorKind, number>> = {
  usage: 400,
  config: 500,
  'not-found': 404,
  conflict: 409,
  permanent: 422,
  failed: 500,
};

/** The status a plan-ledger error is answered with; undefined for anything else (answered 500 and logged). */
export function httpStatusOf(err: unknown): number | undefined {
  const kind = errorKindOf(err);
  return kind === undefined ? undefined : STATUS_BY_KIND[kind];
}
