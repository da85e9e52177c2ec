/**
 * The TypeScript types of the contract (src/contracts/types.ts), as text, derived from the
 * declaration (src/contracts/declaration.ts): one interface per declared shape, the envelope as a
 * generic over the event type, and the unions publishers and readers use.
 */
import { allFields, Field, Kind, Shape } from '../../src/contracts/contract-kinds';
import { ENVELOPE, PAYLOADS } from '../../src/contracts/declaration';
import { PLAN_EVENT_TYPES } from '../../src/contracts/event-types';

function docComment(lines: readonly string[], indent: string): string[] {
  const text = lines.flatMap((l) => l.split('\n'));
  if (text.length === 0) return [];
  if (text.length === 1 && text[0].length + indent.length < 110) return [`${indent}/** ${text[0]} */`];
  return [`${indent}/**`, ...text.map((l) => `${indent} * ${l}`), `${indent} */`];
}

const fieldDoc = (f: Field): string[] => [f.description, f.doc].filter((d): d is string => d !== undefined);

class TypesText {
  private readonly out: string[] = [];
  private readonly written = new Set<string>();

  typeOf(kind: Kind): string {
    switch (kind.kind) {
      case 'text':
      case 'longText':
      case 'externalId':
      case 'uuid':
      case 'utcTimestamp':
      case 'decimalAmount':
        return 'string';
      case 'int':
        return 'number';
      case 'bool':
        return 'boolean';
      case 'oneOf': {
        const union = kind.values.map((v) => `'${v}'`).join(' | ');
        if (kind.typeName === undefined) return union;
        this.once(kind.typeName, () => [`export type ${kind.typeName} = ${union};`]);
        return kind.typeName;
      }
      case 'exactly':
        return String(kind.value);
      case 'eventType':
        return 'T';
      case 'payload':
        return 'PayloadByType[T]';
      case 'nested':
        this.shape(kind.shape);
        return kind.shape.name;
      case 'list':
        this.shape(kind.shape);
        return `${kind.shape.name}[]`;
      case 'externalIds':
        return 'string[]';
      case 'jsonState':
        return 'Record<string, unknown>';
    }
  }

  shape(shape: Shape, generic = ''): void {
    this.once(shape.name, () => {
      const groups = shape.groups ?? [];
      for (const group of groups) this.shape(group);
      const body = Object.entries(shape.fields).flatMap(([name, f]) => [
        ...docComment(fieldDoc(f), '  '),
        `  ${name}${f.required ? '' : '?'}: ${this.typeOf(f.kind)};`,
      ]);
      const extendsClause = groups.length > 0 ? ` extends ${groups.map((g) => g.name).join(', ')}` : '';
      return [
        ...docComment(shape.doc === undefined ? [] : [shape.doc], ''),
        `export interface ${shape.name}${generic}${extendsClause} {`,
        ...body,
        '}',
      ];
    });
  }

  /** Writes a declaration the first time its name is met (the ones it uses before it). */
  private once(name: string, lines: () => string[]): void {
    if (this.written.has(name)) return;
    this.written.add(name);
    const text = lines();
    this.out.push(...text, '');
  }

  text(): string {
    return this.out.join('\n');
  }
}

export function typescriptTypes(header: string): string {
  const types = new TypesText();
  for (const type of PLAN_EVENT_TYPES) types.shape(PAYLOADS[type]);
  const payloadByType = [
    'export interface PayloadByType {',
    ...PLAN_EVENT_TYPES.map((t) => `  '${t}': ${PAYLOADS[t].name};`),
    '}',
    '',
  ];
  types.shape(ENVELOPE, '<T extends PlanEventTypeName = PlanEventTypeName>');
  const stamps = allFields(ENVELOPE)
    .filter(([, f]) => f.stamp === true)
    .map(([name]) => `'${name}'`)
    .join(' | ');
  return [
    header,
    '/**',
    ' * Plain TypeScript shapes of the events `parsePlanEvent` returns and publishers accept, one',
    ' * interface per shape the contract declares.',
    ' */',
    "import type { PlanEventTypeName } from './event-types';",
    '',
    types.text(),
    ...payloadByType,
    '/** Discriminated union on `type`: checking `event.type` narrows `event.payload`. */',
    'export type PlanEvent = { [K in PlanEventTypeName]: PlanEventEnvelope<K> }[PlanEventTypeName];',
    '',
    'export type PlanEventOf<T extends PlanEventTypeName> = PlanEventEnvelope<T>;',
    '',
    `type Stamp = ${stamps};`,
    '',
    '/** What a publisher accepts: the stamps are optional and filled in by the publisher. */',
    'export type PlanEventInput = {',
    '  [K in PlanEventTypeName]: Omit<PlanEventEnvelope<K>, Stamp> & Partial<Pick<PlanEventEnvelope<K>, Stamp>>;',
    '}[PlanEventTypeName];',
    '',
  ].join('\n');
}
