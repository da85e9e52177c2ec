import { ExternalId, IntInRange, OneOf, Optional, Required } from '../field.decorators';
import { FORK_KINDS } from '../event-types';
import type { ForkOrigin } from '../types';

/** Where a forked or replayed plan came from: `plan.created`'s `forkOf`. */
export class ForkOriginDto implements ForkOrigin {
  @Required() @ExternalId() planId!: string;
  @Required() @OneOf(FORK_KINDS) kind!: ForkOrigin['kind'];
  /** The first layer the new plan runs itself; the parent's steps of earlier layers are inherited. */
  @Required() @IntInRange(0, 100_000) layer!: number;
  @Optional() @ExternalId() checkpointId?: string;
}
