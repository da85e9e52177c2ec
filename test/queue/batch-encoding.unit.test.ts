/** The job data bytes the publisher and dlq replay hand to Redis parse back to EventBatchJobData, whatever the text. */
import { encodeBatch, encodeRecord } from '../../src/queue/batch-encoding';

describe('batch encoding', () => {
  const events = [
    { eventId: 'a', text: 'plain ascii' },
    { eventId: 'b', text: 'accents: déjà vu, ñ, ü' },
    { eventId: 'c', text: 'emoji 😀 and CJK 漢字, quote " and backslash \\' },
    { eventId: 'd', text: 'line\nbreak\u2028separator' },
  ];
  const texts = events.map((e) => JSON.stringify(e));

  it('encodes a batch of JSON texts as {"v":1,"events":[...]} in UTF-8', () => {
    expect(JSON.parse(encodeBatch(texts).toString('utf8'))).toEqual({ v: 1, events });
    expect(JSON.parse(encodeBatch([texts[2]]).toString('utf8'))).toEqual({ v: 1, events: [events[2]] });
    expect(encodeBatch(texts).length).toBe(Buffer.byteLength(`{"v":1,"events":[${texts.join(',')}]}`));
  });

  it('takes the events as UTF-8 bytes too, and adds replay counts after them (dlq replay)', () => {
    const bytes = texts.map((t) => Buffer.from(t, 'utf8'));
    expect(JSON.parse(encodeBatch(bytes, [1, 2, 3, 4]).toString('utf8'))).toEqual({
      v: 1,
      events,
      replayCounts: [1, 2, 3, 4],
    });
    expect(encodeBatch([texts[0], bytes[1]], [0, 7]).toString('utf8')).toBe(
      JSON.stringify({ v: 1, events: events.slice(0, 2), replayCounts: [0, 7] }),
    );
    expect(() => encodeBatch(bytes, [1])).toThrow('encodeBatch: 4 events but 1 replay counts');
  });

  it('wraps a journal record (an encoded events array) the same way', () => {
    const array = Buffer.from(`[${texts.join(',')}]`, 'utf8');
    expect(JSON.parse(encodeRecord(array).toString('utf8'))).toEqual({ v: 1, events });
  });
});
