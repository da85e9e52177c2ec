import type { DataSource } from 'typeorm';
import { ENTITY, PlanEventRow, PlanStepRow } from '../store/entities';

/**
 * A step's output, read from where it is stored: the payload of the event its row names (the log
 * keeps every output once), or the row's own `output_content` (a row stored before that, whose
 * output the migration found no event for). Null when the step stored none.
 */
export async function outputOf(
  ds: DataSource,
  row: Partial<Pick<PlanStepRow, 'outputEventId' | 'outputContent'>>,
): Promise<string | null> {
  if (!row.outputEventId) return row.outputContent ?? null;
  const event = await ds.getRepository<PlanEventRow>(ENTITY.event).findOne({
    where: { eventId: row.outputEventId },
    select: { eventId: true, payload: true },
    // the step row decides what is visible; its event goes with it
    withDeleted: true,
  });
  if (!event) return null;
  const output = (JSON.parse(event.payload) as { outputContent?: unknown }).outputContent;
  return typeof output === 'string' ? output : null;
}
