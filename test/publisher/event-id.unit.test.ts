import type { eventIdV7 as EventIdV7 } from '../../src/publisher/event-id';

/**
 * The generator keeps its last ms in module state, and these tests move it to 2030-2032: each test
 * gets a module of its own, so none depends on which ran before it (or on their order).
 */
function freshGenerator(): typeof EventIdV7 {
  let fn: typeof EventIdV7 | undefined;
  jest.isolateModules(() => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- isolateModules loads a module of its own only through require
    fn = (require('../../src/publisher/event-id') as { eventIdV7: typeof EventIdV7 }).eventIdV7;
  });
  return fn!;
}

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The Unix ms in an id's first 48 bits. */
const msOf = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
const counterOf = (id: string) => parseInt(id.slice(15, 18), 16);

describe('eventIdV7 (the ids the publisher stamps)', () => {
  let eventIdV7: typeof EventIdV7;
  beforeEach(() => {
    eventIdV7 = freshGenerator();
  });

  it('is an RFC 9562 version 7 UUID carrying the time in ms', () => {
    const before = Date.now();
    const id = eventIdV7();
    const after = Date.now();
    expect(id).toMatch(V7);
    expect(msOf(id)).toBeGreaterThanOrEqual(before);
    expect(msOf(id)).toBeLessThanOrEqual(after);
    expect(msOf(eventIdV7(Date.UTC(2030, 0, 1) + 5))).toBe(Date.UTC(2030, 0, 1) + 5);
  });

  it('sorts in the order it was stamped, within one ms and past 4096 ids in one ms', () => {
    const at = Date.UTC(2031, 5, 1);
    const ids = Array.from({ length: 10_000 }, () => eventIdV7(at));
    expect(ids.every((id) => V7.test(id))).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    // the counter starts below 2048, so at least 2048 ids fit the ms itself; then the time borrows ms
    expect(msOf(ids[0])).toBe(at);
    expect(counterOf(ids[0])).toBeLessThan(0x800);
    expect(msOf(ids[2047])).toBe(at);
    expect(msOf(ids.at(-1)!)).toBeGreaterThan(at);
    expect(msOf(ids.at(-1)!)).toBeLessThanOrEqual(at + 5);
  });

  it('stays ordered when the clock steps back', () => {
    const a = eventIdV7(Date.UTC(2032, 0, 1, 12));
    const b = eventIdV7(Date.UTC(2032, 0, 1, 11));
    expect(b > a).toBe(true);
    expect(msOf(b)).toBe(Date.UTC(2032, 0, 1, 12));
  });

  it('is unique: 200k ids; the random tail differs from one id to the next', () => {
    const ids = new Set(Array.from({ length: 200_000 }, () => eventIdV7()));
    expect(ids.size).toBe(200_000);
    // the 62 random bits differ between neighbours (not a counter)
    const tails = Array.from({ length: 1_000 }, () => eventIdV7().slice(19));
    expect(new Set(tails).size).toBe(1_000);
  });
});
