/**
 * The durability watermark's memory side: `MemoryBuffer.lowestTicket()` is the lowest ticket of an
 * event still queued or waiting for a retry, whatever sequence of pushes, takes, sends, failures
 * and spills brought it there (batches in flight are the pump's to count, see whenDurable).
 */
import fc from 'fast-check';
import { Batch, MemoryBuffer } from '../../src/publisher/memory-buffer';

type Op =
  | { kind: 'push'; shard: number }
  | { kind: 'take'; jobs: number; partial: boolean }
  | { kind: 'sent'; pick: number }
  | { kind: 'failed'; pick: number }
  | { kind: 'spill'; refuseAfter: number };

const op = (shards: number): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('push' as const), shard: fc.nat(shards - 1) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('take' as const),
        jobs: fc.integer({ min: 1, max: 3 }),
        partial: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('sent' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('failed' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('spill' as const), refuseAfter: fc.nat(4) }) },
  );

describe('MemoryBuffer durability tickets', () => {
  it('lowestTicket is the lowest ticket of an event held (queued or to retry), for any history', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 3 })
          .chain((shards) => fc.tuple(fc.constant(shards), fc.array(op(shards), { maxLength: 120 }))),
        ([shards, ops]) => {
          const memory = new MemoryBuffer(10_000, 10_000_000, shards);
          const held = new Map<number, string>(); // ticket -> where: 'memory' or 'flight'
          const ticketOf = new Map<string, number>();
          const inFlight: Batch[] = [];
          let next = 1;
          for (const o of ops) {
            if (o.kind === 'push') {
              const json = `{"n":${next}}`;
              ticketOf.set(json, next);
              memory.push(json, o.shard, next);
              held.set(next++, 'memory');
            } else if (o.kind === 'take') {
              for (const b of memory.takeForSend(o.jobs, 2, o.partial)) {
                inFlight.push(b);
                for (const e of b.events) held.set(ticketOf.get(e)!, 'flight');
              }
            } else if ((o.kind === 'sent' || o.kind === 'failed') && inFlight.length > 0) {
              const [b] = inFlight.splice(o.pick % inFlight.length, 1);
              if (o.kind === 'sent') {
                memory.release([b]);
                for (const e of b.events) held.delete(ticketOf.get(e)!);
              } else {
                memory.restore([b]);
                for (const e of b.events) held.set(ticketOf.get(e)!, 'memory');
              }
            } else if (o.kind === 'spill') {
              let kept = 0;
              memory.spill(2, Number.MAX_SAFE_INTEGER, (b) => {
                if (kept++ >= o.refuseAfter) return false;
                for (const e of b.events) held.delete(ticketOf.get(e)!);
                return true;
              });
            }
            const inMemory = [...held].filter(([, where]) => where === 'memory').map(([t]) => t);
            expect(memory.lowestTicket()).toBe(inMemory.length === 0 ? Infinity : Math.min(...inMemory));
            for (const b of inFlight) expect(b.firstTicket).toBe(Math.min(...b.events.map((e) => ticketOf.get(e)!)));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
