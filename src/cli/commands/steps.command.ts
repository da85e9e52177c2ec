import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./steps.actions')>(require, './steps.actions');

/** `steps output`: a step's stored output, for a task running on another machine. */
export function registerSteps(program: Command, context: () => CliContext): Command {
  const steps = program.command('steps').description('read what a step stored');
  steps
    .command('output')
    .description("print a step's stored output content byte for byte as stored (pipe it to a file)")
    .argument('<planId>', 'the plan id')
    .argument('<step>', 'the stepId, or the step index (a matching stepId wins)')
    .option('--json', 'print { planId, stepId, index, agentId, status, model, completedAt, outputContent } as JSON')
    .addHelpText(
      'after',
      '\nThe content is written as stored, in UTF-8: no newline is added at the end, none is removed, and\n' +
        '\\r and \\r\\n line endings are kept, so the file below equals what the step stored.\n' +
        'Exits 1 when the step stored no output (for example, it has not completed).\nExample:\n  plan-ledger steps output plan-42 0 > plan.md',
    )
    .action(async (planId: string, step: string, opts: { json?: boolean }) =>
      actions().stepOutputCommand(context(), planId, step, opts),
    );
  return steps;
}
