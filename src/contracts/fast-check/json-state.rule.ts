/**
 * Checkpoint `state` is opaque to the contract, so the field rules cannot vouch for it: this walk
 * applies the raw-input guard's rules to it (plain JSON only, no prototype keys, no NUL character
 * nor lone surrogate in a key or string (storable-text.ts), at most `maxStateDepth` levels). Everything else in an
 * event is covered by
 * typed field rules, which already refuse non-JSON values. Explicit stack: deep or cyclic state
 * stops at the depth limit instead of overflowing the call stack.
 */
import { MESSAGES, say } from '../messages';
import { FORBIDDEN_KEYS, stateKeyProblem, textProblem } from '../storable-text';
import { childPath } from '../violation-path';
import { CheckContext, Rule, isPlainObject, report } from './field-rules';

/** Stop after this many, as the guard does: enough to fix the sender. */
const MAX_STATE_VIOLATIONS = 20;

interface Frame {
  value: Record<string, unknown> | unknown[];
  path: string;
  depth: number;
}

export const jsonState: Rule = (value, parent, key, ctx) => {
  if (!isPlainObject(value)) return report(ctx, parent, key, MESSAGES.mustBeObject);
  const statePath = childPath(parent, key);
  const maxDepth = ctx.limits.maxStateDepth;
  const stack: Frame[] = [{ value, path: statePath, depth: 1 }];
  const start = ctx.out.length;
  while (stack.length > 0 && ctx.out.length - start < MAX_STATE_VIOLATIONS) {
    const frame = stack.pop()!;
    if (frame.depth > maxDepth) {
      report(ctx, parent, key, say('tooDeep', { max: maxDepth }));
      return;
    }
    if (Array.isArray(frame.value)) {
      for (let i = 0; i < frame.value.length; i++) visit(frame.value[i], frame, i, stack, ctx);
    } else {
      for (const k of Object.keys(frame.value)) {
        if (FORBIDDEN_KEYS.has(k)) report(ctx, frame.path, k, MESSAGES.forbiddenKey);
        else {
          const problem = stateKeyProblem(k);
          if (problem !== undefined) report(ctx, frame.path, k, problem);
          else visit(frame.value[k], frame, k, stack, ctx);
        }
      }
    }
  }
};

/** Checks `child`, the `key` item of `frame`'s value; an object or array is pushed on `stack` to be walked. */
function visit(child: unknown, frame: Frame, key: string | number, stack: Frame[], ctx: CheckContext): void {
  switch (typeof child) {
    case 'string': {
      const problem = textProblem(child);
      if (problem !== undefined) report(ctx, frame.path, key, problem);
      return;
    }
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(child)) report(ctx, frame.path, key, MESSAGES.mustBeFinite);
      return;
    case 'undefined':
      // JSON drops an undefined field; an undefined array item would silently become null.
      if (Array.isArray(frame.value)) report(ctx, frame.path, key, MESSAGES.mustBeJsonValue);
      return;
    case 'object':
      if (child === null) return;
      if (Array.isArray(child) || isPlainObject(child)) {
        stack.push({ value: child as Frame['value'], path: childPath(frame.path, key), depth: frame.depth + 1 });
      } else {
        report(ctx, frame.path, key, MESSAGES.mustBePlainObjectOrArray);
      }
      return;
    default:
      report(ctx, frame.path, key, MESSAGES.mustBeJsonValue);
  }
}
