import fc from 'fast-check';
import { loadConfig } from '../../src/config/config';
import { recordJobs } from '../../src/publisher/delivery-pump';
import type { JournalRecord } from '../../src/publisher/journal-reader';
import { parseRecordKey, recordKey } from '../../src/publisher/journal-files';
import { MemoryBuffer } from '../../src/publisher/memory-buffer';
import {
  consumedShards,
  parseQueueShards,
  parseWorkerShards,
  queueShards,
  shardLabel,
  shardOfPlan,
  shardOfPrefix,
  shardPrefix,
  slotOfTag,
} from '../../src/queue/queue-shards';
import { prefixHashTag } from '../../src/config/redis-cluster-nodes';

/** The slot ranges `redis-cli --cluster create` gives three masters. */
const THREE_MASTERS = [
  [0, 5460],
  [5461, 10922],
  [10923, 16383],
];
const masterOf = (slot: number) => THREE_MASTERS.findIndex(([lo, hi]) => slot >= lo && slot <= hi);

describe('queue shards', () => {
  it('slots are computed as CLUSTER KEYSLOT does', () => {
    expect(slotOfTag('foo')).toBe(12182);
    expect(slotOfTag('bar')).toBe(5061);
    expect(slotOfTag('123456789')).toBe(0x31c3);
  });

  it('a plan id maps to one shard in range, the same every time; one shard is shard 0', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 64 }), (planId, n) => {
        const shard = shardOfPlan(planId, n);
        expect(shard).toBeGreaterThanOrEqual(0);
        expect(shard).toBeLessThan(n);
        expect(shardOfPlan(planId, n)).toBe(shard);
        expect(shardOfPlan(planId, 1)).toBe(0);
      }),
    );
  });

  it('plan ids spread evenly over 6 shards', () => {
    const counts = new Array<number>(6).fill(0);
    for (let i = 0; i < 60_000; i++) counts[shardOfPlan(`plan-${i}`, 6)]++;
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(500);
  });

  it('shard 0 is QUEUE_PREFIX itself (QUEUE_SHARDS=1 is the unsharded layout); others get their own hash tag', () => {
    expect(queueShards('{plan-ledger}', 1)).toEqual([{ index: 0, count: 1, prefix: '{plan-ledger}' }]);
    expect(queueShards('plan-ledger', 1).map((s) => s.prefix)).toEqual(['plan-ledger']);
    expect(shardPrefix('plan-ledger', 2, 3)).toBe('plan-ledger-s2of3');
    const prefixes = queueShards('{plan-ledger}', 6).map((s) => s.prefix);
    expect(prefixes[0]).toBe('{plan-ledger}');
    expect(new Set(prefixes).size).toBe(6);
    for (const p of prefixes.slice(1)) expect(p).toMatch(/^\{plan-ledger-s[1-5]of6-\d+\}$/);
    expect(new Set(prefixes.map((p) => slotOfTag(prefixHashTag(p)!))).size).toBe(6);
  });

  it.each([
    ['{plan-ledger}', 6],
    ['{x}', 6],
    ['app.{ledger}.q', 3],
    ['{t1}', 9],
  ])('%s with %i shards: each of 3 equal masters holds the same number of shards', (prefix, n) => {
    const perMaster = [0, 0, 0];
    for (const s of queueShards(prefix, n)) perMaster[masterOf(slotOfTag(prefixHashTag(s.prefix)!))]++;
    expect(perMaster).toEqual([n / 3, n / 3, n / 3]);
  });

  it('a shard prefix is recognised as such; other prefixes are not', () => {
    for (const n of [2, 6, 64])
      for (const s of queueShards('{plan-ledger}', n))
        expect(shardOfPrefix('{plan-ledger}', s.prefix)).toEqual(
          s.index === 0 ? { index: 0, count: 1 } : { index: s.index, count: n },
        );
    expect(shardOfPrefix('pl', 'pl-s2of3')).toEqual({ index: 2, count: 3 });
    expect(shardOfPrefix('{plan-ledger}', '{plan-ledger-s1of6-0}')).toBeNull();
    expect(shardOfPrefix('{plan-ledger}', '{other}')).toBeNull();
    expect(shardOfPrefix('pl', 'pl-s3of3')).toBeNull();
  });

  it('QUEUE_SHARDS and WORKER_SHARDS are checked with one line naming the variable', () => {
    expect(parseQueueShards(undefined)).toBe(1);
    expect(parseQueueShards('6')).toBe(6);
    expect(() => loadConfig({ QUEUE_SHARDS: '0' })).toThrow(
      'invalid configuration: QUEUE_SHARDS: "0" must be a whole number from 1 to 64',
    );
    expect(() => loadConfig({ QUEUE_SHARDS: 'six' })).toThrow('QUEUE_SHARDS: "six" must be a whole number');
    expect(() => loadConfig({ QUEUE_SHARDS: '6', WORKER_SHARDS: '1,6' })).toThrow(
      'WORKER_SHARDS: "1,6": shard 6 does not exist with QUEUE_SHARDS=6 (shards are 0-5)',
    );
    expect(() => loadConfig({ WORKER_SHARDS: 'a' })).toThrow('WORKER_SHARDS: "a": "a" is not a shard number or range');
    expect(loadConfig({ QUEUE_SHARDS: '6', WORKER_SHARDS: '4-5,0' })).toMatchObject({
      queueShards: 6,
      workerShards: [0, 4, 5],
    });
    expect(loadConfig({})).toMatchObject({ queueShards: 1, workerShards: null });
    expect(parseWorkerShards('all', 3)).toBeNull();
    expect(() => parseWorkerShards('3-1', 6)).toThrow('range 3-1 runs backwards');
  });

  it('a worker consumes its pinned shards, or every shard of every registered layout once', () => {
    const own = queueShards('{q}', 6);
    expect(consumedShards('{q}', 6, [1, 3], [1, 3, 6])).toEqual([own[1], own[3]]);
    const all = consumedShards('{q}', 6, null, [1, 3, 6]);
    expect(all.map((s) => shardLabel(s, 6))).toEqual(['0', '1', '2', '3', '4', '5', '1/3', '2/3']);
    expect(new Set(all.map((s) => s.prefix)).size).toBe(8);
    expect(consumedShards('{q}', 1, null, [1]).map((s) => s.prefix)).toEqual(['{q}']);
  });
});

describe('the publisher buffer with shards', () => {
  it('forms batches of one shard each, every event once, each shard in publish order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 300 }),
        fc.integer({ min: 1, max: 50 }),
        (shards, perJob) => {
          const buffer = new MemoryBuffer(10_000, 10_000_000, 4);
          shards.forEach((shard, i) => buffer.push(JSON.stringify({ i, shard }), shard));
          const batches = buffer.take(1_000, perJob);
          const seen: Array<{ i: number; shard: number }> = [];
          for (const b of batches) {
            expect(b.events.length).toBeLessThanOrEqual(perJob);
            for (const e of b.events) {
              const event = JSON.parse(e) as { i: number; shard: number };
              expect(event.shard).toBe(b.shard);
              seen.push(event);
            }
          }
          expect(seen.map((e) => e.i).sort((a, b) => a - b)).toEqual(shards.map((_, i) => i));
          for (let s = 0; s < 4; s++) {
            const order = seen.filter((e) => e.shard === s).map((e) => e.i);
            expect(order).toEqual([...order].sort((a, b) => a - b));
          }
          expect(buffer.idle).toBe(true);
        },
      ),
    );
  });

  it('without partial batches only full ones leave, from any shard', () => {
    const buffer = new MemoryBuffer(100, 1_000_000, 2);
    for (let i = 0; i < 5; i++) buffer.push(`{"i":${i}}`, 1);
    buffer.push('{"i":9}', 0);
    expect(buffer.take(10, 5, false).map((b) => [b.shard, b.events.length])).toEqual([[1, 5]]);
    expect(buffer.idle).toBe(false);
    expect(buffer.take(10, 5, true).map((b) => [b.shard, b.events.length])).toEqual([[0, 1]]);
  });

  it('the pump sends one shard per call: full jobs of the fullest; when idle, all lanes if they hold less than a job, else the fullest', () => {
    const buffer = new MemoryBuffer(10_000, 10_000_000, 3);
    const push = (shard: number, n: number) => {
      for (let i = 0; i < n; i++) buffer.push(`{"s":${shard}}`, shard);
    };
    const sent = (idle: boolean) => buffer.takeForSend(10, 10, idle).map((b) => [b.shard, b.events.length]);
    push(0, 2);
    push(1, 3);
    expect(sent(false)).toEqual([]);
    expect(sent(true)).toEqual([
      [0, 2],
      [1, 3],
    ]);
    push(0, 12);
    push(1, 25);
    push(2, 7);
    expect(sent(false)).toEqual([
      [1, 10],
      [1, 10],
    ]);
    expect(sent(false)).toEqual([[0, 10]]);
    expect(sent(false)).toEqual([]);
    expect(sent(true)).toEqual([[2, 7]]);
    expect(sent(true)).toEqual([
      [0, 2],
      [1, 5],
    ]);
    expect(buffer.idle).toBe(true);
  });

  it('a journal record is routed to its shard, and split by shard when it holds several', () => {
    const events = ['a', 'b', 'c', 'd', 'e', 'f'].map((p) => ({ planId: `plan-${p}`, seq: 1 }));
    const record = (list: unknown[]): JournalRecord =>
      ({ id: 'b-1', count: list.length, events: Buffer.from(JSON.stringify(list)) }) as JournalRecord;
    expect(recordJobs(record(events), 1)).toEqual([{ id: 'b-1', data: expect.any(Buffer), shard: 0 }]);
    const jobs = recordJobs(record(events), 3);
    const shardsOf = new Set(events.map((e) => shardOfPlan(e.planId, 3)));
    expect(jobs).toHaveLength(shardsOf.size);
    for (const job of jobs) {
      expect(job.id).toBe(`b-1.s${job.shard}`);
      const data = JSON.parse(job.data.toString()) as { v: number; events: typeof events };
      expect(data.v).toBe(1);
      for (const e of data.events) expect(shardOfPlan(e.planId, 3)).toBe(job.shard);
    }
    expect(jobs.reduce((n, j) => n + (JSON.parse(j.data.toString()) as { events: unknown[] }).events.length, 0)).toBe(
      6,
    );
    const one = events.filter((e) => shardOfPlan(e.planId, 3) === jobs[0].shard);
    expect(recordJobs(record(one), 3)).toEqual([{ id: 'b-1', data: expect.any(Buffer), shard: jobs[0].shard }]);
    const garbage = { id: 'b-2', count: 1, events: Buffer.from('[{') } as JournalRecord;
    expect(recordJobs(garbage, 3)).toEqual([{ id: 'b-2', data: expect.any(Buffer), shard: 0 }]);
    // a record whose line names its shard in this layout goes there as it is (not parsed: not even JSON here)
    expect(recordJobs({ ...garbage, shard: 2, shards: 3 }, 3)).toEqual([
      { id: 'b-2', data: expect.any(Buffer), shard: 2 },
    ]);
    // named in another layout: routed by its events' plan ids
    expect(recordJobs({ ...record(events), shard: 5, shards: 6 }, 3)).toEqual(jobs);
  });

  it('a journal record key names its job id, and with several shards its shard', () => {
    const id = 'b-0f8fad5b-d9cb-469f-a165-70867728950e';
    expect(recordKey(id, 0, 1)).toBe(id);
    expect(recordKey(id, 4, 6)).toBe(`${id}#4/6`);
    expect(parseRecordKey(id)).toEqual({ id });
    expect(parseRecordKey(`${id}#4/6`)).toEqual({ id, shard: 4, shards: 6 });
    for (const bad of [`${id}#6/6`, `${id}#4`, `${id}#-1/6`, 'b-1', `${id}.s2`, `x${id}`])
      expect(parseRecordKey(bad)).toBeUndefined();
  });
});
