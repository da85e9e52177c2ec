import {
  DeadLetterInputError,
  matchesFilter,
  parseDuration,
  parseFilter,
  parseIsoInstant,
  parseSelection,
} from '../../src/dead-letters/dead-letter-filter';
import { createProgressReporter } from '../../src/dead-letters/replay-progress';
import { formatAge } from '../../src/dead-letters/dead-letter-format';
import { letter } from './dead-letter.fixtures';

describe('dead-letter selection flags', () => {
  it('reads ISO dates and times as UTC unless an offset is given', () => {
    expect(parseIsoInstant('--since', '2025-01-31').toISOString()).toBe('2025-01-31T00:00:00.000Z');
    expect(parseIsoInstant('--since', '2025-01-31T14:05').toISOString()).toBe('2025-01-31T14:05:00.000Z');
    expect(parseIsoInstant('--since', '2025-01-31T14:05:06.5+02:00').toISOString()).toBe('2025-01-31T12:05:06.500Z');
  });

  it.each(['yesterday', '2025-02-30', '2025-13-01', '2025-01-31T25:00Z', '31/01/2025', ''])(
    'rejects the date "%s" naming the flag',
    (raw) => {
      expect(() => parseIsoInstant('--until', raw)).toThrow(/^--until: ".*" is not an ISO-8601 date or time/);
    },
  );

  it('reads durations and rejects malformed ones', () => {
    expect(parseDuration('--older-than', '30d')).toBe(30 * 86_400_000);
    expect(parseDuration('--older-than', '90s')).toBe(90_000);
    expect(parseDuration('--older-than', '2w')).toBe(14 * 86_400_000);
    for (const bad of ['3x', '30', 'd', '0d', '-1d', '1.5h']) {
      expect(() => parseDuration('--older-than', bad)).toThrow(`--older-than: "${bad}" is not a positive duration`);
    }
  });

  it('parses filters and refuses contradictions', () => {
    expect(parseFilter({ type: 'step.completed, step.failed', kind: 'invalid', plan: 'p1', limit: '5' })).toEqual({
      types: ['step.completed', 'step.failed'],
      kinds: ['invalid'],
      planId: 'p1',
      limit: 5,
    });
    expect(() => parseFilter({ kind: 'broken' })).toThrow(
      '--kind: "broken" is not one of invalid, retries-exhausted, unprocessable',
    );
    expect(() => parseFilter({ limit: '0' })).toThrow('--limit: "0" must be a whole number');
    expect(() => parseFilter({ since: '2025-02-01', until: '2025-01-01' })).toThrow(
      '--since 2025-02-01 is not before --until 2025-01-01',
    );
  });

  it('takes exactly one of ids, --all or filters', () => {
    expect(parseSelection({ ids: ['dl-a', 'dl-a', 'dl-b'] }, 'dlq replay')).toEqual({ ids: ['dl-a', 'dl-b'] });
    expect(parseSelection({ all: true }, 'dlq replay')).toEqual({ filter: {} });
    expect(parseSelection({ all: true, limit: '3' }, 'dlq replay')).toEqual({ filter: { limit: 3 } });
    const cases: Array<[object, string]> = [
      [{ ids: ['dl-a'], all: true }, 'give dead-letter ids or --all, not both'],
      [{ ids: ['dl-a'], kind: 'invalid' }, 'give dead-letter ids or filters'],
      [{ all: true, kind: 'invalid' }, '--all selects every dead letter'],
      [{}, 'say which dead letters'],
    ];
    for (const [raw, message] of cases) {
      let error: unknown;
      try {
        parseSelection(raw, 'dlq purge');
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(DeadLetterInputError);
      expect((error as Error).message).toContain(message);
    }
  });

  it('turns --older-than into a cutoff, keeping an earlier --until', () => {
    const now = new Date('2025-03-01T00:00:00Z');
    expect(parseSelection({ olderThan: '1d' }, 'dlq purge', now)).toEqual({
      filter: { until: new Date('2025-02-28T00:00:00Z') },
    });
    expect(parseSelection({ olderThan: '1d', until: '2025-01-01' }, 'dlq purge', now)).toEqual({
      filter: { until: new Date('2025-01-01T00:00:00Z') },
    });
  });

  it('matches on kind, type, plan and the dead-lettered time (since inclusive, until exclusive)', () => {
    const dl = letter({
      kind: 'invalid',
      type: 'step.started',
      planId: 'p1',
      lastFailedAt: '2025-01-10T00:00:00.000Z',
    });
    expect(matchesFilter(dl, {})).toBe(true);
    expect(matchesFilter(dl, { kinds: ['retries-exhausted'] })).toBe(false);
    expect(matchesFilter(dl, { types: ['step.started', 'x'] })).toBe(true);
    expect(matchesFilter(dl, { planId: 'p2' })).toBe(false);
    expect(matchesFilter(dl, { since: new Date('2025-01-10T00:00:00Z') })).toBe(true);
    expect(matchesFilter(dl, { until: new Date('2025-01-10T00:00:00Z') })).toBe(false);
    expect(matchesFilter({ ...dl, type: null }, { types: ['step.started'] })).toBe(false);
  });
});

describe('replay progress and ages', () => {
  it('redraws one bar on a terminal and prints plain lines elsewhere', () => {
    let clock = 0;
    const tty: string[] = [];
    const bar = createProgressReporter(
      { isTTY: true, write: (s: string) => tty.push(s) },
      { now: () => clock, width: 10 },
    );
    bar.update({ done: 100, total: 400 });
    clock += 10;
    bar.update({ done: 200, total: 400 }); // too soon: skipped
    clock += 500;
    bar.update({ done: 400, total: 400 });
    bar.finish();
    expect(tty).toEqual(['\rreplay [###-------] 100/400  25%', '\rreplay [##########] 400/400 100%', '\n']);

    const plain: string[] = [];
    const lines = createProgressReporter({ write: (s: string) => plain.push(s) }, { now: () => clock });
    lines.update({ done: 100, total: 400 });
    lines.update({ done: 200, total: 400 });
    lines.update({ done: 400, total: 400 });
    lines.finish();
    expect(plain).toEqual(['replay: 100/400 (25%)\n', 'replay: 400/400 (100%)\n']);
  });

  it('formats ages with their two largest units', () => {
    expect(formatAge(0)).toBe('0s');
    expect(formatAge(42)).toBe('42s');
    expect(formatAge(3 * 86_400 + 4 * 3_600 + 5)).toBe('3d 4h');
    expect(formatAge(3_600 + 7)).toBe('1h');
  });
});
