import { loadConfig, AppConfig } from '../config/config';
import { createLogger, Logger } from '../shared/logger';
import { escapeControl } from '../shared/terminal-text';

/** What every command receives: validated config, a logger, and where to print. */
export interface CliContext {
  config: Readonly<AppConfig>;
  /** The environment config was read from; commands with settings of their own read it here. */
  env: Record<string, string | undefined>;
  logger: Logger;
  /** Prints one human-readable line, control characters escaped (escapeControl): data never drives the terminal. */
  out: (line: string) => void;
  /** Text to stdout exactly as given, nothing added (`steps output`: content byte for byte). */
  write: (text: string) => void;
  /** Prints a line as is: `--json` output (JSON.stringify already escapes C0 controls). */
  raw: (line: string) => void;
  /** stderr, escaped like `out`. */
  err: (line: string) => void;
}

export interface CliIo {
  env: Record<string, string | undefined>;
  /** One line of output; the sink ends it. */
  out: (line: string) => void;
  /**
   * Output with nothing added. Optional for line-collecting callers (tests, embedding code): they
   * get the text as one `out` call, which is exact when it is the command's only output.
   */
  write?: (text: string) => void;
  err: (line: string) => void;
}

/** `--json` output: the value as indented JSON, on stdout as is. */
export function printJson(ctx: CliContext, value: unknown): void {
  ctx.raw(JSON.stringify(value, null, 2));
}

export function buildContext(io: CliIo): CliContext {
  // a ConfigError ends the command with its one line, by its kind (exit-codes.ts)
  const config: Readonly<AppConfig> = loadConfig(io.env);
  // CLI logs go to stderr so `--json` output on stdout stays parseable.
  const logger = createLogger({
    level: config.logLevel === 'info' ? 'warn' : config.logLevel,
    destination: process.stderr as never,
  });
  return {
    config,
    env: io.env,
    logger,
    out: (line) => io.out(escapeControl(line)),
    raw: io.out,
    write: io.write ?? io.out,
    err: (line) => io.err(escapeControl(line)),
  };
}
