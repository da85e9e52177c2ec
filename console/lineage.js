/*
 * Forks and replays in the console, without the DOM: how a plan of a lineage tree is named, the
 * tree as rows, and two plans' steps side by side with what differs between them.
 */

/** How a plan came about: "fork from layer 3 (checkpoint cp2)", "replay", or "original". */
export function forkLabel(kind, layer, checkpointId) {
  if (kind === 'replay') return 'replay';
  if (kind !== 'fork') return 'original';
  var text = 'fork' + (layer === null || layer === undefined ? '' : ' from layer ' + layer);
  return checkpointId ? text + ' (checkpoint ' + checkpointId + ')' : text;
}

/**
 * The plans of a lineage answer (GET /v1/plans/{id}/lineage) in tree order, each with its depth
 * and how it relates to the plan the lineage was asked for: `this plan`, `parent`, `sibling`,
 * `fork of this plan` (a child), `ancestor`, `descendant`, or `in the tree`.
 */
export function lineageRows(lineage) {
  var rows = [];
  var current = null;
  (function walk(node, depth, parent) {
    var row = { node: node, depth: depth, parentPlanId: parent ? parent.planId : null };
    rows.push(row);
    if (node.current) current = row;
    (node.children || []).forEach(function (child) {
      walk(child, depth + 1, node);
    });
  })(lineage.root, 0, null);
  var byId = {};
  rows.forEach(function (r) {
    byId[r.node.planId] = r;
  });
  var ancestors = {};
  for (var r = current; r && r.parentPlanId !== null; r = byId[r.parentPlanId]) {
    if (ancestors[r.parentPlanId]) break;
    ancestors[r.parentPlanId] = true;
  }
  rows.forEach(function (row) {
    row.relation = relationOf(row, current, ancestors, byId);
  });
  return rows;
}

function relationOf(row, current, ancestors, byId) {
  if (!current) return 'in the tree';
  if (row === current) return 'this plan';
  if (row.node.planId === current.parentPlanId) return 'parent';
  if (row.parentPlanId !== null && row.parentPlanId === current.parentPlanId) return 'sibling';
  if (row.parentPlanId === current.node.planId) return 'fork of this plan';
  if (ancestors[row.node.planId]) return 'ancestor';
  for (var r = row, seen = {}; r && r.parentPlanId !== null && !seen[r.parentPlanId]; r = byId[r.parentPlanId]) {
    seen[r.parentPlanId] = true;
    if (r.parentPlanId === current.node.planId) return 'descendant';
  }
  return 'in the tree';
}

/** The plan whose stored row a step is: its ancestor's for an inherited step, else the plan's own. */
export function rowOwner(step, planId) {
  return step.inheritedFrom || planId;
}

/**
 * Two plans' steps side by side: a row per step id present in either, in the first plan's order
 * and then the second's. `sameRow`: both read the same stored row (a step both inherit from one
 * ancestor, or one the fork inherits from the other): nothing of it can differ. `reasons`: what
 * differs, of `only-a`, `only-b`, `status`, `tokens`, `agent`, `task`, `output` (one has a stored
 * output, the other none). `compareOutputs`: both stored an output, to be fetched and compared
 * (outputDiffers).
 */
export function compareSteps(a, b) {
  var bById = {};
  b.steps.forEach(function (st) {
    bById[st.stepId] = st;
  });
  var seen = {};
  var rows = [];
  a.steps
    .slice()
    .sort(byIndex)
    .forEach(function (st) {
      seen[st.stepId] = true;
      rows.push(compareRow(st.stepId, st, bById[st.stepId] || null, a.planId, b.planId));
    });
  b.steps
    .slice()
    .sort(byIndex)
    .forEach(function (st) {
      if (!seen[st.stepId]) rows.push(compareRow(st.stepId, null, st, a.planId, b.planId));
    });
  return rows;
}

function byIndex(x, y) {
  return x.index - y.index;
}

function compareRow(stepId, sa, sb, planA, planB) {
  var row = { stepId: stepId, a: sa, b: sb, sameRow: false, reasons: [], compareOutputs: false };
  if (!sa || !sb) {
    row.reasons.push(sa ? 'only-a' : 'only-b');
    return row;
  }
  row.sameRow = rowOwner(sa, planA) === rowOwner(sb, planB);
  if (row.sameRow) return row;
  if (sa.status !== sb.status) row.reasons.push('status');
  if (sa.inputTokens !== sb.inputTokens || sa.outputTokens !== sb.outputTokens) row.reasons.push('tokens');
  if (sa.agentId !== sb.agentId) row.reasons.push('agent');
  if (sa.task !== sb.task) row.reasons.push('task');
  if (!!sa.hasOutput !== !!sb.hasOutput) row.reasons.push('output');
  row.compareOutputs = !!sa.hasOutput && !!sb.hasOutput;
  return row;
}

/** Whether two fetched outputs (the step output endpoint's `outputContent`) differ. */
export function outputDiffers(x, y) {
  return (x === undefined || x === null ? null : String(x)) !== (y === undefined || y === null ? null : String(y));
}

/** What a row's reasons say, for the page: "only in plan-a", "status", ... joined by ", ". */
export function reasonText(reasons, planA, planB) {
  return reasons
    .map(function (r) {
      if (r === 'only-a') return 'only in ' + planA;
      if (r === 'only-b') return 'only in ' + planB;
      return r;
    })
    .join(', ');
}
