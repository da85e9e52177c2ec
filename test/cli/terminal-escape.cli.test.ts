/**
 * Event text cannot drive the operator's terminal: `plans show`, `analytics handoffs` and
 * `dlq list` print control characters from events as `\uXXXX`; `--json` keeps the data as stored.
 */
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { escapeControl } from '../../src/shared/terminal-text';
import { runCli } from '../support/cli';
import { createMigratedDb } from '../support/databases';
import { PlanScript } from '../support/read-dataset';
import { letter, QueueFixture } from '../dead-letters/dead-letter.fixtures';

const CLEAR = '\u001b[2J\u001b[H';
const RETITLE = '\u001b]0;pwned\u0007';
const CSI = '\u009b31m';
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('escapeControl', () => {
  it('writes control characters as \\uXXXX, keeps text, newlines and tabs, and stays valid inside JSON', () => {
    expect(escapeControl(`a${CLEAR}b`)).toBe('a\\u001b[2J\\u001b[Hb');
    expect(escapeControl('line\r\u202eevil')).toBe('line\\u000d\\u202eevil');
    expect(escapeControl('plain é 日本 \t\n')).toBe('plain é 日本 \t\n');
    const json = JSON.stringify({ s: `x${CSI}y` });
    expect(JSON.parse(escapeControl(json))).toEqual({ s: `x${CSI}y` });
  });
});

describe('human-readable CLI output escapes event text (child process, SQLite + Redis)', () => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let queues: QueueFixture;

  beforeAll(async () => {
    db = await createMigratedDb('sqlite');
    queues = new QueueFixture();
    const script = new PlanScript('plan-esc', 'sess-esc', '2026-03-01T09:00:00.000Z')
      .created({
        query: `Build it${CLEAR}`,
        steps: [
          { stepId: 's1', index: 0, agentId: 'architect', task: `Design${RETITLE}`, title: `Design${CSI}` },
          { stepId: 's2', index: 1, agentId: 'coder', task: 'Code', dependsOn: ['s1'] },
        ],
      })
      .ran('s1', [10, 5], { result: `ok${CLEAR}` })
      .handoff({
        handoffId: 'h1',
        stepId: 's2',
        fromAgentId: 'architect',
        toAgentId: 'coder',
        reason: `next${RETITLE}`,
        explanation: `because${CLEAR}`,
      })
      .started('s2')
      .failed('s2', `boom${CLEAR}`);
    const events = script.events.map((e) => {
      const r = parsePlanEvent(e);
      if (!r.ok) throw new Error(JSON.stringify(r.error.violations));
      return r.event as PlanEvent;
    });
    await new PlanEventStore(db.ds).persist(events);
    await queues.write(letter({ kind: 'invalid', type: `step.started${CLEAR}`, planId: 'plan-esc' }));
  });

  afterAll(async () => {
    await queues?.close();
    await db?.close();
  });

  it.each([
    ['plans show', ['plans', 'show', 'plan-esc']],
    ['analytics handoffs', ['analytics', 'handoffs']],
    ['dlq list', ['dlq', 'list']],
  ])('%s prints no raw control character, and shows them escaped', async (_name, args) => {
    const result = await runCli(args, queues.env({ DATABASE_URL: db.db.url }));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(RAW);
    expect(result.stdout).toContain('\\u001b');
  });

  it('--json output keeps the stored text exactly', async () => {
    const env = queues.env({ DATABASE_URL: db.db.url });
    const plan = await runCli(['plans', 'show', 'plan-esc', '--json'], env);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toContain('Build it');
    expect(JSON.stringify(JSON.parse(plan.stdout))).toContain(JSON.stringify(`Build it${CLEAR}`).slice(1, -1));
    const list = await runCli(['dlq', 'list', '--json'], env);
    expect(JSON.parse(list.stdout).deadLetters[0].type).toBe(`step.started${CLEAR}`);
  });
});
