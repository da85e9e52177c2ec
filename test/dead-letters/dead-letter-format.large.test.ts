import { formatDetail, formatList } from '../../src/dead-letters/dead-letter-format';
import { letter, validEvent } from './dead-letter.fixtures';

/**
 * Dead-letter text over data-sized inputs: a `dlq list` of 200k letters, a `dlq show` whose event
 * pretty-prints to 200k lines. Both used to spread one call argument per row or line
 * (`Math.max(...widths)`, `lines.push(...lines)`), which overflows V8's stack past ~120k.
 */
const N = 200_000;

describe('dead-letter text with 200k rows', () => {
  it('dlq list: a header, a row per letter, and the count', () => {
    const entries = Array.from({ length: N }, (_, i) => letter({ planId: `plan_${i}` }));
    const lines = formatList(N, entries);
    expect(lines).toHaveLength(1 + N + 1);
    expect(lines[0]).toMatch(/^ID\s+KIND\s+TYPE\s+PLAN\s+TRIES/);
    expect(lines[N]).toContain(`plan_${N - 1}`);
    expect(lines[N + 1]).toBe(`${N} dead letters`);
  });

  it('dlq show: an event of 200k JSON lines is printed whole', () => {
    const event = validEvent('plan_1', {
      payload: { stepId: 's1', inputTokens: 1, outputTokens: 2, items: Array.from({ length: N }, (_, i) => i) },
    });
    const lines = formatDetail(letter({ event }));
    const start = lines.indexOf('event (verbatim):');
    expect(start).toBeGreaterThan(0);
    expect(lines.slice(start + 1).join('\n')).toBe(JSON.stringify(event, null, 2).replace(/^/gm, '  '));
    expect(lines.length - start - 1).toBeGreaterThan(N);
  });
});
