import type { Logger } from '../shared/logger';
import { EXIT } from './exit-codes';

/**
 * The life of a long-running command's process (worker, serve): it runs until SIGTERM or SIGINT,
 * then stops within a deadline. A second signal means "now"; a stop that overruns its deadline
 * (a stuck driver call) is cut short by a watchdog. Both exit with code 1 and one line saying why.
 */

/** Resolves with the first SIGTERM or SIGINT. */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}

export interface StopSupervision {
  /** Where the one-line reasons go (the CLI's stderr). */
  err(line: string): void;
  /** The watchdog exits the process this long after the stop began... */
  watchdogMs: number;
  /** ...saying this. */
  watchdogMessage: string;
  /** A second signal during the stop exits at once, saying this; absent: a second signal is ignored. */
  secondSignalMessage?: string;
}

/** Runs `stop` under the watchdog (and the second-signal exit), removing both once it settles. */
export async function stopWithin<T>(s: StopSupervision, stop: () => Promise<T>): Promise<T> {
  const again = () => {
    s.err(s.secondSignalMessage!);
    process.exit(EXIT.failed);
  };
  if (s.secondSignalMessage) {
    process.once('SIGTERM', again);
    process.once('SIGINT', again);
  }
  const watchdog = setTimeout(() => {
    s.err(s.watchdogMessage);
    process.exit(EXIT.failed);
  }, s.watchdogMs);
  try {
    return await stop();
  } finally {
    clearTimeout(watchdog);
    process.removeListener('SIGTERM', again);
    process.removeListener('SIGINT', again);
  }
}

/**
 * Exit with `code` once the log lines are out. A timer or socket a client library left behind (an
 * ioredis Cluster re-establishing a blocking connection after a slot moved) must not keep a
 * stopped service alive.
 */
export async function exitAfterLogs(logger: Logger, code: number): Promise<never> {
  logger.debug({ stillOpen: process.getActiveResourcesInfo() }, 'exiting');
  await new Promise<void>((resolve) => logger.flush(() => resolve()));
  process.exit(code);
}
