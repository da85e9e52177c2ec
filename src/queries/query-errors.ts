/**
 * The read side's error vocabulary. Both are expected outcomes, not bugs: the CLI turns a
 * `QueryArgumentError` into exit 2 (nothing was looked up) and a `NotFoundError` into exit 1.
 */

/** An argument is malformed (bad ISO date, negative limit, unknown status). Says which and why. */
export class QueryArgumentError extends Error {
  override readonly name = 'QueryArgumentError';
  constructor(readonly argument: string, problem: string) {
    super(`${argument}: ${problem}`);
  }
}

/** The plan / session / step asked for does not exist or was soft-deleted. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
  constructor(readonly what: 'plan' | 'session' | 'step', readonly id: string, detail = '') {
    super(`${what} "${id}" not found${detail}`);
  }
}
