/**
 * The table the Python client interprets (clients/python/plan_ledger/_contract_table.py), as text,
 * derived from the declaration (src/contracts/declaration.ts): limits, string formats, the wording
 * of every message, and each shape's fields with their kinds. `plan_ledger/_contract.py` turns it
 * into the checks `publish()` runs.
 */
import { allFields, CrossFieldRule, Field, Kind, Shape } from '../../src/contracts/contract-kinds';
import { ENVELOPE, PAYLOADS } from '../../src/contracts/declaration';
import { PLAN_EVENT_TYPES, SPEC_VERSION } from '../../src/contracts/event-types';
import {
  DECIMAL_AMOUNT_PATTERN,
  EARLIEST_TIMESTAMP,
  EARLIEST_YEAR,
  EXTERNAL_ID_PATTERN,
  LATEST_TIMESTAMP,
  UTC_TIMESTAMP_PATTERN,
  UUID_PATTERN,
} from '../../src/contracts/field-formats';
import { DEFAULT_LIMITS } from '../../src/contracts/limits';
import { MESSAGES } from '../../src/contracts/messages';
import { FORBIDDEN_KEYS } from '../../src/contracts/storable-text';

type Py = string | number | boolean | null | undefined | readonly Py[];

/** A Python literal: tuples for lists, True/False/None, strings in JSON's escapes (valid Python too). */
function py(value: Py): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  return value.length === 1 ? `(${py(value[0])},)` : `(${value.map(py).join(', ')})`;
}

/** A JavaScript pattern `^...$` without its anchors: Python matches it with `re.fullmatch`. */
function unanchored(pattern: RegExp): string {
  const source = pattern.source;
  if (!source.startsWith('^') || !source.endsWith('$') || pattern.flags !== '')
    throw new Error(`not a plain anchored pattern: ${pattern}`);
  return source.slice(1, -1);
}

function kindRow(kind: Kind): Py[] {
  switch (kind.kind) {
    case 'text':
    case 'int':
      return [kind.kind, kind.min, kind.max];
    case 'longText':
      return [kind.kind, kind.nonEmpty, kind.limit];
    case 'oneOf':
    case 'eventType':
      return [kind.kind, kind.values];
    case 'exactly':
      return [kind.kind, kind.value, kind.why];
    case 'nested':
      return [kind.kind, kind.shape.name];
    case 'list':
      return [kind.kind, kind.shape.name, kind.limit];
    case 'externalIds':
      return [kind.kind, kind.limit];
    default:
      return [kind.kind];
  }
}

const fieldRow = ([name, f]: [string, Field]): string =>
  `    ${py([name, f.required, f.stamp === true, ...kindRow(f.kind)])},`;
const fieldRows = (shape: Shape): string[] => ['(', ...allFields(shape).map(fieldRow), ')'];

function ruleRow(rule: CrossFieldRule): Py[] {
  return rule.rule === 'stepGraph'
    ? [rule.rule, rule.field, rule.outsideWhen]
    : [rule.rule, rule.field, rule.when, rule.is, rule.minItems, rule.noun];
}

/** Every shape nested in the payloads, by name. */
function nestedShapes(): Shape[] {
  const found = new Map<string, Shape>();
  const visit = (shape: Shape) => {
    for (const [, f] of allFields(shape)) {
      if ((f.kind.kind === 'nested' || f.kind.kind === 'list') && !found.has(f.kind.shape.name)) {
        found.set(f.kind.shape.name, f.kind.shape);
        visit(f.kind.shape);
      }
    }
  };
  for (const type of PLAN_EVENT_TYPES) visit(PAYLOADS[type]);
  return [...found.values()];
}

export function pythonTable(header: string): string {
  const block = (name: string, rows: string[]) => [`${name} = ${rows[0]}`, ...rows.slice(1), ''];
  const dict = (entries: [string, string[]][]) => [
    '{',
    ...entries.flatMap(([key, rows]) => [
      `    ${py(key)}: ${rows[0]}`,
      ...rows.slice(1, -1).map((r) => `    ${r}`),
      `    ${rows[rows.length - 1]},`,
    ]),
    '}',
  ];
  return [
    header,
    '"""The event contract as data: what ``_contract.py`` interprets into the checks of ``publish()``.',
    '',
    'A field is ``(name, required, stamp, kind, *arguments)``; a rule across fields is',
    '``("stepGraph", field, outside_when)`` or ``("onlyWhen", field, when, is, min_items, noun)``.',
    'Patterns are matched whole (``re.fullmatch``, ASCII); messages fill ``{name}`` with values.',
    '"""',
    '',
    `SPEC_VERSION = ${py(SPEC_VERSION)}`,
    '',
    'LIMITS = {',
    ...Object.entries(DEFAULT_LIMITS).map(([k, v]) => `    ${py(k)}: ${py(v)},`),
    '}',
    '',
    'PATTERNS = {',
    `    "externalId": ${py(unanchored(EXTERNAL_ID_PATTERN))},`,
    `    "uuid": ${py(unanchored(UUID_PATTERN))},`,
    `    "utcTimestamp": ${py(unanchored(UTC_TIMESTAMP_PATTERN))},`,
    `    "decimalAmount": ${py(unanchored(DECIMAL_AMOUNT_PATTERN))},`,
    '}',
    '',
    `EARLIEST_YEAR = ${py(EARLIEST_YEAR)}`,
    `EARLIEST_TIMESTAMP = ${py(EARLIEST_TIMESTAMP)}`,
    `LATEST_TIMESTAMP = ${py(LATEST_TIMESTAMP)}`,
    '',
    '# keys refused anywhere in an event, checkpoint state included',
    `FORBIDDEN_KEYS = frozenset(${py([...FORBIDDEN_KEYS].sort())})`,
    '',
    'MESSAGES = {',
    ...Object.entries(MESSAGES).map(([k, v]) => `    ${py(k)}: ${py(v)},`),
    '}',
    '',
    ...block('ENVELOPE', fieldRows(ENVELOPE)),
    ...block('SHAPES', dict(nestedShapes().map((s) => [s.name, fieldRows(s)]))),
    ...block('PAYLOADS', dict(PLAN_EVENT_TYPES.map((t) => [t, fieldRows(PAYLOADS[t])]))),
    'RULES = {',
    ...PLAN_EVENT_TYPES.filter((t) => PAYLOADS[t].rules !== undefined).map(
      (t) => `    ${py(t)}: ${py(PAYLOADS[t].rules!.map(ruleRow))},`,
    ),
    '}',
    '',
  ].join('\n');
}
