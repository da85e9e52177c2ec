import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import type { ForkCliOptions } from './plans-fork.actions';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./plans-fork.actions')>(require, './plans-fork.actions');

const HOW_IT_WORKS = `
A fork is a new plan whose steps are its parent's: those of layers before the fork layer are
inherited (their outputs, tokens and status read through the fork, not copied), the others are
pending, for an executor to run from the fork's resume point exactly as after a restart
(workflows resume-point <newPlanId>; publish from seq 1). --edit-steps FILE changes or adds steps: a JSON
array of steps, or a template from \`plans export\` (steps equal to the parent's are not changes).`;

/** Adds `fork` and `replay` to the `plans` command group. */
export function registerPlansFork(plans: Command, context: () => CliContext): void {
  plans
    .command('fork')
    .description('a new plan from a stored one, from a layer: earlier layers inherited, later ones to run again')
    .argument('<planId>', 'the plan to fork')
    .option('--from-layer <n>', 'the first layer the fork runs (0: run everything again)')
    .option('--from-checkpoint <id>', "start after one of the parent's checkpoints (the layer it closes is inherited)")
    .option('--from-failure', "start at the parent's first layer with a failed step")
    .option('--plan-id <id>', "the new plan's id (default: the parent's id and .fork-<8 hex>)")
    .option('--session <id>', "the new plan's session (default: the parent's)")
    .option('--edit-steps <file>', 'steps to change or add (JSON array, or a `plans export` template)')
    .option('--json', 'print the new plan, its resume point and nextSeq as JSON')
    .addHelpText(
      'after',
      `${HOW_IT_WORKS}\n\nExamples:\n  plan-ledger plans fork plan-42 --from-failure --edit-steps fixed.json\n  plan-ledger plans fork plan-42 --from-layer 2 --plan-id plan-42-try2 --json`,
    )
    .action(async (planId: string, opts: ForkCliOptions) => actions().forkCommand(context(), planId, 'fork', opts));

  plans
    .command('replay')
    .description('run a stored plan again: a new pending plan with the same steps, its lineage recorded')
    .argument('<planId>', 'the plan to replay')
    .option('--plan-id <id>', "the new plan's id (default: the parent's id and .replay-<8 hex>)")
    .option('--session <id>', "the new plan's session (default: the parent's)")
    .option('--edit-steps <file>', 'steps to change or add (JSON array, or a `plans export` template)')
    .option('--json', 'print the new plan, its resume point and nextSeq as JSON')
    .addHelpText('after', `${HOW_IT_WORKS}\n\nExample:\n  plan-ledger plans replay plan-42 --session chat-7`)
    .action(async (planId: string, opts: ForkCliOptions) => actions().forkCommand(context(), planId, 'replay', opts));
}
