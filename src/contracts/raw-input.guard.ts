/**
 * First line of defence, run before class-transformer or class-validator see the input. It bounds
 * the cost of everything after it and makes sure nothing downstream can assign through a prototype
 * key:
 * - size: at most `maxEventBytes` UTF-8 bytes of JSON (an event past `readableBytes` is not even
 *   read: only its size is named);
 * - JSON only: plain objects, arrays, strings, finite numbers, booleans, null (`undefined` object
 *   fields are dropped, as JSON.stringify would);
 * - no key that names a built-in object property (`__proto__`, `constructor`, `prototype`,
 *   `toString`, ...), anywhere, checkpoint state included. `__proto__` rewires prototypes when
 *   assigned; the others are silently skipped by class-transformer, which would let them past the
 *   unknown-field check;
 * - no NUL character (U+0000) and no lone UTF-16 surrogate in any string, nor in a key of checkpoint
 *   state: see storable-text.ts;
 * - bounded nesting (checkpoint state: `maxStateDepth`), walked with an explicit stack so deep input
 *   cannot overflow the call stack.
 *
 * The result is a tree the caller owns: a fresh JSON.parse result, or a copy of an object input, so
 * a publisher's later mutation of its own object cannot change an accepted event.
 *
 * Two kinds of refusal. What makes the input unsafe or too costly to look at further (a forbidden
 * key, a value JSON cannot hold, nesting past its bound, an event past `readableBytes`, 20
 * problems) stops the work: the guard's violations are the whole report. What is wrong only with
 * the characters of a string or a state key (a NUL, a lone surrogate), or with the event's size
 * within `readableBytes`, does not: the refusal carries the whole tree, so the field rules can still
 * run and the report name every rule the event breaks.
 */
import { fieldOfKind } from './contract-kinds';
import { ENVELOPE, PAYLOADS } from './declaration';
import type { Violation } from './invalid-event.error';
import type { ContractLimits } from './limits';
import { MESSAGES, say } from './messages';
import { FORBIDDEN_KEYS, stateKeyProblem, textProblem } from './storable-text';
import { childPath, violationAt } from './violation-path';

export type GuardResult =
  | { ok: true; root: Record<string, unknown> }
  | {
      ok: false;
      violations: Violation[];
      /** The whole tree, when nothing stopped the work (see above): the field rules can still run on it. */
      root?: Record<string, unknown>;
    };

type Json = Record<string | number, unknown>;

interface Frame {
  source: Json;
  /** Where the copy of `source` is built; `source` itself when the input is already ours. */
  target: Json;
  parent: Frame | undefined;
  key: string | number;
  /** The event object is level 1, its payload level 2, checkpoint state level 3. */
  level: number;
  /** Deepest level allowed in this subtree. */
  maxLevel: number;
  /** Checkpoint state or below it, where keys are data (stored), not field names. */
  inState: boolean;
}

/** The envelope's payload field, and the payload fields holding checkpoint state (declaration.ts). */
const PAYLOAD_FIELD = fieldOfKind(ENVELOPE, 'payload');
const STATE_FIELDS: ReadonlySet<string | number> = new Set(
  Object.values(PAYLOADS).flatMap((shape) =>
    Object.keys(shape.fields).filter((name) => shape.fields[name].kind.kind === 'jsonState'),
  ),
);

/** Levels above checkpoint state: the event and its payload. */
const LEVELS_ABOVE_STATE = 2;
/** The deepest fixed structure: an event's payload, its steps, a step, its dependsOn. */
const STRUCTURAL_LEVELS = 5;
/** Stop collecting after this many: enough to fix the sender, not enough to flood a log line. */
const MAX_GUARD_VIOLATIONS = 20;
/** Longest JSON text of a finite number (`-0.0000012345678901234567`), rounded up. */
const MAX_NUMBER_CHARS = 32;
/** One UTF-16 unit never takes more than 6 bytes of JSON (`\u001f`). */
const MAX_BYTES_PER_CHAR = 6;

/**
 * The largest event still read through to name every rule it breaks: as large as a whole job may
 * be (what a worker reads anyway), and never less than an event may be. Past it only the size is
 * named (from the JSON text's length, or the walk's lower bound), and nothing more is read.
 */
export function readableBytes(limits: ContractLimits): number {
  return Math.max(limits.maxEventBytes, limits.maxJobBytes);
}

export function guardRawInput(input: unknown, limits: ContractLimits): GuardResult {
  let value = input;
  let textBytes: number | undefined;
  if (typeof input === 'string') {
    textBytes = Buffer.byteLength(input, 'utf8');
    if (textBytes > readableBytes(limits)) return fail(tooLarge(limits));
    try {
      value = JSON.parse(input);
    } catch {
      return fail(MESSAGES.notJsonText);
    }
  }
  if (!isPlainObject(value)) return fail(MESSAGES.mustBeJsonObject);
  const walk = new Walk(limits, typeof input !== 'string');
  const root = walk.run(value);
  if (!walk.complete()) {
    const proven = textBytes === undefined ? walk.provenTooLarge() : textBytes > limits.maxEventBytes;
    return { ok: false, violations: proven ? [sizeViolation(limits), ...walk.violations] : walk.violations };
  }
  // JSON text was measured exactly before parsing; only an object input still needs its size.
  const large = textBytes === undefined ? walk.tooLarge() : textBytes > limits.maxEventBytes;
  if (!large && walk.violations.length === 0) return { ok: true, root };
  return { ok: false, violations: large ? [sizeViolation(limits), ...walk.violations] : walk.violations, root };
}

/** One pass over the input: checks every key and value, copies when asked, bounds the JSON size. */
class Walk {
  readonly violations: Violation[] = [];
  /** At least / at most this many bytes of JSON; an exact count is needed only between the two. */
  private minBytes = 0;
  private maxBytes = 0;
  private readonly reportedTooDeep = new Set<string>();
  /** A violation that stops the work was found (see the top of this file). */
  private stopped = false;
  private readonly stack: Frame[] = [];
  private root: Json = {};

  constructor(
    private readonly limits: ContractLimits,
    private readonly copy: boolean,
  ) {}

  run(input: Record<string, unknown>): Record<string, unknown> {
    this.root = this.copy ? {} : input;
    this.count(2, 2);
    const maxLevel = Math.max(this.limits.maxStateDepth + LEVELS_ABOVE_STATE, STRUCTURAL_LEVELS);
    this.stack.push({
      source: input,
      target: this.root,
      parent: undefined,
      key: '',
      level: 1,
      maxLevel,
      inState: false,
    });
    while (this.stack.length > 0 && this.worthContinuing()) {
      const frame = this.stack.pop()!;
      const keys = Array.isArray(frame.source) ? undefined : Object.keys(frame.source);
      const length = keys === undefined ? (frame.source as unknown as unknown[]).length : keys.length;
      for (let i = 0; i < length && this.worthContinuing(); i++) this.visit(frame, keys === undefined ? i : keys[i]);
    }
    return this.root;
  }

  /** Stops at enough violations, or once the lower bound alone proves the event too large to read. */
  private worthContinuing(): boolean {
    return this.violations.length < MAX_GUARD_VIOLATIONS && this.minBytes <= readableBytes(this.limits);
  }

  /** The whole input was walked, and nothing found stops the work. */
  complete(): boolean {
    return !this.stopped && this.stack.length === 0 && this.worthContinuing();
  }

  /** The lower bound alone proves the event too large. */
  provenTooLarge(): boolean {
    return this.minBytes > this.limits.maxEventBytes;
  }

  /** Exact size only when the cheap bounds cannot decide: the happy path skips JSON.stringify. */
  tooLarge(): boolean {
    const max = this.limits.maxEventBytes;
    if (this.maxBytes <= max) return false;
    if (this.minBytes > max) return true;
    return Buffer.byteLength(JSON.stringify(this.root), 'utf8') > max;
  }

  private visit(frame: Frame, key: string | number): void {
    const value = frame.source[key];
    if (typeof key === 'string') {
      if (FORBIDDEN_KEYS.has(key)) return this.stop(frame, key, MESSAGES.forbiddenKey);
      if (frame.inState) {
        // a key of state is data: its characters are refused, and the walk goes on
        const problem = stateKeyProblem(key);
        if (problem !== undefined) this.report(frame, key, problem);
      }
      if (value === undefined) return; // an absent optional field, dropped as JSON.stringify would
      this.count(key.length + 3, MAX_BYTES_PER_CHAR * key.length + 4);
    } else {
      this.count(0, 1);
    }
    if (value === null || typeof value !== 'object') return this.scalar(frame, key, value);
    if (!Array.isArray(value) && !isPlainObject(value)) return this.stop(frame, key, MESSAGES.mustBePlainObjectOrArray);
    const level = frame.level + 1;
    const isState = isCheckpointState(frame, key);
    const maxLevel = isState ? this.limits.maxStateDepth + LEVELS_ABOVE_STATE : frame.maxLevel;
    if (level > maxLevel) return this.tooDeep(frame, key, maxLevel);
    this.count(2, 2);
    const target: Json = this.copy ? (Array.isArray(value) ? ([] as unknown as Json) : {}) : (value as Json);
    if (this.copy) frame.target[key] = target;
    this.stack.push({
      source: value as Json,
      target,
      parent: frame,
      key,
      level,
      maxLevel,
      inState: isState || frame.inState,
    });
  }

  private scalar(frame: Frame, key: string | number, value: unknown): void {
    switch (typeof value) {
      case 'string': {
        // Linear in the input, like the walk (see textProblem for the cost). Its characters are
        // refused, and the walk goes on.
        const problem = textProblem(value);
        if (problem !== undefined) this.report(frame, key, problem);
        this.count(value.length + 2, MAX_BYTES_PER_CHAR * value.length + 2);
        break;
      }
      case 'number':
        if (!Number.isFinite(value)) return this.stop(frame, key, MESSAGES.mustBeFinite);
        this.count(1, MAX_NUMBER_CHARS);
        break;
      case 'boolean':
      case 'object': // null
        this.count(4, 5);
        break;
      default: // undefined array items (JSON would turn them into null), functions, symbols, bigints
        return this.stop(frame, key, MESSAGES.mustBeJsonValue);
    }
    if (this.copy) frame.target[key] = value;
  }

  /**
   * Reported once per subtree at the level of checkpoint state (`payload.state`): that is the path
   * the sender controls, and the depth allowed below it is the one `maxStateDepth` names.
   */
  private tooDeep(frame: Frame, key: string | number, maxLevel: number): void {
    const path = keysOf(frame, key).slice(0, LEVELS_ABOVE_STATE).reduce<string>(childPath, '');
    this.stopped = true;
    if (this.reportedTooDeep.has(path)) return;
    this.reportedTooDeep.add(path);
    this.violations.push(violationAt(path, say('tooDeep', { max: maxLevel - LEVELS_ABOVE_STATE })));
  }

  private report(frame: Frame, key: string | number, predicate: string): void {
    this.violations.push(violationAt(keysOf(frame, key).reduce<string>(childPath, ''), predicate));
  }

  /** Reports what makes the input unsafe to look at further: the field rules will not run. */
  private stop(frame: Frame, key: string | number, predicate: string): void {
    this.stopped = true;
    this.report(frame, key, predicate);
  }

  private count(min: number, max: number): void {
    this.minBytes += min;
    this.maxBytes += max;
  }
}

/** `payload.state` gets `maxStateDepth` levels; other subtrees get at least the structural depth. */
function isCheckpointState(frame: Frame, key: string | number): boolean {
  return (
    STATE_FIELDS.has(key) &&
    frame.key === PAYLOAD_FIELD &&
    frame.parent !== undefined &&
    frame.parent.parent === undefined
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Keys from the root down to `key`, the child of `frame`. */
function keysOf(frame: Frame, key: string | number): (string | number)[] {
  const keys: (string | number)[] = [key];
  for (let f: Frame | undefined = frame; f.parent !== undefined; f = f.parent) keys.unshift(f.key);
  return keys;
}

function tooLarge(limits: ContractLimits): string {
  return say('eventBytes', { max: limits.maxEventBytes });
}

function sizeViolation(limits: ContractLimits): Violation {
  return violationAt('', tooLarge(limits));
}

function fail(predicate: string): GuardResult {
  return { ok: false, violations: [violationAt('', predicate)] };
}
