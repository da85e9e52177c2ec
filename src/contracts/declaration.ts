/**
 * The event contract, declared once: per event type, its fields, their kinds and limits, the rules
 * across fields, and the wording of what a sender reads. Everything else is derived from here:
 * - the validator of record, `parsePlanEvent` (class-validator DTOs built from these declarations,
 *   plan-event.dto.ts);
 * - the publisher's and the worker's fast check (fast-check/event-rules.ts);
 * - by `npm run generate` (scripts/generate-contract.ts): the TypeScript types (types.ts), the JSON
 *   Schema (`schemas/`) and the table the Python client interprets
 *   (`clients/python/plan_ledger/_contract_table.py`). A test fails when one of them differs from
 *   what the declaration gives.
 *
 * Adding an optional field is one line here, then `npm run generate`. A change that refuses events
 * that used to be valid is a new `SPEC_VERSION` (event-types.ts).
 *
 * This is the one place outside tests where the contract's fields are named.
 */
import {
  CrossFieldRule,
  PayloadShape,
  Shape,
  bool,
  decimalAmount,
  eventType,
  exactly,
  externalId,
  externalIds,
  int,
  jsonState,
  list,
  longText,
  nested,
  oneOf,
  optional,
  payload,
  required,
  text,
  utcTimestamp,
  uuid,
} from './contract-kinds';
import {
  DECISION_KINDS,
  FINAL_STATUSES,
  FORK_KINDS,
  PLAN_EVENT_TYPES,
  PlanEventTypeName,
  SPEC_VERSION,
} from './event-types';

/** SQL INT, what token counts and seq are stored in. */
const SQL_INT_MAX = 2_147_483_647;
const tokens = int(0, SQL_INT_MAX);
/** Layers and step positions: far beyond any real plan, well inside SQL INT. */
const position = int(0, 100_000);
/** How long a plan or step may go without an event before the ledger calls it stalled: 1 s to 30 days. */
const deadline = int(1_000, 30 * 24 * 3_600_000);

/** Fields every event carries; see the glossary in event-types.ts. */
export const ENVELOPE: Shape = {
  name: 'PlanEventEnvelope',
  doc: 'Fields every event carries (see the glossary in event-types.ts); `payload` depends on `type`.',
  fields: {
    specVersion: required(exactly(SPEC_VERSION, ', the only spec version this parser supports'), { stamp: true }),
    eventId: required(uuid, { stamp: true, description: 'the idempotency key: a UUID chosen once per event' }),
    type: required(eventType(PLAN_EVENT_TYPES)),
    planId: required(externalId),
    sessionId: required(externalId),
    seq: required(tokens, {
      stamp: true,
      description:
        'per-plan sequence: 0, 1, 2, ... in publish order; a resumed plan continues from its resume point nextSeq',
    }),
    occurredAt: required(utcTimestamp, { stamp: true }),
    payload: required(payload),
  },
};

export const STEP_SPEC: Shape = {
  name: 'StepSpec',
  doc: 'One step of a plan, as the planner wrote it.',
  schemaDef: 'stepSpec',
  graph: { id: 'stepId', position: 'index', edges: 'dependsOn' },
  fields: {
    stepId: required(externalId, {
      doc: 'External id of the step, unique within its plan; what `dependsOn` and step events refer to.',
    }),
    index: required(position, { doc: 'Position in the plan (0-based by convention), unique within the list.' }),
    // plan_steps.agent_id is NVARCHAR(100)
    agentId: required(text(1, 100)),
    task: required(longText({ nonEmpty: true })),
    title: optional(text(0, 500)),
    // plan_steps.expected_output is NVARCHAR(50) in the product's schema: a short label, not a description
    expectedOutput: optional(text(0, 50)),
    dependsOn: optional(externalIds('maxDependsOn'), {
      doc: 'stepIds of the same list this step waits for; together they form a DAG.',
    }),
  },
};

export const FORK_ORIGIN: Shape = {
  name: 'ForkOrigin',
  doc:
    'Where a forked or replayed plan came from: the parent plan, and the first layer the new plan runs\n' +
    "itself (the parent's steps of earlier layers are inherited, read through the fork, never copied).\n" +
    "`checkpointId`: the parent's checkpoint the fork starts from, if it was forked from one.",
  fields: {
    planId: required(externalId),
    kind: required(oneOf(FORK_KINDS)),
    layer: required(position),
    checkpointId: optional(externalId),
  },
};

/** What a model call used and cost, beyond input and output tokens. */
export const STEP_USAGE: Shape = {
  name: 'StepUsageFields',
  doc:
    'What a model call used and cost, beyond input and output tokens (all optional; an older worker\n' +
    'refuses them as unknown fields: upgrade workers before publishers). `inputTokens` counts every\n' +
    'input token, cache reads and writes included; `outputTokens` every output token, reasoning\n' +
    "included. `reportedCost` is the provider's own figure in USD and wins over any price.",
  fields: {
    provider: optional(text(1, 100), {
      doc: "The model's provider (`openai`, `anthropic`, ...): picks the price table's provider.",
    }),
    cacheReadTokens: optional(tokens),
    cacheWriteTokens: optional(tokens),
    reasoningTokens: optional(tokens),
    reportedCost: optional(decimalAmount, {
      description: "the provider's own cost in USD, as a decimal string; it wins over any price",
    }),
  },
};

const steps = list(STEP_SPEC, 'maxSteps');

/**
 * An argsDigest: SHA-256, as 64 lower-case hex digits, of the canonical JSON of a tool call's
 * arguments (docs/approvals.md#argsdigest; `argsDigest` in src/contracts/args-digest.ts).
 */
const digest = text(64, 64);

/** An edit decision carries the digest of the edited arguments, and only an edit does. */
const EDIT_CARRIES_DIGEST: CrossFieldRule = {
  rule: 'onlyWhen',
  field: 'editedArgsDigest',
  when: 'decision',
  is: 'edit',
  minItems: 0,
  noun: 'digest',
};

/** Whether `steps` belongs in a decision depends on `decision`: an edit carries the full new list. */
const EDIT_CARRIES_STEPS: CrossFieldRule = {
  rule: 'onlyWhen',
  field: 'steps',
  when: 'decision',
  is: 'edit',
  minItems: 1,
  noun: 'step',
};

/** The payload of each event type. */
export const PAYLOADS: Readonly<Record<PlanEventTypeName, PayloadShape>> = Object.freeze({
  'plan.created': {
    name: 'PlanCreatedPayload',
    fields: {
      query: required(longText({ nonEmpty: true })),
      // may be empty: a planner can decide a query needs no steps, and that plan is still worth recording
      steps: required(steps),
      requiresApproval: optional(bool),
      complexity: optional(int(0, 100)),
      // A fork's steps are the parent's (those of layers before forkOf.layer inherited, the others to
      // run), and `steps` lists only the ones the fork adds or changes, whose dependsOn may name the
      // parent's steps: only the store knows those.
      forkOf: optional(nested(FORK_ORIGIN), { doc: 'Set on a fork or replay of a stored plan (see ForkOrigin).' }),
      traceId: optional(externalId, {
        doc: 'The OpenTelemetry trace the plan was mapped from (POST /v1/traces): where the plan came from.',
      }),
      deadlineMs: optional(deadline, {
        doc: 'Milliseconds the running plan may go without an event before it is `stalled`; else STALL_AFTER.',
      }),
    },
    rules: [{ rule: 'stepGraph', field: 'steps', outsideWhen: 'forkOf' }],
  },
  'plan.decision': {
    name: 'PlanDecisionPayload',
    fields: {
      decision: required(oneOf(DECISION_KINDS, 'DecisionKind'), {
        doc: 'What a reviewer decided about a plan that required approval.',
      }),
      steps: optional(steps, {
        doc: 'Required for `edit` and forbidden otherwise: the full new step list, replacing the old one.',
      }),
      feedback: optional(longText()),
      decidedBy: optional(text(0, 200)),
    },
    rules: [EDIT_CARRIES_STEPS],
  },
  'step.started': {
    name: 'StepStartedPayload',
    fields: {
      stepId: required(externalId),
      agentId: optional(text(1, 100), {
        doc: 'Set when the executor reassigned the step to another agent than the plan said.',
      }),
      deadlineMs: optional(deadline, {
        doc: 'Milliseconds this step may run without an event: the plan is not `stalled` before then.',
      }),
    },
  },
  'step.completed': {
    name: 'StepCompletedPayload',
    doc: 'Tokens are required here (billing sums them) and bounded by SQL INT.',
    fields: {
      stepId: required(externalId),
      result: optional(longText()),
      outputContent: optional(longText(), { doc: "The step's full output, read back by later tasks." }),
      inputTokens: required(tokens),
      outputTokens: required(tokens),
      model: optional(text(1, 100)),
    },
    groups: [STEP_USAGE],
  },
  'step.failed': {
    name: 'StepFailedPayload',
    doc: 'Tokens are optional: a step can fail before any model call was made.',
    fields: {
      stepId: required(externalId),
      error: required(longText()),
      inputTokens: optional(tokens),
      outputTokens: optional(tokens),
      model: optional(text(1, 100)),
    },
    groups: [STEP_USAGE],
  },
  'step.skipped': {
    name: 'StepSkippedPayload',
    fields: { stepId: required(externalId), reason: optional(longText()) },
  },
  'handoff.recorded': {
    name: 'HandoffRecordedPayload',
    fields: {
      handoffId: required(externalId),
      stepId: optional(externalId),
      fromAgentId: required(text(1, 100)),
      toAgentId: required(text(1, 100)),
      // plan_handoffs.reason is NVARCHAR(50) in the product's schema: a short code; the prose goes in explanation
      reason: required(text(1, 50)),
      explanation: optional(longText()),
    },
  },
  'checkpoint.saved': {
    name: 'CheckpointSavedPayload',
    fields: {
      checkpointId: required(externalId),
      layer: required(position, {
        doc: 'Index of the DAG layer this checkpoint closes; resume starts at the next layer.',
      }),
      // opaque to the contract: the raw-input guard's rules (plain JSON, no prototype key, NUL or lone
      // surrogate, at most maxStateDepth deep) are all it has to meet
      state: required(jsonState),
    },
  },
  'plan.finalized': {
    name: 'PlanFinalizedPayload',
    fields: {
      status: required(oneOf(FINAL_STATUSES, 'FinalStatus'), {
        doc: 'How a plan ended; mirrors the terminal values of `execution_plans.status`.',
      }),
      summary: optional(longText()),
      failureReason: optional(longText()),
    },
  },
  'approval.requested': {
    name: 'ApprovalRequestedPayload',
    doc:
      'An executor asks a human to approve a step or one tool call before running it; the ledger\n' +
      'answers a consume of it once it is decided (docs/approvals.md).',
    fields: {
      approvalId: required(externalId, { doc: 'Chosen by the executor; unique across plans.' }),
      stepId: required(externalId),
      tool: optional(text(1, 200), { doc: 'The tool the call would run; absent for a whole step.' }),
      argsDigest: required(digest, {
        doc: 'SHA-256 hex (64 lower-case digits) of the canonical JSON of the arguments (docs/approvals.md).',
      }),
      expiresAt: required(utcTimestamp, { doc: 'After this instant the approval can no longer be consumed.' }),
      assignee: optional(text(1, 200), { doc: 'Who should decide; the inbox filters on it.' }),
      reason: optional(longText()),
    },
  },
  'approval.decided': {
    name: 'ApprovalDecidedPayload',
    doc: 'A human decided an `approval.requested` (the decide endpoint stores it).',
    fields: {
      approvalId: required(externalId),
      decision: required(oneOf(DECISION_KINDS, 'DecisionKind')),
      decidedBy: required(text(1, 200), { doc: 'The name of the key that decided: who, for the audit.' }),
      feedback: optional(longText()),
      editedArgsDigest: optional(digest, {
        doc: 'Required for `edit` and forbidden otherwise: the digest of the arguments as edited.',
      }),
    },
    rules: [EDIT_CARRIES_DIGEST],
  },
} satisfies Record<PlanEventTypeName, PayloadShape>);

/**
 * What the JSON Schema cannot say and the contract still checks (the schemas'
 * `x-plan-ledger-also-checked`); the figures are filled in from the default limits.
 */
export const ALSO_CHECKED = Object.freeze([
  "step lists: stepId and index unique within the list; dependsOn names steps of the same list (or, in a fork's plan.created, of its parent); no dependency cycle",
  'the whole event is at most {maxEventBytes} bytes of UTF-8 JSON',
  'checkpoint state is nested at most {maxStateDepth} levels deep',
  'text lengths count UTF-16 code units (a character beyond U+FFFF counts 2)',
]);
