import { ErrorKind, errorKindOf, PlanLedgerError } from '../shared/errors';

/** Exit codes of every `plan-ledger` command; `--help` prints them. */
export const EXIT = {
  ok: 0,
  /** The operation ran and failed (database down, item not found, events failed again). */
  failed: 1,
  /** The command line or the configuration is wrong; nothing was done. */
  usage: 2,
  /** A check ran and its answer is beyond the threshold asked for (`cost reconcile --fail-over`). */
  check: 3,
} as const;

/** Each kind of error (shared/errors.ts) and the exit code it ends a command with: the one place. */
const EXIT_BY_KIND: Readonly<Record<ErrorKind, number>> = {
  usage: EXIT.usage,
  config: EXIT.usage,
  'not-found': EXIT.failed,
  conflict: EXIT.failed,
  permanent: EXIT.failed,
  failed: EXIT.failed,
};

/** The exit code an error ends a command with: by its kind; anything else (a bug, a driver's error) is a failure. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof CheckFailedError) return EXIT.check;
  const kind = errorKindOf(err);
  return kind === undefined ? EXIT.failed : EXIT_BY_KIND[kind];
}

/** An error of the CLI itself (a bad flag, a command that could not start), printed as one line. */
export class CliError extends PlanLedgerError {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly kind: ErrorKind = 'failed',
  ) {
    super(message);
  }
}

/** A check that ran and failed (its report already printed): exit code 3. */
export class CheckFailedError extends PlanLedgerError {
  override readonly name = 'CheckFailedError';
  readonly kind = 'failed';
}

export const EXIT_HELP = `
Exit codes:
  0  done
  1  failed (database or Redis unreachable, plan/session/step/dead letter not found, operation failed)
  2  usage error (bad arguments or configuration); nothing was done
  3  check failed (cost reconcile beyond --fail-over)`;
