import { splitRange } from '../../src/queries/rollup-totals.query';

/**
 * How the analytics split a range between the rollups (whole UTC days) and the rows: at each end
 * the shorter part is read from the rows, added (the part in the range) or subtracted (the rest
 * of the rollups' day). The property test (analytics-rollups.property.test.ts) checks the sums.
 */
const at = (iso: string) => new Date(iso);
const iso = (r: { from?: Date; to?: Date }) => ({ from: r.from?.toISOString(), to: r.to?.toISOString() });

describe('splitRange', () => {
  it('reads whole days from the rollups only', () => {
    expect(splitRange({ from: at('2026-11-01T00:00:00Z'), to: at('2026-11-30T00:00:00Z') })).toEqual({
      days: { from: '2026-11-01', to: '2026-11-30' },
      edges: [],
      minus: [],
    });
    expect(splitRange({})).toEqual({ days: {}, edges: [], minus: [] });
  });

  it('adds a short part at the start and subtracts the short rest of the last day (a range ending now)', () => {
    const split = splitRange({ from: at('2026-10-30T21:57:00Z'), to: at('2026-11-29T21:57:00Z') });
    expect(split.days).toEqual({ from: '2026-10-31', to: '2026-11-30' });
    expect(split.edges.map(iso)).toEqual([{ from: '2026-10-30T21:57:00.000Z', to: '2026-10-31T00:00:00.000Z' }]);
    expect(split.minus.map(iso)).toEqual([{ from: '2026-11-29T21:57:00.000Z', to: '2026-11-30T00:00:00.000Z' }]);
  });

  it('subtracts the short start of the first day and adds a short part of the last', () => {
    const split = splitRange({ from: at('2026-11-01T02:00:00Z'), to: at('2026-11-05T03:00:00Z') });
    expect(split.days).toEqual({ from: '2026-11-01', to: '2026-11-05' });
    expect(split.edges.map(iso)).toEqual([{ from: '2026-11-05T00:00:00.000Z', to: '2026-11-05T03:00:00.000Z' }]);
    expect(split.minus.map(iso)).toEqual([{ from: '2026-11-01T00:00:00.000Z', to: '2026-11-01T02:00:00.000Z' }]);
  });

  it('within one day: the rows of the range when they are the shorter part, else the day minus the rest', () => {
    expect(splitRange({ from: at('2026-11-01T10:00:00Z'), to: at('2026-11-01T12:00:00Z') })).toEqual({
      days: null,
      edges: [{ from: at('2026-11-01T10:00:00Z'), to: at('2026-11-01T12:00:00Z') }],
      minus: [],
    });
    const split = splitRange({ from: at('2026-11-01T01:00:00Z'), to: at('2026-11-01T23:00:00Z') });
    expect(split.days).toEqual({ from: '2026-11-01', to: '2026-11-02' });
    expect(split.edges).toEqual([]);
    expect(split.minus.map(iso)).toEqual([
      { from: '2026-11-01T00:00:00.000Z', to: '2026-11-01T01:00:00.000Z' },
      { from: '2026-11-01T23:00:00.000Z', to: '2026-11-02T00:00:00.000Z' },
    ]);
  });

  it('across one midnight with both parts read from the rows: no rollup day', () => {
    const split = splitRange({ from: at('2026-11-01T20:00:00Z'), to: at('2026-11-02T04:00:00Z') });
    expect(split.days).toBeNull();
    expect(split.edges.map(iso)).toEqual([
      { from: '2026-11-01T20:00:00.000Z', to: '2026-11-02T00:00:00.000Z' },
      { from: '2026-11-02T00:00:00.000Z', to: '2026-11-02T04:00:00.000Z' },
    ]);
  });
});
