/**
 * A replay sends each event as the bytes it is stored as: the writer lays a record out with its
 * event last and says where it starts (`pl:replay`), and a claim cuts the event out inside Redis.
 * Whatever the event (any JSON value, any text), a claim must give the bytes JSON.stringify gives
 * for it, the same as parsing the whole record (the path for entries an older writer stored, or
 * whose bytes no longer match their layout) gives; and the job a replay adds must parse to the
 * EventBatchJobData of those events. Real Redis, a prefix per test.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { DeadLetter } from '../../src/dead-letters/dead-letter';
import { encodeDeadLetter } from '../../src/dead-letters/dead-letter-codec';
import { DeadLetterRepository } from '../../src/dead-letters/dead-letter.repository';
import { DeadLetterService } from '../../src/dead-letters/dead-letter.service';
import type { EventBatchJobData } from '../../src/queue/queue-names';
import { createLogger } from '../../src/shared/logger';
import { QueueFixture, letter } from './dead-letter.fixtures';

const logger = createLogger({ level: 'silent' });

/** What a JSON round trip makes of a value (-0 becomes 0): what any replay can send. */
const asSent = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? 'null');

/** Events a byte count or a text search would get wrong. */
const HOSTILE: unknown[] = [
  { eventId: randomUUID(), type: 'step.completed', payload: { outputContent: 'quote " backslash \\ ,"event":{} }' } },
  { eventId: randomUUID(), text: 'emoji 😀, CJK 漢字, accents déjà, separators \u2028\u2029, nul \u0000' },
  { eventId: randomUUID(), lone: 'half a pair \ud800 and \udfff', event: { event: ',"event":' } },
  null,
  'a string, not an object',
  42.5,
  [1, 'two', { three: 3 }],
  {},
];

/** A stored letter as an older writer left it: the record as BullMQ encodes it, event third, no `pl:replay`. */
async function writeWithoutLayout(q: QueueFixture, letters: DeadLetter[]): Promise<void> {
  await q.deadLetters.addBulk(letters.map((l) => ({ name: l.kind, data: l, opts: { jobId: l.id } })));
  await new DeadLetterRepository(q.deadLetters).addSummaries(letters.map((l) => ({ id: l.id })));
}

describe('dead letters: a replay sends the events as stored', () => {
  let q: QueueFixture;
  let repository: DeadLetterRepository;
  beforeEach(() => {
    q = new QueueFixture();
    repository = new DeadLetterRepository(q.deadLetters);
  });
  afterEach(async () => q.close());

  it('the writer stores the record with its event last, and the record reads back as the letter', async () => {
    const letters = HOSTILE.map((event, i) => letter({ event, replayCount: i }));
    await q.write(...letters);
    for (const l of letters) {
      const raw = await q.redis.hget(q.deadLetters.toKey(l.id), 'data');
      expect(Object.keys(JSON.parse(raw!)).at(-1)).toBe('event');
      expect(raw).toBe(encodeDeadLetter(l).bytes.toString('utf8'));
      expect(await repository.get(l.id)).toEqual(asSent(l));
      expect(await q.redis.hget(q.deadLetters.toKey(l.id), 'pl:replay')).toBe(encodeDeadLetter(l).replayField);
    }
  });

  it('property: a claim gives JSON.stringify(event), its id and replay count, whether the entry has the layout or was stored without it', async () => {
    const item = fc.record({ event: fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 }), replayCount: fc.nat(1_000) });
    await fc.assert(
      fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 5 }), async (items) => {
        const laidOut = items.map(({ event, replayCount }) => letter({ event, replayCount }));
        const plain = items.map(({ event, replayCount }) => letter({ event, replayCount }));
        await q.write(...laidOut);
        await writeWithoutLayout(q, plain);
        const token = `replay-${randomUUID()}`;
        const claimed = await repository.claim(
          [...laidOut, ...plain].map((l) => l.id),
          token,
        );
        expect(claimed.map((c) => c.id)).toEqual([...laidOut, ...plain].map((l) => l.id));
        for (const [i, l] of [...laidOut, ...plain].entries()) {
          expect(claimed[i].eventJson.toString('utf8')).toBe(JSON.stringify(l.event) ?? 'null');
          expect(claimed[i].replayCount).toBe(l.replayCount);
          expect(claimed[i].eventId).toBe(l.eventId);
        }
        // the layout is there for the first half only
        expect(await q.redis.hexists(q.deadLetters.toKey(laidOut[0].id), 'pl:replay')).toBe(1);
        expect(await q.redis.hexists(q.deadLetters.toKey(plain[0].id), 'pl:replay')).toBe(0);
        await repository.remove(claimed.map((c) => c.id));
      }),
      { numRuns: 60 },
    );
  });

  it('a replay adds one job whose data is the EventBatchJobData of the stored events, replay counts raised by one', async () => {
    const letters = HOSTILE.map((event, i) => letter({ event, replayCount: i % 3 }));
    await q.write(...letters.slice(0, 4));
    await writeWithoutLayout(q, letters.slice(4));
    const dlq = new DeadLetterService({ deadLetters: q.deadLetters, events: q.events, logger });

    const summary = await dlq.replay({ filter: {} }, {});

    expect(summary.replayed).toBe(letters.length);
    const jobs = await q.events.getJobs(['waiting'], 0, -1, true);
    expect(jobs).toHaveLength(1);
    const expected: EventBatchJobData = {
      v: 1,
      events: letters.map((l) => asSent(l.event)),
      replayCounts: letters.map((l) => l.replayCount + 1),
    };
    expect(jobs[0].data).toEqual(expected);
    expect(await q.deadLetterIds()).toEqual([]);
  });

  it('an entry whose bytes no longer match its layout (data rewritten, or the field wrong) is parsed instead, and gives its own event', async () => {
    const [rewritten, wrongLength, garbled] = await q.write(letter(), letter(), letter());
    const newEvent = { eventId: randomUUID(), note: 'rewritten after it was dead-lettered' };
    const job = await q.deadLetters.getJob(rewritten.id);
    await job!.updateData({ ...rewritten, event: newEvent });
    const field = (await q.redis.hget(q.deadLetters.toKey(wrongLength.id), 'pl:replay'))!;
    await q.redis.hset(
      q.deadLetters.toKey(wrongLength.id),
      'pl:replay',
      field.replace(/^\d+/, (n) => String(Number(n) - 1)),
    );
    await q.redis.hset(q.deadLetters.toKey(garbled.id), 'pl:replay', 'not a layout');

    const claimed = await repository.claim([rewritten.id, wrongLength.id, garbled.id], 'replay-test');

    expect(claimed.map((c) => asSent(JSON.parse(c.eventJson.toString('utf8'))))).toEqual([
      newEvent,
      asSent(wrongLength.event),
      asSent(garbled.event),
    ]);
    expect(claimed.map((c) => c.eventId)).toEqual([rewritten.eventId, wrongLength.eventId, garbled.eventId]);
  });
});
