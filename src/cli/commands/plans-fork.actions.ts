import { readFileSync } from 'node:fs';
import { type CliContext, printJson } from '../cli-context';
import type { StepSpec } from '../../contracts';
import { isExternalId } from '../../contracts/field-formats';
import { forkPlan, type ForkOutcome, type ForkStart } from '../../fork/fork-plan';
import { parseEditSteps } from '../../fork/edit-steps';
import { QueryArgumentError } from '../../queries/query-errors';
import { requireId } from '../../queries/query-args';
import { escapeControl } from '../../shared/terminal-text';

import { withDataSource } from '../with-data-source';

export interface ForkCliOptions {
  fromLayer?: string;
  fromCheckpoint?: string;
  fromFailure?: boolean;
  planId?: string;
  session?: string;
  editSteps?: string;
  json?: boolean;
}

export async function forkCommand(
  ctx: CliContext,
  rawId: string,
  kind: 'fork' | 'replay',
  opts: ForkCliOptions,
): Promise<void> {
  const request = {
    parentPlanId: requireId('planId', rawId),
    kind,
    from: kind === 'fork' ? startOf(opts) : undefined,
    planId: opts.planId === undefined ? undefined : externalId('--plan-id', 'a plan id', opts.planId),
    sessionId: opts.session === undefined ? undefined : externalId('--session', 'a session id', opts.session),
    editSteps: opts.editSteps === undefined ? undefined : readEdits(opts.editSteps),
  };
  const outcome = await withDataSource(ctx, (ds) => forkPlan(ds, request));
  if (opts.json) return printJson(ctx, outcome);
  for (const line of formatForkOutcome(outcome)) ctx.out(line);
}

/** An id the contract takes (the new plan's, its session's). */
function externalId(option: string, what: string, raw: string): string {
  const value = raw.trim();
  if (!isExternalId(value))
    throw new QueryArgumentError(option, `"${raw}" is not ${what} (1-64 letters, digits, _ . : -)`);
  return value;
}

function startOf(opts: ForkCliOptions): ForkStart {
  const given = [opts.fromLayer !== undefined, opts.fromCheckpoint !== undefined, opts.fromFailure === true];
  if (given.filter(Boolean).length !== 1)
    throw new QueryArgumentError(
      'fork',
      'give exactly one of --from-layer N, --from-checkpoint ID, --from-failure (or use plans replay)',
    );
  if (opts.fromLayer !== undefined) {
    if (!/^\d{1,6}$/.test(opts.fromLayer.trim()))
      throw new QueryArgumentError('--from-layer', `"${opts.fromLayer}" is not a layer number (0 or more)`);
    return { layer: Number(opts.fromLayer) };
  }
  if (opts.fromCheckpoint !== undefined) return { checkpointId: requireId('--from-checkpoint', opts.fromCheckpoint) };
  return { failure: true };
}

function readEdits(file: string): StepSpec[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new QueryArgumentError(
      '--edit-steps',
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  return parseEditSteps(text, file);
}

export function formatForkOutcome(o: ForkOutcome): string[] {
  const what =
    o.kind === 'replay'
      ? 'replay'
      : `fork from layer ${o.layer}${o.checkpointId ? ` (after checkpoint ${escapeControl(o.checkpointId)})` : ''}`;
  const lines = [
    `created plan ${escapeControl(o.planId)} in session ${escapeControl(o.sessionId)}: ${what} of ${escapeControl(o.parentPlanId)}`,
    `  ${o.steps} steps: ${o.inheritedSteps} inherited, ${o.steps - o.inheritedSteps} to run` +
      (o.changedSteps.length > 0 ? `; changed: ${o.changedSteps.map(escapeControl).join(', ')}` : '') +
      (o.addedSteps.length > 0 ? `; added: ${o.addedSteps.map(escapeControl).join(', ')}` : ''),
    `  resume at layer ${o.nextLayer}: ${o.nextSteps.map(escapeControl).join(', ')}; publish from seq ${o.nextSeq}`,
    `  (plan-ledger workflows resume-point ${escapeControl(o.planId)} gives the whole resume point)`,
  ];
  return lines;
}
