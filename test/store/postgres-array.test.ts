import * as fc from 'fast-check';
import { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { openDataSource } from '../../src/store/data-source';
import { pgArrayLiteral, pgColumnLiteral } from '../../src/store/sql/postgres-array';
import { PG_ADMIN_URL } from '../support/databases';

// The store's unnest statements send every column as one array literal: whatever a row holds must
// come back from PostgreSQL exactly as it went in.
describe('pgArrayLiteral on PostgreSQL', () => {
  let ds: DataSource;
  beforeAll(async () => {
    ds = await openDataSource(parseDatabaseUrl(PG_ADMIN_URL), { poolSize: 1 });
  });
  afterAll(async () => ds?.destroy());

  const roundTrip = async (values: unknown[], type: string): Promise<unknown[]> => {
    const [row] = await ds.query(`SELECT $1::${type}[] AS a`, [pgArrayLiteral(values)]);
    return row.a as unknown[];
  };

  it('keeps strings that look like array syntax, NULL, blanks and escapes', async () => {
    const tricky = [
      '',
      'NULL',
      'null',
      ' ',
      ' lead',
      'trail ',
      'a,b',
      '{x}',
      '"q"',
      'back\\slash',
      '\\"',
      'é😀',
      '\n\t',
      '{"json":"x\\"y"}',
    ];
    expect(await roundTrip(tricky, 'text')).toEqual(tricky);
    expect(await roundTrip([null, 'x', undefined], 'varchar')).toEqual([null, 'x', null]);
  });

  it('round-trips any string (no NUL: PostgreSQL text cannot hold it), 200 runs', async () => {
    const noNul = fc.string({ unit: 'binary' }).map((s) => s.replace(/\u0000/g, ''));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(noNul, { nil: null }), { maxLength: 20 }), async (values) => {
        expect(await roundTrip(values, 'text')).toEqual(values);
      }),
      { numRuns: 200 },
    );
  });

  it('round-trips integers, booleans and timestamps to the millisecond', async () => {
    expect(await roundTrip([0, -1, 2_147_483_647, null], 'int')).toEqual([0, -1, 2_147_483_647, null]);
    expect(await roundTrip([true, false, null], 'boolean')).toEqual([true, false, null]);
    const dates = [new Date('2026-11-21T10:00:00.123Z'), new Date(0), null];
    expect(await roundTrip(dates, 'timestamptz(3)')).toEqual(dates);
  });

  it('writes a run of one instant, and instants alternating, each as its own text', async () => {
    const a = new Date('2026-11-21T10:00:00.123Z');
    const b = new Date('1999-12-31T23:59:59.999Z');
    const dates = [a, new Date(a.getTime()), a, b, a, null, b, new Date(b.getTime())];
    expect(await roundTrip(dates, 'timestamptz(3)')).toEqual(dates);
    expect(pgArrayLiteral([a, a])).toBe(`{${a.toISOString()},${a.toISOString()}}`);
  });

  it('pgColumnLiteral: the literal of one property of every row', () => {
    const rows = [
      { id: 'x', at: new Date(5), n: 1 },
      { id: 'y"z', at: new Date(5), n: null },
      { id: null, at: undefined, n: 0 },
    ];
    for (const p of ['id', 'at', 'n'] as const)
      expect(pgColumnLiteral(rows, p)).toBe(pgArrayLiteral(rows.map((r) => r[p])));
    expect(pgColumnLiteral([], 'id')).toBe('{}');
  });

  it('refuses values it cannot store faithfully', () => {
    // an invalid Date right after a valid one is still refused
    expect(() => pgArrayLiteral([new Date(0), new Date('nope')])).toThrow('cannot store an invalid Date');
    expect(() => pgArrayLiteral([NaN])).toThrow('cannot store the number NaN');
    expect(() => pgArrayLiteral([new Date('nope')])).toThrow('cannot store an invalid Date');
    expect(() => pgArrayLiteral([{ a: 1 }])).toThrow('cannot store a value of type object in an array column');
  });
});
