/**
 * Rules about a step list as a whole, which no single-field decorator can express: step ids and
 * indexes are unique, every `dependsOn` names a step of the same list, and the dependencies form a
 * DAG (the executor runs the list layer by layer; a cycle would never finish).
 *
 * Runs on the guarded plain JSON even when field checks failed, so one report lists everything.
 * Malformed items were already reported by the DTO checks; here they simply take no part.
 */
import { STEP_SPEC } from './declaration';
import type { Violation } from './invalid-event.error';
import { say } from './messages';
import { childPath, violationAt } from './violation-path';

/** Which fields of a step make the graph: its id, its position, the ids it depends on. */
const GRAPH = STEP_SPEC.graph!;

/** A long cycle is named by its first hops only; the path of the step that closes it is enough to fix it. */
const MAX_CYCLE_HOPS = 10;

type Item = Record<string, unknown>;

/**
 * `outsideDependencies`: `dependsOn` may also name steps outside the list (a fork's list adds to its
 * parent's steps, which are checked where they are known); such ids take no part in the cycle check.
 */
export function checkStepGraph(
  steps: unknown,
  path: string,
  out: Violation[],
  options: { outsideDependencies?: boolean } = {},
): void {
  if (!Array.isArray(steps)) return;
  // Array.from, not map: the fast check (fast-check/) runs this on unguarded publisher input, where
  // a sparse list's holes would otherwise stay holes and trip findCycle.
  const items = Array.from(steps, (step: unknown) =>
    typeof step === 'object' && step !== null && !Array.isArray(step) ? (step as Item) : undefined,
  );
  const positionById = firstPositions(items, GRAPH.id, 'string', path, out);
  firstPositions(items, GRAPH.position, 'number', path, out);
  const edges = dependencyEdges(items, positionById, path, out, options.outsideDependencies === true);
  const cycle = findCycle(edges);
  if (cycle !== undefined) {
    const shown = cycle.length > MAX_CYCLE_HOPS ? [...cycle.slice(0, MAX_CYCLE_HOPS), '...'] : cycle;
    const hops = shown.map((i) => (typeof i === 'number' ? `steps[${i}]` : i)).join(' -> ');
    out.push(violationAt(childPath(childPath(path, cycle[0]), GRAPH.edges), say('cycle', { hops })));
  }
}

/** Maps each value of `field` to the first position holding it; later duplicates are violations. */
function firstPositions(
  items: (Item | undefined)[],
  field: string,
  type: 'string' | 'number',
  path: string,
  out: Violation[],
) {
  const first = new Map<unknown, number>();
  items.forEach((item, i) => {
    const value = item?.[field];
    if (typeof value !== type) return;
    const seen = first.get(value);
    if (seen === undefined) first.set(value, i);
    else out.push(violationAt(childPath(childPath(path, i), field), say('uniqueInList', { first: seen, field })));
  });
  return first;
}

/** edges[i] = positions step i depends on. Unknown ids are violations and left out. */
function dependencyEdges(
  items: (Item | undefined)[],
  positionById: Map<unknown, number>,
  path: string,
  out: Violation[],
  outsideAllowed: boolean,
): number[][] {
  return items.map((item, i) => {
    const dependsOn = item?.[GRAPH.edges];
    if (!Array.isArray(dependsOn)) return [];
    const edges: number[] = [];
    dependsOn.forEach((id: unknown, j) => {
      if (typeof id !== 'string') return;
      const target = positionById.get(id);
      if (target !== undefined) edges.push(target);
      else if (!outsideAllowed)
        out.push(violationAt(childPath(childPath(childPath(path, i), GRAPH.edges), j), say('unknownStep')));
    });
    return edges;
  });
}

/**
 * Iterative depth-first search (a 500-step chain must not cost 500 stack frames). Returns the first
 * cycle found as positions `[a, b, ..., a]`, read "a depends on b ... depends on a", where `a` is the
 * step whose dependency closed the cycle.
 */
export function findCycle(edges: readonly number[][]): number[] | undefined {
  const NEW = 0,
    ON_PATH = 1,
    DONE = 2;
  const state = new Uint8Array(edges.length);
  for (let start = 0; start < edges.length; start++) {
    if (state[start] !== NEW) continue;
    const path = [start];
    const nextEdge = [0];
    state[start] = ON_PATH;
    while (path.length > 0) {
      const top = path.length - 1;
      const node = path[top];
      if (nextEdge[top] < edges[node].length) {
        const to = edges[node][nextEdge[top]++];
        if (state[to] === ON_PATH) return [node, ...path.slice(path.indexOf(to), top), node];
        if (state[to] === NEW) {
          state[to] = ON_PATH;
          path.push(to);
          nextEdge.push(0);
        }
      } else {
        state[node] = DONE;
        path.pop();
        nextEdge.pop();
      }
    }
  }
  return undefined;
}
