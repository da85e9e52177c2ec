/**
 * Topological layers of a step DAG (what a workflow runs and resumes by): layer 0 holds the steps with no dependency,
 * layer
 * n the steps whose dependencies all sit in earlier layers. Within a layer steps keep plan order.
 * Dependencies on unknown steps are ignored; steps caught in a cycle (the contract rejects cycles,
 * but an edit could combine with kept steps), and steps waiting on them, go in one last layer so
 * nothing disappears. Linear in steps + edges (Kahn's algorithm, one layer at a time).
 */
export interface DagNode {
  stepId: string;
  index: number;
  dependsOn: string[];
}

export function dagLayers(nodes: DagNode[]): string[][] {
  const ordered = [...nodes].sort((a, b) => a.index - b.index);
  const position = new Map(ordered.map((n, i) => [n.stepId, i]));
  const waitingOn = new Array<number>(ordered.length).fill(0);
  const dependents: number[][] = ordered.map(() => []);
  ordered.forEach((node, i) => {
    for (const dep of new Set(node.dependsOn)) {
      const j = position.get(dep);
      if (j === undefined) continue;
      waitingOn[i]++;
      dependents[j].push(i);
    }
  });
  const layers: string[][] = [];
  let layer = ordered.flatMap((_, i) => (waitingOn[i] === 0 ? [i] : []));
  while (layer.length > 0) {
    layers.push(layer.map((i) => ordered[i].stepId));
    const next: number[] = [];
    for (const i of layer) for (const k of dependents[i]) if (--waitingOn[k] === 0) next.push(k);
    layer = next.sort((a, b) => a - b);
  }
  const stuck = ordered.filter((_, i) => waitingOn[i] > 0);
  if (stuck.length > 0) layers.push(stuck.map((n) => n.stepId));
  return layers;
}
