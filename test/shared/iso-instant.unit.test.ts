import fc from 'fast-check';
import { parseIsoInstant as dlqInstant } from '../../src/dead-letters/dead-letter-filter';
import { parseIsoInstant as readInstant } from '../../src/queries/query-args';
import { parseInstant } from '../../src/shared/iso-instant';

const iso = (raw: string) => {
  const r = parseInstant(raw);
  return r.ok ? r.date.toISOString() : r.problem;
};

describe('parseInstant: the one grammar of --from/--to, dlq --since/--until and the HTTP from/to', () => {
  it.each([
    ['2026-02-04', '2026-02-04T00:00:00.000Z'],
    ['2026-02-04T10:00', '2026-02-04T10:00:00.000Z'],
    ['2026-02-04 10:00:30', '2026-02-04T10:00:30.000Z'],
    ['2026-02-04T10:00:30.57Z', '2026-02-04T10:00:30.570Z'],
    ['2026-02-04t10:00:30.123456789z', '2026-02-04T10:00:30.123Z'],
    ['2026-02-04T10:00+02:00', '2026-02-04T08:00:00.000Z'],
    ['2026-02-04 01:00-0530', '2026-02-04T06:30:00.000Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    ['  1970-01-01  ', '1970-01-01T00:00:00.000Z'],
  ])('%s is %s (UTC unless an offset is given)', (raw, expected) => {
    expect(iso(raw)).toBe(expected);
  });

  it.each([
    'yesterday',
    '',
    '2026-02-30',
    '2025-02-29',
    '2026-13-01',
    '2026-00-10',
    '2026-02-04T24:00',
    '2026-02-04T10:60',
    '2026-02-04T10:00:61Z',
    '2026-02-04T10:00+24:00',
    '2026-2-4',
    '31/01/2026',
    '2026-02-04T10',
    '2026-02-04T10:00ZZ',
  ])('refuses "%s" naming the forms it takes', (raw) => {
    expect(iso(raw)).toBe(
      `"${raw}" is not an ISO-8601 date or time, e.g. 2026-02-04, 2026-02-04T10:00:00Z or 2026-02-04 10:00+02:00`,
    );
  });

  it('refuses years before 1970 as the typos they are', () => {
    expect(iso('0202-01-01')).toBe('"0202-01-01" is before 1970: nothing in the ledger is that old (a typo?)');
    expect(iso('0099-12-31T10:00Z')).toMatch(/is before 1970/);
    expect(iso('1969-12-31T23:59:59Z')).toMatch(/is before 1970/);
  });

  it('reads back every instant it is given as toISOString() writes it, and the same instant at any offset', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('1971-01-01T00:00:00Z'), max: new Date('9998-12-31T00:00:00Z'), noInvalidDate: true }),
        fc.integer({ min: -14 * 60, max: 14 * 60 }),
        (date, offsetMin) => {
          expect(iso(date.toISOString())).toBe(date.toISOString());
          const local = new Date(date.getTime() + offsetMin * 60_000).toISOString().slice(0, 23);
          const sign = offsetMin < 0 ? '-' : '+';
          const abs = Math.abs(offsetMin);
          const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
          expect(iso(`${local}${offset}`)).toBe(date.toISOString());
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the read commands and dlq accept and refuse the same text, with the same words', () => {
    const near = fc.oneof(
      fc.string(),
      fc
        .tuple(
          fc.date({
            min: new Date('1900-01-01T00:00:00Z'),
            max: new Date('2100-01-01T00:00:00Z'),
            noInvalidDate: true,
          }),
          fc.integer({ min: 0, max: 30 }),
          fc.string({ maxLength: 2 }),
        )
        .map(([d, cut, junk]) => {
          const text = d.toISOString().replace('T', cut % 2 ? 'T' : ' ');
          return text.slice(0, Math.max(10, text.length - cut)) + junk;
        }),
    );
    fc.assert(
      fc.property(near, (raw) => {
        const outcome = (f: (flag: string, raw: string) => Date) => {
          try {
            return f('--x', raw).toISOString();
          } catch (err) {
            return (err as Error).message;
          }
        };
        expect(outcome(readInstant)).toBe(outcome(dlqInstant));
      }),
      { numRuns: 500 },
    );
  });
});
