/**
 * The console's pure modules, run as the ES modules the browser loads, in a Node process of their
 * own: addresses, formatting, status classes, the DAG's ordering of the server's layers, and the
 * lineage tree and step comparison of forks.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { dagLayers, DagNode } from '../../src/store/projection/dag-layers';

const CONSOLE = path.join(__dirname, '..', '..', 'console');

/** Calls `fn` of console/`file` with each argument list of `calls`, in a Node process; the results. */
function callModule(file: string, fn: string, calls: unknown[][]): unknown[] {
  const url = pathToFileURL(path.join(CONSOLE, file)).href;
  const script =
    `import * as m from ${JSON.stringify(url)};` +
    `let raw = ''; process.stdin.on('data', (d) => (raw += d));` +
    `process.stdin.on('end', () => process.stdout.write(JSON.stringify(JSON.parse(raw).map((a) => m[${JSON.stringify(fn)}](...a)))));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    input: JSON.stringify(calls),
    encoding: 'utf8',
  });
  return JSON.parse(out) as unknown[];
}

describe('console modules', () => {
  it('router.js parseHash: pages, encoded parts and query values, malformed escapes kept as typed', () => {
    expect(
      callModule('router.js', 'parseHash', [
        [''],
        ['#/plans'],
        ['#/plans/p%2F1%20x'],
        ['#/sessions/s-1?offset=50'],
        ['#/dead-letters?kind=invalid%2Cconflict&plan=a%26b'],
        ['#/plans/%E0%A4%A'],
      ]),
    ).toEqual([
      { page: 'plans', parts: [''], q: {}, path: '' },
      { page: 'plans', parts: ['plans'], q: {}, path: 'plans' },
      { page: 'plans', parts: ['plans', 'p/1 x'], q: {}, path: 'plans/p%2F1%20x' },
      { page: 'sessions', parts: ['sessions', 's-1'], q: { offset: '50' }, path: 'sessions/s-1' },
      {
        page: 'dead-letters',
        parts: ['dead-letters'],
        q: { kind: 'invalid,conflict', plan: 'a&b' },
        path: 'dead-letters',
      },
      { page: 'plans', parts: ['plans', '%E0%A4%A'], q: {}, path: 'plans/%E0%A4%A' },
    ]);
  });

  it('dom.js: the API status in_progress is drawn as running; ages and durations read as an operator reads them', () => {
    expect(callModule('dom.js', 'statusClass', [['in_progress'], ['completed'], ['x" onload="y']])).toEqual([
      'running',
      'completed',
      'xonloady',
    ]);
    expect(callModule('dom.js', 'fmtAge', [[null], [59], [600], [7_200], [200_000]])).toEqual([
      '–',
      '59 s',
      '10 min',
      '2.0 h',
      '2.3 d',
    ]);
    expect(callModule('dom.js', 'fmtMs', [[999], [1_500], [180_000]])).toEqual(['999 ms', '1.5 s', '3.0 min']);
  });

  it("dag.js orderLayers only reorders within a layer: every column holds exactly the server's layer", () => {
    const dags = fc.sample(
      fc
        .integer({ min: 1, max: 40 })
        .chain((n) =>
          fc.tuple(
            ...Array.from({ length: n }, (_, i) =>
              fc.uniqueArray(fc.integer({ min: 0, max: Math.max(0, i - 1) }), { maxLength: i === 0 ? 0 : 4 }),
            ),
          ),
        ),
      { numRuns: 200, seed: 7 },
    );
    const cases = dags.map((deps) => {
      const nodes: DagNode[] = deps.map((d, i) => ({ stepId: `s${i}`, index: i, dependsOn: d.map((j) => `s${j}`) }));
      const byId = Object.fromEntries(nodes.map((n) => [n.stepId, n]));
      return [dagLayers(nodes), byId];
    });
    const ordered = callModule('dag.js', 'orderLayers', cases) as string[][][];
    ordered.forEach((layers, i) => {
      const server = cases[i][0] as string[][];
      expect(layers.map((l) => [...l].sort())).toEqual(server.map((l) => [...l].sort()));
    });
  });

  it('lineage.js forkLabel: how a plan came about', () => {
    expect(
      callModule('lineage.js', 'forkLabel', [
        [null, null, null],
        ['fork', 3, null],
        ['fork', 2, 'cp_1'],
        ['replay', 0, null],
        ['fork', null, null],
      ]),
    ).toEqual(['original', 'fork from layer 3', 'fork from layer 2 (checkpoint cp_1)', 'replay', 'fork']);
  });

  it('lineage.js lineageRows: tree order, depth, and each plan as related to the one asked for', () => {
    const node = (planId: string, children: unknown[] = [], current = false) => ({ planId, current, children });
    // root -> (p -> (me -> (kid -> grandkid), sib), uncle)
    const lineage = {
      root: node('root', [
        node('p', [node('me', [node('kid', [node('grandkid')])], true), node('sib')]),
        node('uncle'),
      ]),
    };
    const [rows] = callModule('lineage.js', 'lineageRows', [[lineage]]) as Array<
      Array<{ node: { planId: string }; depth: number; relation: string }>
    >;
    expect(rows.map((r) => [r.node.planId, r.depth, r.relation])).toEqual([
      ['root', 0, 'ancestor'],
      ['p', 1, 'parent'],
      ['me', 2, 'this plan'],
      ['kid', 3, 'fork of this plan'],
      ['grandkid', 4, 'descendant'],
      ['sib', 2, 'sibling'],
      ['uncle', 1, 'in the tree'],
    ]);
  });

  it('lineage.js compareSteps: a row per step id in either plan; a row both read is the same; what differs is named', () => {
    const step = (stepId: string, index: number, over: Record<string, unknown> = {}) => ({
      stepId,
      index,
      agentId: 'agent',
      task: `task ${stepId}`,
      status: 'completed',
      inputTokens: 1,
      outputTokens: 1,
      hasOutput: true,
      inheritedFrom: null,
      ...over,
    });
    const parent = {
      planId: 'P',
      steps: [step('a', 0), step('b', 1), step('c', 2), step('gone', 3), step('e', 4, { hasOutput: false })],
    };
    const fork = {
      planId: 'F',
      steps: [
        step('a', 0, { inheritedFrom: 'P' }),
        step('c', 2, { task: 'edited', inputTokens: 5 }),
        step('b', 1),
        step('new', 5, { status: 'pending', hasOutput: false }),
        step('e', 4, { status: 'failed' }),
      ],
    };
    const [rows] = callModule('lineage.js', 'compareSteps', [[parent, fork]]) as Array<
      Array<{ stepId: string; sameRow: boolean; reasons: string[]; compareOutputs: boolean }>
    >;
    expect(rows.map((r) => [r.stepId, r.sameRow, r.reasons, r.compareOutputs])).toEqual([
      ['a', true, [], false],
      ['b', false, [], true],
      ['c', false, ['tokens', 'task'], true],
      ['gone', false, ['only-a'], false],
      ['e', false, ['status', 'output'], false],
      ['new', false, ['only-b'], false],
    ]);
    // two forks inheriting one ancestor's row read the same row
    const [[sibling]] = callModule('lineage.js', 'compareSteps', [
      [
        { planId: 'F1', steps: [step('a', 0, { inheritedFrom: 'P' })] },
        { planId: 'F2', steps: [step('a', 0, { inheritedFrom: 'P' })] },
      ],
    ]) as Array<Array<{ sameRow: boolean }>>;
    expect(sibling.sameRow).toBe(true);
    expect(
      callModule('lineage.js', 'outputDiffers', [
        ['x', 'x'],
        ['x', 'y'],
        [null, null],
        [null, ''],
      ]),
    ).toEqual([false, true, false, true]);
    expect(callModule('lineage.js', 'reasonText', [[['only-a', 'status'], 'P', 'F']])).toEqual(['only in P, status']);
  });
});
