/** Exit codes of every `plan-ledger` command; `--help` prints them. */
export const EXIT = {
  ok: 0,
  /** The operation ran and failed (database down, item not found, events failed again). */
  failed: 1,
  /** The command line or the configuration is wrong; nothing was done. */
  usage: 2,
} as const;

/** An error the CLI prints as one line and turns into an exit code, without a stack trace. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(message: string, readonly exitCode: number = EXIT.failed) {
    super(message);
  }
}

export const EXIT_HELP = `
Exit codes:
  0  done
  1  failed (database or Redis unreachable, plan/session/step not found, operation failed)
  2  usage error (bad arguments, configuration, or an unknown dead-letter id); nothing was done`;
