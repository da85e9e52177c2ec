import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { getStepOutput } from '../../queries/step-output.query';
import { requireId } from '../../queries/query-args';
import { CliError, EXIT } from '../exit-codes';
import { parseArgs, printJson, withReadSource } from './read-command';

/** `steps output`: a step's stored output, for a task running on another machine (seed 003). */
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
    .action(async (planId: string, step: string, opts: { json?: boolean }) => stepOutputCommand(context(), planId, step, opts));
  return steps;
}

export async function stepOutputCommand(ctx: CliContext, rawPlan: string, rawStep: string, opts: { json?: boolean }): Promise<void> {
  const { planId, stepRef } = parseArgs(() => ({ planId: requireId('planId', rawPlan), stepRef: requireId('step', rawStep) }));
  const output = await withReadSource(ctx, 'steps output', (ds) => getStepOutput(ds, planId, stepRef));
  if (opts.json) printJson(ctx, output);
  if (output.outputContent === null) {
    throw new CliError(`step "${output.stepId}" (#${output.index}) of plan "${planId}" has no stored output (status ${output.status})`, EXIT.failed);
  }
  // byte for byte into a file or a pipe (write adds no newline); on a terminal, control characters
  // are escaped like every other output
  if (!opts.json) {
    if (process.stdout.isTTY) ctx.out(output.outputContent.replace(/\n$/, ''));
    else ctx.write(output.outputContent);
  }
}
