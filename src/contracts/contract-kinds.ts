/**
 * The vocabulary the contract is declared in (declaration.ts): the kinds a field can have, and how
 * fields, shapes, payloads and cross-field rules are written down. Data only. What a kind means is
 * said once per derivation: field.decorators.ts (class-validator, the validator of record),
 * fast-check/field-rules.ts (the hot path), and scripts/contract/ (JSON Schema, the TypeScript
 * types, the Python client's table).
 */
import { pushAll } from '../shared/arrays';

/** The limits (limits.ts, `ContractLimits`) that bound one field: text length or list length. */
export type FieldLimit = 'maxLongText' | 'maxSteps' | 'maxDependsOn';

export type Kind =
  /** A string of `min` to `max` UTF-16 code units (what SQL Server's NVARCHAR(n) counts). */
  | { readonly kind: 'text'; readonly min: number; readonly max: number }
  /** Free text (an NVARCHAR(MAX) / text column) bounded by the `maxLongText` limit. */
  | { readonly kind: 'longText'; readonly nonEmpty: boolean; readonly limit: FieldLimit }
  /** An executor's own identifier (field-formats.ts). */
  | { readonly kind: 'externalId' }
  | { readonly kind: 'uuid' }
  /** A UTC ISO-8601 timestamp within the range every database stores (field-formats.ts). */
  | { readonly kind: 'utcTimestamp' }
  | { readonly kind: 'int'; readonly min: number; readonly max: number }
  /** An exact amount as a decimal string: JSON numbers are binary floats. */
  | { readonly kind: 'decimalAmount' }
  | { readonly kind: 'bool' }
  /** One of `values`; `typeName` names the TypeScript union when it has a name of its own. */
  | { readonly kind: 'oneOf'; readonly values: readonly string[]; readonly typeName?: string }
  /** A single allowed value; `why` completes the sentence for the sender. */
  | { readonly kind: 'exactly'; readonly value: number; readonly why: string }
  /** The envelope's event type: one of the contract's types, and it picks the payload. */
  | { readonly kind: 'eventType'; readonly values: readonly string[] }
  /** The envelope's payload: the payload declared for the event's type. */
  | { readonly kind: 'payload' }
  | { readonly kind: 'nested'; readonly shape: Shape }
  /** A list of objects of one shape, at most `limit` of them. */
  | { readonly kind: 'list'; readonly shape: Shape; readonly limit: FieldLimit }
  /** A list of distinct external ids, at most `limit` of them. */
  | { readonly kind: 'externalIds'; readonly limit: FieldLimit }
  /**
   * An object opaque to the contract (checkpoint state): any JSON, within the raw-input guard's
   * rules and the `maxStateDepth` limit.
   */
  | { readonly kind: 'jsonState' };

export interface Field {
  readonly kind: Kind;
  readonly required: boolean;
  /** Published: the JSON Schema's `description`, and the TypeScript doc comment. */
  readonly description?: string;
  /** The TypeScript doc comment only. */
  readonly doc?: string;
  /** A stamp: the publisher fills it in when its caller leaves it out. */
  readonly stamp?: boolean;
}

export type Fields = Readonly<Record<string, Field>>;

/** The fields of a list's items that make the list a DAG (see step-graph.check.ts). */
export interface GraphFields {
  /** Unique within the list; what `edges` name. */
  readonly id: string;
  /** Unique within the list. */
  readonly position: string;
  /** The ids of the same list an item depends on. */
  readonly edges: string;
}

export interface Shape {
  /** The TypeScript interface's name. */
  readonly name: string;
  readonly doc?: string;
  readonly fields: Fields;
  /** Shared fields that follow the shape's own (an `extends` in TypeScript). */
  readonly groups?: readonly Shape[];
  /** Written once under `$defs` of a JSON Schema, and referenced, rather than inline. */
  readonly schemaDef?: string;
  /** A list of this shape is a step graph. */
  readonly graph?: GraphFields;
}

export type CrossFieldRule =
  /** The list `field` forms a DAG; its items may also depend on ids outside it when `outsideWhen` is set. */
  | { readonly rule: 'stepGraph'; readonly field: string; readonly outsideWhen?: string }
  /**
   * `field` is required (with at least `minItems` `noun`s) when `when` is `is`, and absent when
   * `when` holds any other of its values; when required, a list of a graph shape is a DAG.
   */
  | {
      readonly rule: 'onlyWhen';
      readonly field: string;
      readonly when: string;
      readonly is: string;
      readonly minItems: number;
      readonly noun: string;
    };

export interface PayloadShape extends Shape {
  readonly rules?: readonly CrossFieldRule[];
}

// ----------------------------------------------------------------------------- writing them down

export const required = (kind: Kind, more: Omit<Field, 'kind' | 'required'> = {}): Field => ({
  kind,
  required: true,
  ...more,
});
export const optional = (kind: Kind, more: Omit<Field, 'kind' | 'required'> = {}): Field => ({
  kind,
  required: false,
  ...more,
});

export const text = (min: number, max: number): Kind => ({ kind: 'text', min, max });
export const longText = (options: { nonEmpty?: boolean } = {}): Kind => ({
  kind: 'longText',
  nonEmpty: options.nonEmpty === true,
  limit: 'maxLongText',
});
export const externalId: Kind = { kind: 'externalId' };
export const uuid: Kind = { kind: 'uuid' };
export const utcTimestamp: Kind = { kind: 'utcTimestamp' };
export const int = (min: number, max: number): Kind => ({ kind: 'int', min, max });
export const decimalAmount: Kind = { kind: 'decimalAmount' };
export const bool: Kind = { kind: 'bool' };
export const oneOf = (values: readonly string[], typeName?: string): Kind => ({ kind: 'oneOf', values, typeName });
export const exactly = (value: number, why: string): Kind => ({ kind: 'exactly', value, why });
export const eventType = (values: readonly string[]): Kind => ({ kind: 'eventType', values });
export const payload: Kind = { kind: 'payload' };
export const nested = (shape: Shape): Kind => ({ kind: 'nested', shape });
export const list = (shape: Shape, limit: FieldLimit): Kind => ({ kind: 'list', shape, limit });
export const externalIds = (limit: FieldLimit): Kind => ({ kind: 'externalIds', limit });
export const jsonState: Kind = { kind: 'jsonState' };

// ----------------------------------------------------------------------------- reading them

/** The name of the one field of `shape` of `kind` (the envelope's type, payload, eventId, ...). */
export function fieldOfKind(shape: Shape, kind: Kind['kind']): string {
  const names = Object.keys(shape.fields).filter((name) => shape.fields[name].kind.kind === kind);
  if (names.length !== 1) throw new Error(`${shape.name} declares ${names.length} fields of kind ${kind}, not one`);
  return names[0];
}

/** A shape's fields in order: its own, then each group's. */
export function allFields(shape: Shape): [string, Field][] {
  const out = Object.entries(shape.fields);
  for (const group of shape.groups ?? []) pushAll(out, allFields(group));
  return out;
}
