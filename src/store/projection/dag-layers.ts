/**
 * Topological layers of a step DAG (seed 002): layer 0 holds the steps with no dependency, layer
 * n the steps whose dependencies all sit in earlier layers. Within a layer steps keep plan order.
 * Dependencies on unknown steps are ignored; steps caught in a cycle (the contract rejects cycles,
 * but an edit could combine with kept steps) go in one last layer so nothing disappears.
 */
export interface DagNode {
  stepId: string;
  index: number;
  dependsOn: string[];
}

export function dagLayers(nodes: DagNode[]): string[][] {
  const ordered = [...nodes].sort((a, b) => a.index - b.index);
  const known = new Set(ordered.map((n) => n.stepId));
  const placed = new Set<string>();
  const layers: string[][] = [];
  let remaining = ordered;
  while (remaining.length > 0) {
    const layer = remaining.filter((n) => n.dependsOn.every((d) => !known.has(d) || placed.has(d)));
    if (layer.length === 0) {
      layers.push(remaining.map((n) => n.stepId));
      break;
    }
    layers.push(layer.map((n) => n.stepId));
    for (const n of layer) placed.add(n.stepId);
    remaining = remaining.filter((n) => !placed.has(n.stepId));
  }
  return layers;
}
