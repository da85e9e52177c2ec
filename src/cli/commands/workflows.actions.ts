import { type CliContext, printJson } from '../cli-context';
import { getResumePoint, Resumable } from '../../queries/workflow-resume.query';
import { loadRetentionPolicy } from '../../retention/retention-config';
import { requireId } from '../../queries/query-args';
import { renderTable } from '../../queries/text-output';
import { pushAll } from '../../shared/arrays';
import { CliError } from '../exit-codes';
import { withReadSource } from './read-command';

export async function resumePointCommand(ctx: CliContext, rawId: string, opts: { json?: boolean }): Promise<void> {
  const workflowId = requireId('planId', rawId);
  const dagTtlMinutes = dagTtlFromEnv(ctx.env);
  const point = await withReadSource(ctx, 'workflows resume-point', (ds) =>
    getResumePoint(ds, workflowId, { dagTtlMinutes }),
  );
  if (opts.json) printJson(ctx, point);
  if (!point.resumable) {
    const expiry = point.expiresAt ? `; its DAG and checkpoints expire at ${point.expiresAt}` : '';
    throw new CliError(`workflow "${workflowId}" cannot be resumed because ${point.reason}${expiry}`);
  }
  if (!opts.json) for (const line of formatResumePoint(point)) ctx.out(line);
}

/** RETENTION_DAG_TTL as retention reads it; a bad value is retention's error to report, not this read's. */
function dagTtlFromEnv(env: Record<string, string | undefined>): number | undefined {
  try {
    return loadRetentionPolicy(env).dagTtlMinutes;
  } catch {
    return undefined;
  }
}

export function formatResumePoint(p: Resumable): string[] {
  const stepCount = p.dag.steps.length;
  const cp = p.latestCheckpoint;
  const lines = [
    `workflow ${p.workflowId} can be resumed (status ${p.status})`,
    `DAG:        ${stepCount} steps in ${p.dag.layers.length} layers${p.expiresAt ? `, expires ${p.expiresAt}` : ''}`,
    `checkpoint: ${cp ? `${cp.checkpointId} closed layer ${cp.layer} at ${cp.at}` : 'none yet: resume from the first layer'}`,
    p.nextLayer === null
      ? 'next:       every layer is checkpointed; only finalization is missing'
      : `next:       layer ${p.nextLayer} (${p.nextSteps.length} steps)`,
    `next seq:   ${p.nextSeq} (publish the plan's next event with it)`,
    '',
    ...renderTable(
      ['LAYER', 'STEPS', 'COMPLETED', 'FAILED', 'SKIPPED', 'UNFINISHED'],
      p.layers.map((l) => [l.layer, l.steps, l.completed, l.failed, l.skipped, l.unfinished]),
    ),
  ];
  if (p.nextSteps.length > 0) {
    lines.push('', `steps of layer ${p.nextLayer}:`);
    pushAll(
      lines,
      renderTable(
        ['#', 'STEP', 'AGENT', 'STATUS', 'DEPENDS ON', 'TITLE'],
        p.nextSteps.map((s) => [s.index, s.stepId, s.agentId, s.status, s.dependsOn.join(' '), s.title ?? s.task]),
      ),
    );
  }
  return lines;
}
