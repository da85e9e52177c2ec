import { PlanLedgerError } from '../shared/errors';

/** The read side's errors: expected outcomes, not bugs (kinds: see shared/errors.ts). */

/** An argument is malformed (bad ISO date, negative limit, unknown status). Says which and why. */
export class QueryArgumentError extends PlanLedgerError {
  override readonly name = 'QueryArgumentError';
  readonly kind = 'usage';
  constructor(
    readonly argument: string,
    problem: string,
  ) {
    super(`${argument}: ${problem}`);
  }
}

/** The plan / session / step / checkpoint asked for does not exist or was soft-deleted. */
export class NotFoundError extends PlanLedgerError {
  override readonly name = 'NotFoundError';
  readonly kind = 'not-found';
  constructor(
    readonly what: 'plan' | 'session' | 'step' | 'checkpoint',
    readonly id: string,
    detail = '',
  ) {
    super(`${what} "${id}" not found${detail}`);
  }
}
