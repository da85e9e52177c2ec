/**
 * Everything the contract says about a broken event, as predicates without a subject: the path of
 * the field is put in front (`payload.steps[2].agentId must be a string`). The one place the wording
 * lives: the validator of record (field.decorators.ts), the fast rules (fast-check/), the raw-input
 * guard and the Python client (its generated table carries these templates) all say it from here.
 *
 * `{name}` marks a value filled in by `say`. None is ever the event's own value: violations end up
 * in logs and dead letters and must not echo payloads.
 */
export const MESSAGES = Object.freeze({
  required: 'is required',
  unknownField: 'is not an allowed field',
  mustBeString: 'must be a string',
  mustBeObject: 'must be an object',
  mustBeArray: 'must be an array',
  mustBeInteger: 'must be an integer',
  mustBeBoolean: 'must be a boolean',
  textLength: 'must be {min} to {max} characters long',
  textMax: 'must be at most {max} characters long',
  notEmpty: 'must not be empty',
  externalId: "must be an external id (1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit)",
  uuid: 'must be a UUID',
  timestampFormat: 'must be an ISO-8601 timestamp in UTC, e.g. 2024-05-01T12:00:00.000Z',
  timestampRange: 'must be between {earliest} and {latest}, the range every supported database stores alike',
  atLeast: 'must be at least {min}',
  atMost: 'must be at most {max}',
  decimalAmount: 'must be a decimal string of at most 12 digits before and 12 after the point, e.g. "0.0123"',
  oneOf: 'must be one of: {values}',
  exactly: 'must be {value}{why}',
  listMax: 'must contain at most {max} items',
  onlyExternalIds: 'must contain only external ids',
  noDuplicates: 'must not contain duplicates',
  requiredWhen: 'is required when {when} is {is}',
  minItemsWhen: 'must contain at least {min} {noun} when {when} is {is}',
  absentUnless: 'must be absent unless {when} is {is}',
  uniqueInList: 'must be unique within the step list (steps[{first}] has the same {field})',
  unknownStep: 'must name a step of the same list',
  cycle: 'forms a cycle: {hops}',
  containsNul: 'must not contain the NUL character (U+0000): PostgreSQL cannot store it',
  keyContainsNul: 'is a forbidden key (it contains the NUL character, U+0000, which PostgreSQL cannot store)',
  containsLoneSurrogate:
    'must not contain a lone UTF-16 surrogate (U+D800-U+DFFF without its pair): databases store it differently',
  keyContainsLoneSurrogate:
    'is a forbidden key (it contains a lone UTF-16 surrogate, U+D800-U+DFFF without its pair, which databases store differently)',
  forbiddenKey: 'is a forbidden key (it names a built-in object property)',
  tooDeep: 'must not be nested more than {max} levels deep',
  eventBytes: 'must be at most {max} bytes of UTF-8 JSON',
  mustBeFinite: 'must be a finite number',
  mustBeJsonValue: 'must be a JSON value',
  mustBePlainObjectOrArray: 'must be a plain object or array',
  mustBeJsonObject: 'must be a JSON object',
  notJsonText: 'must be a JSON object; got a string that is not JSON text',
  moreViolations: 'has {count} more violations (not listed)',
});

export type MessageName = keyof typeof MESSAGES;

/** The predicate `name` with its `{placeholders}` filled in. */
export function say(name: MessageName, values: Readonly<Record<string, string | number>> = {}): string {
  return MESSAGES[name].replace(/\{(\w+)\}/g, (_match, key: string) => String(values[key]));
}
