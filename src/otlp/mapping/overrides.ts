/**
 * The attributes a user may set on a span to steer the mapping (`plan_ledger.*`), and a span's role
 * with them taken into account: they win over every convention.
 */
import { createHash } from 'node:crypto';
import { EXTERNAL_ID_PATTERN } from '../../contracts/field-formats';
import { str, type SpanRole } from '../conventions/convention';
import { conventionRole } from '../conventions/conventions';
import type { OtlpSpan } from '../otlp-span';

/** Attributes a user may set on a span to steer the mapping. */
export const OVERRIDE = Object.freeze({
  /** `plan`, `step` or `none`: what the span becomes, whatever its other attributes say. */
  role: 'plan_ledger.role',
  /** On the plan span: the plan's id (an external id), instead of one derived from the trace. */
  planId: 'plan_ledger.plan_id',
  /** On a step span: the step's id, instead of its span id. */
  stepId: 'plan_ledger.step_id',
  /** On a step span: step ids (a string array, or one comma-separated string) it depends on. */
  dependsOn: 'plan_ledger.depends_on',
  /** On the plan span: the session id, instead of the conversation id or the trace. */
  sessionId: 'plan_ledger.session_id',
  /** On a step span: the agent that handed the work to this step's agent (a handoff, whatever the tree says). */
  handoffFrom: 'plan_ledger.handoff_from',
  /** With handoff_from: a short reason code (at most 50 characters). @defaultValue `handoff` */
  handoffReason: 'plan_ledger.handoff_reason',
});

/** What a span is: `plan_ledger.role` if set, else what the conventions say. */
export function roleOf(span: OtlpSpan): SpanRole {
  const override = str(span.attributes[OVERRIDE.role]);
  if (override === 'plan' || override === 'none') return override;
  if (override === 'step') return 'chain';
  return conventionRole(span);
}

/** Whether a span carries anything the mapping reads (the others only link the tree). */
export function isRecognised(span: OtlpSpan): boolean {
  return roleOf(span) !== 'none' || span.attributes[OVERRIDE.planId] !== undefined;
}

export function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) : text;
}

/** An external id from a user's value: kept when valid, else a digest of it. */
export function externalId(value: string, prefix: string): string {
  return EXTERNAL_ID_PATTERN.test(value)
    ? value
    : `${prefix}-${createHash('sha256').update(value).digest('hex').slice(0, 40)}`;
}
