import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { inIds } from '../store/sql/id-lists';
import { type DataSource } from 'typeorm';
import { parsePlanEvent, type ForkOrigin, type PlanEvent, type StepSpec } from '../contracts';
import { isExternalId } from '../contracts/field-formats';
import { checkStepGraph } from '../contracts/step-graph.check';
import type { Violation } from '../contracts/invalid-event.error';
import { isFork, loadForkView } from '../queries/fork-view.query';
import { NotFoundError, QueryArgumentError } from '../queries/query-errors';
import { parseJson, toNum } from '../queries/row-normalize';
import { PlanLedgerError } from '../shared/errors';
import {
  ENTITY,
  ExecutionPlanRow,
  PlanHeadRow,
  PlanStepRow,
  WorkflowCheckpointRow,
  WorkflowDagRow,
} from '../store/entities';
import { EventLog } from '../store/ledger/event-log';
import { PlanEventStore } from '../store/plan-event-store';
import { sqlDialectOf } from '../store/sql/dialects';
import { dagLayers, type DagNode } from '../store/projection/dag-layers';

/** Where a fork starts: a layer, a checkpoint of the parent (the layer after it), or the parent's first failed layer. */
export type ForkStart = { layer: number } | { checkpointId: string } | { failure: true };

export interface ForkRequest {
  parentPlanId: string;
  kind: ForkOrigin['kind'];
  /** Required for a fork; a replay starts at layer 0. */
  from?: ForkStart;
  /** The new plan's id (default: the parent's id and a random suffix). */
  planId?: string;
  /** The new plan's session (default: the parent's). */
  sessionId?: string;
  /**
   * Steps the fork changes (same stepId as a parent's step of the fork layer or later) or adds (a
   * new stepId). Their `index` is set here: a changed step keeps its parent's, an added one goes
   * after every step of the parent.
   */
  editSteps?: StepSpec[];
  /**
   * The caller's id of this request (HTTP: `Idempotency-Key`): the same request sent again, after
   * an answer that was lost, answers the fork it created instead of creating another or refusing.
   */
  requestId?: string;
  now?: Date;
  /** How the caller names the request's parts, for its error messages (default: the CLI's options). */
  names?: ForkArgumentNames;
}

/** The names of a fork request's parts as a caller (CLI, HTTP) spells them. */
export interface ForkArgumentNames {
  fromLayer: string;
  fromCheckpoint: string;
  fromFailure: string;
  planId: string;
  sessionId: string;
  editSteps: string;
  requestId?: string;
}

/** `plans fork|replay`'s options. */
export const CLI_FORK_NAMES: ForkArgumentNames = {
  fromLayer: '--from-layer',
  fromCheckpoint: '--from-checkpoint',
  fromFailure: '--from-failure',
  planId: '--plan-id',
  sessionId: '--session',
  editSteps: '--edit-steps',
};

export interface ForkOutcome {
  planId: string;
  sessionId: string;
  kind: ForkOrigin['kind'];
  parentPlanId: string;
  /** The first layer the fork runs; the parent's steps of earlier layers are inherited. */
  layer: number;
  checkpointId: string | null;
  /** Steps in the fork's step list: inherited, and to run. */
  steps: number;
  inheritedSteps: number;
  changedSteps: string[];
  addedSteps: string[];
  /** Where an executor continues it (as after a restart): this layer's steps, from this seq. */
  nextLayer: number;
  nextSteps: string[];
  nextSeq: number;
  /** True when the request (its `requestId`) had created this fork already: nothing was written now. */
  replayed?: boolean;
}

/** A fork the parent's shape does not allow: says what and why, in one line. */
export class ForkRefusedError extends PlanLedgerError {
  override readonly name = 'ForkRefusedError';
  readonly kind = 'conflict';
}

/**
 * Create a fork (or replay) of a stored plan: one `plan.created` with `forkOf`, stored through the
 * store as any event, so its rows are the store's. Nothing of the parent is copied: the fork's rows
 * are its plan row, its DAG of the steps it changes or adds, and those steps; the store makes each
 * other step the fork's own row when the fork's executor sends its first event
 * (docs/fork-and-lineage.md#referenced-not-copied). Refused, writing nothing, when the parent is
 * unknown or the start or edits do not fit it.
 */
export async function forkPlan(ds: DataSource, request: ForkRequest, store?: PlanEventStore): Promise<ForkOutcome> {
  const parent = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOne({ where: { id: request.parentPlanId } });
  if (!parent) throw new NotFoundError('plan', request.parentPlanId);
  const shape = await parentShape(ds, parent);
  const names = request.names ?? CLI_FORK_NAMES;
  const start = await startOf(parent, shape, request, names);
  // a request id names its plan.created event, and the fork when no plan id is given
  const eventId = request.requestId === undefined ? randomUUID() : requestEventId(request);
  const planId = request.planId ?? defaultForkId(parent.id, request.kind, request.requestId && eventId);
  if (!isExternalId(planId))
    throw new QueryArgumentError(names.planId, `"${planId}" is not a plan id (1-64 letters, digits, _ . : -)`);
  const taken = () => new ForkRefusedError(`plan "${planId}" already exists: choose another ${names.planId}`);
  /** Whether this request created the fork already (true), another plan (throws), or nothing yet. */
  const createdBefore = async () => {
    if (request.requestId === undefined) return false;
    const stored = (await new EventLog(ds.manager, sqlDialectOf(ds)).storedPlans([eventId])).get(eventId);
    if (stored === undefined) return false;
    if (stored === planId) return true;
    throw new ForkRefusedError(
      `${names.requestId ?? 'the request id'} "${request.requestId}" created plan "${stored}" already; a new fork needs a new one`,
    );
  };
  let replayed = await createdBefore();
  if (!replayed && (await ds.getRepository<PlanHeadRow>(ENTITY.head).exists({ where: { planId }, withDeleted: true })))
    throw taken();
  const sessionId = request.sessionId ?? parent.sessionId;
  if (!isExternalId(sessionId))
    throw new QueryArgumentError(names.sessionId, `"${sessionId}" is not a session id (1-64 letters, digits, _ . : -)`);
  const changes = await withoutUnchanged(shape, request.editSteps ?? []);
  const edits = placeEdits(shape, changes.length > 0 ? await shape.nodes() : [], start.layer, changes, names.editSteps);
  const event = forkEvent(
    parent,
    { planId, sessionId, layer: start.layer, checkpointId: start.checkpointId, eventId },
    request,
    edits.specs,
    names.editSteps,
  );
  // the check above answers most requests; this one, under the plan's lock, settles a race for the id
  if (!replayed) {
    try {
      await (store ?? new PlanEventStore(ds, undefined, { rowCacheBytes: 0 })).createPlan(event, taken);
    } catch (err) {
      // the same request sent twice at once: the other one created it
      if (!(err instanceof ForkRefusedError) || !(await createdBefore())) throw err;
      replayed = true;
    }
  }
  const inherited = shape.layers.sizes.slice(0, start.layer).reduce((n, size) => n + size, 0);
  return {
    planId,
    sessionId,
    kind: request.kind,
    parentPlanId: parent.id,
    layer: start.layer,
    checkpointId: start.checkpointId,
    steps: shape.layers.sizes.reduce((n, size) => n + size, 0) + edits.added.length,
    inheritedSteps: inherited,
    changedSteps: edits.changed,
    addedSteps: edits.added,
    nextLayer: start.layer,
    nextSteps: edits.nextSteps,
    nextSeq: 1,
    ...(replayed ? { replayed } : {}),
  };
}

/** The plan.created event id of the fork a request id asks for: the same request, the same id. */
function requestEventId(request: ForkRequest): string {
  const h = createHash('sha256')
    .update(`fork-request\u0000${request.parentPlanId}\u0000${request.kind}\u0000${request.requestId}`)
    .digest('hex');
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The parent's steps as its DAG draws them (for a fork: its whole step list, ancestors' included). */
interface Shape {
  nodes: () => Promise<DagNode[]>;
  layers: Layers;
  /** Steps of the parent that failed (for a start at its failure). */
  failed: () => Promise<string[]>;
  checkpoint: (key: string) => Promise<WorkflowCheckpointRow | null>;
  /** The parent's rows of these steps (their definitions). */
  definitions: (keys: string[]) => Promise<PlanStepRow[]>;
}

async function parentShape(ds: DataSource, parent: ExecutionPlanRow): Promise<Shape> {
  const ownCheckpoint = (key: string) =>
    ds
      .getRepository<WorkflowCheckpointRow>(ENTITY.checkpoint)
      .findOne({ where: { workflowId: parent.id, checkpointKey: key } });
  const ownDefinitions = (keys: string[]) =>
    ds
      .getRepository<PlanStepRow>(ENTITY.step)
      .find({ where: { planId: parent.id, stepKey: inIds(sqlDialectOf(ds), keys) } });
  if (isFork(parent)) {
    const view = await loadForkView(ds, parent, 'no-output');
    const listed = view.steps.map(nodeOf);
    return {
      nodes: async () => listed,
      layers: listedLayers(view.layers),
      failed: async () => view.steps.filter((s) => s.status === 'failed').map((s) => s.stepKey),
      checkpoint: async (key) =>
        (await ownCheckpoint(key)) ?? (view.startCheckpoint?.checkpointKey === key ? view.startCheckpoint : null),
      definitions: async (keys) => view.steps.filter((s) => keys.includes(s.stepKey)),
    };
  }
  const failed = async () =>
    (
      await ds
        .getRepository<PlanStepRow>(ENTITY.step)
        .find({ where: { planId: parent.id, status: 'failed' }, select: { stepKey: true } })
    ).map((s) => s.stepKey);
  // the DAG row's layers column: the steps' places without the DAG document (read only for edits)
  const dags = ds.getRepository<WorkflowDagRow>(ENTITY.dag);
  const document = once(async () => String((await dags.findOne({ where: { workflowId: parent.id } }))?.dag ?? ''));
  const dagNodes = once(async () => parseJson<{ steps: DagNode[] }>(await document(), { steps: [] }).steps);
  const row = await dags.findOne({ where: { workflowId: parent.id }, select: { workflowId: true, layers: true } });
  if (row) {
    const layers = row.layers ? scanLayers(String(row.layers)) : storedLayers(await document());
    return { nodes: dagNodes, layers, failed, checkpoint: ownCheckpoint, definitions: ownDefinitions };
  }
  const steps = await ds.getRepository<PlanStepRow>(ENTITY.step).find({
    where: { planId: parent.id },
    select: { stepKey: true, stepIndex: true, dependsOn: true },
  });
  const listed = steps.map(nodeOf);
  return {
    nodes: async () => listed,
    layers: listedLayers(dagLayers(listed)),
    failed,
    checkpoint: ownCheckpoint,
    definitions: ownDefinitions,
  };
}

/**
 * The edits that change something: a step equal to the parent's (agent, task, title, expected
 * output, dependencies) is no change, so a whole `plans export` template can be given.
 */
async function withoutUnchanged(shape: Shape, edits: StepSpec[]): Promise<StepSpec[]> {
  if (edits.length === 0) return edits;
  const rows = await shape.definitions(edits.map((e) => e.stepId));
  const byKey = new Map(rows.map((r) => [r.stepKey, r]));
  return edits.filter((e) => {
    const r = byKey.get(e.stepId);
    if (!r) return true;
    const deps = (list: string[]) => JSON.stringify([...list].sort());
    return !(
      r.agentId === e.agentId &&
      r.task === e.task &&
      (r.title ?? null) === (e.title ?? null) &&
      (r.expectedOutput ?? null) === (e.expectedOutput ?? null) &&
      deps(parseJson<string[]>(r.dependsOn, [])) === deps(e.dependsOn ?? [])
    );
  });
}

/** A DAG's layers: how many, their sizes, one layer's step ids, all of them. */
interface Layers {
  count: number;
  sizes: readonly number[];
  at(n: number): string[];
  all(): string[][];
}

function listedLayers(layers: string[][]): Layers {
  return { count: layers.length, sizes: layers.map((l) => l.length), at: (n) => layers[n] ?? [], all: () => layers };
}

/** The last key of a stored DAG document (`{"steps":[...],"layers":[...]}`, as the store writes it). */
const LAYERS_KEY = ',"layers":';

/**
 * The layers of a stored DAG document, found by their key (unescaped, `"layers":` occurs only as
 * that last key: inside a string value a quote is escaped); anything else is parsed whole.
 */
export function storedLayers(text: string): Layers {
  const at = text.lastIndexOf(LAYERS_KEY);
  if (at >= 0 && text.endsWith('}')) return scanLayers(text.slice(at + LAYERS_KEY.length, -1));
  return listedLayers(parseJson<{ layers: string[][] }>(text, { layers: [] }).layers);
}

/**
 * Layers as a JSON array of arrays of step ids, counted by scanning its brackets and commas (step
 * ids are external ids: no quote, bracket, comma or backslash in them) and parsed one layer at a
 * time when asked for; anything else is parsed whole.
 */
export function scanLayers(body: string): Layers {
  if (!body.startsWith('[') || body.includes('\\')) return listedLayers(parseJson<string[][]>(body, []));
  const starts: number[] = [];
  const ends: number[] = [];
  const sizes: number[] = [];
  let depth = 0;
  let commas = 0;
  let empty = true;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (c === 0x5b) {
      if (++depth === 2) {
        starts.push(i);
        commas = 0;
        empty = true;
      }
    } else if (c === 0x5d) {
      if (depth-- === 2) {
        ends.push(i + 1);
        sizes.push(empty ? 0 : commas + 1);
      }
    } else if (depth === 2) {
      if (c === 0x2c) commas++;
      else if (c === 0x22) empty = false;
    }
  }
  const layerAt = (n: number): string[] =>
    n >= 0 && n < starts.length ? (JSON.parse(body.slice(starts[n], ends[n])) as string[]) : [];
  return { count: sizes.length, sizes, at: layerAt, all: once(() => JSON.parse(body) as string[][]) };
}

function once<T>(make: () => T): () => T {
  let value: { v: T } | undefined;
  return () => (value ??= { v: make() }).v;
}

function nodeOf(s: Pick<PlanStepRow, 'stepKey' | 'stepIndex' | 'dependsOn'>): DagNode {
  return { stepId: s.stepKey, index: toNum(s.stepIndex), dependsOn: parseJson<string[]>(s.dependsOn, []) };
}

async function startOf(
  parent: ExecutionPlanRow,
  shape: Shape,
  request: ForkRequest,
  names: ForkArgumentNames,
): Promise<{ layer: number; checkpointId: string | null }> {
  const from: ForkStart = request.kind === 'replay' ? { layer: 0 } : (request.from ?? missingStart(names));
  const count = shape.layers.count;
  if (count === 0) throw new ForkRefusedError(`plan "${parent.id}" has no steps: there is nothing to run again`);
  if ('layer' in from) {
    if (!Number.isInteger(from.layer) || from.layer < 0 || from.layer >= count)
      throw new QueryArgumentError(
        names.fromLayer,
        `plan "${parent.id}" has layers 0-${count - 1}; got ${String(from.layer)}`,
      );
    return { layer: from.layer, checkpointId: null };
  }
  if ('checkpointId' in from) {
    const checkpoint = await shape.checkpoint(from.checkpointId);
    if (!checkpoint) throw new NotFoundError('checkpoint', from.checkpointId, ` in plan "${parent.id}"`);
    const layer = toNum(checkpoint.layer) + 1;
    if (layer >= count)
      throw new ForkRefusedError(
        `checkpoint "${from.checkpointId}" closes layer ${layer - 1}, the last of plan "${parent.id}": nothing is left to run after it`,
      );
    return { layer, checkpointId: from.checkpointId };
  }
  const failed = new Set(await shape.failed());
  const layer = shape.layers.all().findIndex((keys) => keys.some((k) => failed.has(k)));
  if (layer < 0)
    throw new ForkRefusedError(`plan "${parent.id}" has no failed step: fork it with ${names.fromLayer} N instead`);
  return { layer, checkpointId: null };
}

function missingStart(names: ForkArgumentNames): never {
  throw new QueryArgumentError(
    'from',
    `say where the fork starts: ${names.fromLayer} N, ${names.fromCheckpoint} ID or ${names.fromFailure}`,
  );
}

/**
 * The edited steps as the fork's plan.created lists them: a changed step keeps its parent's index,
 * an added one goes after all of the parent's. Refused when a step is inherited (before the fork
 * layer), a dependency names no step, the whole forms a cycle, or a step would run before the
 * fork layer.
 */
function placeEdits(
  shape: Shape,
  nodes: DagNode[],
  layer: number,
  edits: StepSpec[],
  argument: string,
): { specs: StepSpec[]; changed: string[]; added: string[]; nextSteps: string[] } {
  // nothing changed: the fork is the parent's DAG as it is
  if (edits.length === 0) return { specs: [], changed: [], added: [], nextSteps: shape.layers.at(layer) };
  const parentIndex = new Map(nodes.map((n) => [n.stepId, n.index]));
  const inherited = new Set(shape.layers.all().slice(0, layer).flat());
  let next = nodes.reduce((max, n) => Math.max(max, n.index), -1) + 1;
  const changed: string[] = [];
  const added: string[] = [];
  const specs = edits.map((spec) => {
    if (inherited.has(spec.stepId))
      throw new ForkRefusedError(
        `${argument}: step "${spec.stepId}" is in a layer before ${layer}, which the fork inherits; fork from its layer to change it`,
      );
    const index = parentIndex.get(spec.stepId);
    if (index !== undefined) changed.push(spec.stepId);
    else added.push(spec.stepId);
    return { ...spec, index: index ?? next++ };
  });
  const byId = new Map<string, DagNode>(nodes.map((n) => [n.stepId, n]));
  for (const s of specs) byId.set(s.stepId, { stepId: s.stepId, index: s.index, dependsOn: s.dependsOn ?? [] });
  const merged = [...byId.values()];
  const out: Violation[] = [];
  checkStepGraph(
    merged.map((n) => ({ stepId: n.stepId, index: n.index, dependsOn: n.dependsOn })),
    'steps',
    out,
  );
  if (out.length > 0) {
    const v = out[0];
    const [, at] = /^steps\[(\d+)\]/.exec(v.path) ?? [];
    const step = at === undefined ? undefined : merged[Number(at)]?.stepId;
    throw new ForkRefusedError(
      `${argument}: ${step ? `step "${step}": ` : ''}${v.message.replace(/^steps\[\d+\]\.?/, '').trim()}`,
    );
  }
  const layers = dagLayers(merged);
  const early = layers
    .slice(0, layer)
    .flat()
    .find((k) => !inherited.has(k));
  if (early !== undefined)
    throw new ForkRefusedError(
      `${argument}: step "${early}" would run in a layer before ${layer}, which the fork inherits; make it depend on a step of layer ${layer - 1} or later`,
    );
  return { specs, changed, added, nextSteps: layers[layer] ?? [] };
}

function forkEvent(
  parent: ExecutionPlanRow,
  at: { planId: string; sessionId: string; layer: number; checkpointId: string | null; eventId: string },
  request: ForkRequest,
  steps: StepSpec[],
  argument: string,
): PlanEvent {
  const forkOf: ForkOrigin = {
    planId: parent.id,
    kind: request.kind,
    layer: at.layer,
    ...(at.checkpointId !== null ? { checkpointId: at.checkpointId } : {}),
  };
  const parsed = parsePlanEvent({
    specVersion: 1,
    eventId: at.eventId,
    type: 'plan.created',
    planId: at.planId,
    sessionId: at.sessionId,
    seq: 0,
    occurredAt: (request.now ?? new Date()).toISOString(),
    payload: {
      query: parent.query,
      steps,
      forkOf,
      ...(parent.complexity !== null && parent.complexity !== undefined
        ? { complexity: toNum(parent.complexity) }
        : {}),
    },
  });
  if (!parsed.ok) throw new QueryArgumentError(argument, parsed.error.message);
  return parsed.event;
}

/**
 * `<parent>.fork-<8 hex>` (or `.replay-`), cut to the 64 characters of a plan id; the hex from
 * the request's event id when there is a request id (the same request, the same fork), else random.
 */
function defaultForkId(parentId: string, kind: ForkOrigin['kind'], requestEventId?: string): string {
  const hex = requestEventId ? requestEventId.slice(0, 8) : randomBytes(4).toString('hex');
  const suffix = `.${kind}-${hex}`;
  return parentId.slice(0, 64 - suffix.length) + suffix;
}
