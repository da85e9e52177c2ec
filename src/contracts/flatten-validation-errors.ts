/**
 * class-validator reports a tree: one ValidationError per property, nested DTOs as `children`, list
 * items as children whose `property` is the index ("2"). This turns it into a flat list of
 * violations with `payload.steps[2].agentId` paths.
 */
import type { ValidationError } from 'class-validator';
import type { Violation } from './invalid-event.error';
import { MESSAGES } from './messages';
import { childPath, violationAt } from './violation-path';

/** class-validator's constraint name for a field no DTO declares (`forbidNonWhitelisted`). */
const UNKNOWN_FIELD = 'whitelistValidation';
const INDEX = /^(0|[1-9][0-9]*)$/;

export function flattenValidationErrors(
  errors: readonly ValidationError[],
  parentPath = '',
  out: Violation[] = [],
): Violation[] {
  for (const error of errors) {
    const constraints = error.constraints ?? {};
    const unknownField = UNKNOWN_FIELD in constraints;
    // Only list items get numeric properties: DTO fields never do, and an unknown field named "2"
    // comes with the whitelist constraint, so it is shown as a key, not an index.
    const key = !unknownField && INDEX.test(error.property) ? Number(error.property) : error.property;
    const path = childPath(parentPath, key);
    for (const [name, message] of Object.entries(constraints)) {
      out.push(violationAt(path, name === UNKNOWN_FIELD ? MESSAGES.unknownField : message));
    }
    if (error.children && error.children.length > 0) flattenValidationErrors(error.children, path, out);
  }
  return out;
}
