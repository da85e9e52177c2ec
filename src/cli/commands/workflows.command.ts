import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./workflows.actions')>(require, './workflows.actions');

/** `workflows resume-point`: where a per-layer workflow continues. Workflow id = plan id. */
export function registerWorkflows(program: Command, context: () => CliContext): Command {
  const workflows = program
    .command('workflows')
    .description('per-layer workflows (a workflow is a plan): where to resume');
  workflows
    .command('resume-point')
    .description("the stored DAG, the latest checkpoint, the last completed layer and the next layer's steps")
    .argument('<planId>', 'the workflow (plan) id')
    .option('--json', 'print the resume point as JSON; { resumable: false, reason } when it cannot be resumed')
    .addHelpText(
      'after',
      '\nExits 1 with "cannot be resumed because ..." when the workflow finished, was cancelled or\ndeleted, is awaiting approval, or has no stored DAG.',
    )
    .action(async (planId: string, opts: { json?: boolean }) => actions().resumePointCommand(context(), planId, opts));
  return workflows;
}
