import 'reflect-metadata';
import { workerVersion } from '../worker/worker-version';
import { Command, CommanderError } from 'commander';
import { ENV_HELP } from '../config/config';
import type { CliContext, CliIo } from './cli-context';
import { EXIT, EXIT_HELP, exitCodeOf } from './exit-codes';
import { lazyRequire } from '../shared/lazy-require';
import { errorKindOf } from '../shared/errors';
import { registerMigrate } from './commands/migrate.command';
import { registerDemo } from './commands/demo.command';
import { registerWorker } from './commands/worker.command';
import { registerDlq } from './commands/dlq.command';
import { registerPlans } from './commands/plans.command';
import { registerSessions } from './commands/sessions.command';
import { registerWorkflows } from './commands/workflows.command';
import { registerSteps } from './commands/steps.command';
import { registerAnalytics } from './commands/analytics.command';
import { registerRetention } from './commands/retention.command';
import { registerPlansFork } from './commands/plans-fork.command';
import { registerPlansRestore } from './commands/plans-restore.command';
import { registerServe } from './commands/serve.command';
import { registerPrices } from './commands/prices.command';
import { registerCost } from './commands/cost.command';
import { registerWebhooks } from './commands/webhooks.command';
import { registerApprovals } from './commands/approvals.command';
import { redactUrl } from '../config/database-url';
import { escapeControl } from '../shared/terminal-text';

const ENV_TEXT = `\nEnvironment:\n${ENV_HELP.map(([name, help]) => `  ${name.padEnd(21)}${help}`).join('\n')}\n${EXIT_HELP}`;

const cliContext = lazyRequire<typeof import('./cli-context')>(require, './cli-context');

/**
 * Builds the command tree. Commands are thin: each calls a library function with a context.
 * Building it must stay cheap (`--help` builds it and nothing else): a `*.command.ts` file registers
 * names, options and help text with cheap imports only, and loads its `*.actions.ts` implementation
 * (TypeORM, BullMQ, Fastify...) when the command runs; the context (config, logger) is built then
 * too. test/cli/cli-startup.cli.test.ts checks that `--help` loads neither TypeORM nor BullMQ.
 */
export function buildProgram(io: CliIo): Command {
  let ctx: CliContext | undefined;
  const context = () => (ctx ??= cliContext().buildContext(io));
  const program = new Command('plan-ledger')
    .description('Queue-driven persistence for AI-agent plans: migrate, run workers, inspect and replay.')
    .version(workerVersion(), '-V, --version', 'print the version')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, '')), writeErr: (s) => io.err(s.replace(/\n$/, '')) })
    .addHelpText('after', ENV_TEXT)
    .exitOverride();
  registerDemo(program, context);
  registerMigrate(program, context);
  registerWorker(program, context);
  registerDlq(program, context);
  const plans = registerPlans(program, context);
  registerPlansRestore(plans, context);
  registerPlansFork(plans, context);
  registerSessions(program, context);
  registerPrices(program, context);
  registerCost(program, context);
  registerWorkflows(program, context);
  registerSteps(program, context);
  registerAnalytics(program, context);
  registerRetention(program, context);
  registerWebhooks(program, context);
  registerApprovals(program, context);
  registerServe(program, context);
  for (const cmd of program.commands) cmd.exitOverride().addHelpText('after', EXIT_HELP);
  return program;
}

/** Entry point: parse, run, print one line on failure, set the exit code. Never prints a stack. */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0)
        return EXIT.ok;
      return EXIT.usage; // commander already printed the message
    }
    if (errorKindOf(err) !== undefined) {
      // one of plan-ledger's own errors: its one line, and the exit code its kind ends with
      io.err(`plan-ledger: ${escapeControl(redactUrl((err as Error).message))}`);
      return exitCodeOf(err);
    }
    io.err(`plan-ledger: ${escapeControl(redactUrl((err as Error)?.message ?? String(err)))}`);
    if (process.env.PLAN_LEDGER_DEBUG === '1') io.err(String((err as Error)?.stack));
    return EXIT.failed;
  }
}

export function main(argv: string[] = process.argv): void {
  // `plan-ledger ... | head` closes stdout early: that is not an error worth a stack trace
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
  const io: CliIo = {
    env: process.env,
    out: (line) => process.stdout.write(`${line}\n`),
    write: (text) => process.stdout.write(text),
    err: (line) => process.stderr.write(`${line}\n`),
  };
  run(argv, io).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`plan-ledger: ${String(err)}\n`);
      process.exitCode = EXIT.failed;
    },
  );
}
