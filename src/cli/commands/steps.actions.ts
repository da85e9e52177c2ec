import { type CliContext, printJson } from '../cli-context';
import { getStepOutput } from '../../queries/step-output.query';
import { requireId } from '../../queries/query-args';
import { CliError } from '../exit-codes';
import { withReadSource } from './read-command';

export async function stepOutputCommand(
  ctx: CliContext,
  rawPlan: string,
  rawStep: string,
  opts: { json?: boolean },
): Promise<void> {
  const { planId, stepRef } = {
    planId: requireId('planId', rawPlan),
    stepRef: requireId('step', rawStep),
  };
  const output = await withReadSource(ctx, 'steps output', (ds) => getStepOutput(ds, planId, stepRef));
  if (opts.json) printJson(ctx, output);
  if (output.outputContent === null) {
    throw new CliError(
      `step "${output.stepId}" (#${output.index}) of plan "${planId}" has no stored output (status ${output.status})`,
    );
  }
  // byte for byte into a file or a pipe (write adds no newline); on a terminal, control characters
  // are escaped like every other output
  if (!opts.json) {
    if (process.stdout.isTTY) ctx.out(output.outputContent.replace(/\n$/, ''));
    else ctx.write(output.outputContent);
  }
}
