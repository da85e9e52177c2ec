/**
 * The class-validator DTOs of the validator of record, built once from the declaration
 * (declaration.ts): one event class per type (the envelope's fields plus its payload DTO), and an
 * untyped one for a missing or unknown `type`. The parser picks the class from `type` before
 * transforming, so the payload is validated against the right DTO and its violations carry
 * `payload.` paths, all in a single class-validator pass.
 */
import 'reflect-metadata';
import { allFields, Shape } from './contract-kinds';
import { ENVELOPE, PAYLOADS } from './declaration';
import { isPlanEventType, PLAN_EVENT_TYPES, PlanEventTypeName } from './event-types';
import { decoratorsFor, DtoClass } from './field.decorators';

const DTO_BY_SHAPE = new Map<Shape, DtoClass>();

function named(name: string): DtoClass {
  const dto = class {};
  Object.defineProperty(dto, 'name', { value: name });
  return dto;
}

/** Decorates `dto` with the fields of `shape`, as decorators written on each property would. */
function decorate(dto: DtoClass, shape: Shape, payloadDto?: () => DtoClass): void {
  for (const [name, declared] of allFields(shape)) {
    const decorators = decoratorsFor(declared, (kind) => () => dtoOf(kind.shape), payloadDto);
    // TypeScript applies a property's decorators bottom up
    for (let i = decorators.length - 1; i >= 0; i--) decorators[i](dto.prototype, name);
  }
}

/** The DTO of a nested shape, built on first use. */
function dtoOf(shape: Shape): DtoClass {
  let dto = DTO_BY_SHAPE.get(shape);
  if (dto === undefined) {
    dto = named(`${shape.name}Dto`);
    DTO_BY_SHAPE.set(shape, dto);
    decorate(dto, shape);
  }
  return dto;
}

function eventDto(name: string, payloadDto: (() => DtoClass) | undefined): DtoClass {
  const dto = named(name);
  decorate(dto, ENVELOPE, payloadDto);
  return dto;
}

/** Used when `type` is missing or unknown: the type violation is the story; the payload only has to be an object. */
const UNTYPED_EVENT_DTO = eventDto('UntypedPlanEventDto', undefined);

const EVENT_DTO_BY_TYPE: Readonly<Record<string, DtoClass>> = Object.freeze(
  Object.fromEntries(
    PLAN_EVENT_TYPES.map((type) => {
      const payloadDto = dtoOf(PAYLOADS[type]);
      return [type, eventDto(`${PAYLOADS[type].name}EventDto`, () => payloadDto)];
    }),
  ),
);

export function eventDtoFor(type: unknown): DtoClass {
  return isPlanEventType(type) ? EVENT_DTO_BY_TYPE[type as PlanEventTypeName] : UNTYPED_EVENT_DTO;
}
