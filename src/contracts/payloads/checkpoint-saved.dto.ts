import { ExternalId, IntInRange, PlainObject, Required } from '../field.decorators';
import type { CheckpointSavedPayload } from '../types';

/**
 * `state` is opaque to the contract. The raw-input guard has already checked that it is plain JSON,
 * free of prototype keys, NUL characters and lone surrogates and no deeper than `maxStateDepth`;
 * here it only has to be an object.
 */
export class CheckpointSavedPayloadDto implements CheckpointSavedPayload {
  @Required() @ExternalId() checkpointId!: string;
  @Required() @IntInRange(0, 100_000) layer!: number;
  @Required() @PlainObject() state!: Record<string, unknown>;
}
