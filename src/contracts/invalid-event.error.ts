import { PlanLedgerError } from '../shared/errors';

/** One reason an event is invalid. */
export interface Violation {
  /** Where: `payload.steps[2].agentId`; `''` is the event as a whole. */
  path: string;
  /** The full sentence, path included: `payload.steps[2].agentId must be a string`. Never echoes values. */
  message: string;
}

/**
 * An event that can never become valid, however often it is retried. `permanent` lets the worker
 * route it to the dead-letter queue without importing this class (it wraps it in BullMQ's
 * `UnrecoverableError`; this module must not depend on BullMQ).
 */
export class InvalidEventError extends PlanLedgerError {
  override readonly name = 'InvalidEventError';
  readonly kind = 'permanent';
  readonly permanent = true;
  readonly violations: Violation[];

  constructor(violations: Violation[]) {
    // One line listing every violation: a dead letter's reason must be readable without the payload.
    super(`invalid plan event: ${violations.map((v) => v.message).join('; ')}`);
    this.violations = violations;
  }
}
