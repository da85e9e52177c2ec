/**
 * RepeatedLog: an error repeating in a loop becomes one line per kind and window, plus the count.
 * Pure logic: a real pino logger writing to an array, Jest's fake timers for the window.
 */
import { Writable } from 'node:stream';
import { createLogger } from '../../src/shared/logger';
import { RepeatedLog } from '../../src/shared/repeated-log';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, logger: createLogger({ destination: sink as never }) };
}

describe('RepeatedLog', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick'] }));
  afterEach(() => jest.useRealTimers());

  it('logs the first of a kind whole, counts the rest of the window, then says how many', async () => {
    const { lines, logger } = capture();
    const log = new RepeatedLog(logger, 'worker error', {
      kindOf: (e) => ((e as Error).message.startsWith('OOM') ? 'oom' : (e as Error).message),
    });
    for (let i = 0; i < 1_000; i++) log.report(new Error(`OOM command not allowed, script line ${i}`));
    log.report(new Error('NOSCRIPT'));
    await new Promise(setImmediate);
    expect(lines.map((l) => [l.msg, (l.err as { message: string }).message])).toEqual([
      ['worker error', 'OOM command not allowed, script line 0'],
      ['worker error', 'NOSCRIPT'],
    ]);
    jest.advanceTimersByTime(10_000);
    await new Promise(setImmediate);
    expect(lines.slice(2)).toEqual([
      expect.objectContaining({
        msg: 'worker error (repeated)',
        repeated: 999,
        windowMs: 10_000,
        message: 'OOM command not allowed, script line 0',
      }),
    ]);
    // a new window: the next one is logged whole again
    log.report(new Error('OOM again'));
    log.report(new Error('OOM again'));
    log.flush();
    await new Promise(setImmediate);
    expect(lines.slice(3).map((l) => [l.msg, l.repeated])).toEqual([
      ['worker error', undefined],
      ['worker error (repeated)', 1],
    ]);
  });

  it('an error that does not repeat gets no count line', async () => {
    const { lines, logger } = capture();
    const log = new RepeatedLog(logger, 'could not free Redis memory', { windowMs: 60_000, level: 'warn' });
    log.report(new Error('once'));
    jest.advanceTimersByTime(60_000);
    log.flush();
    await new Promise(setImmediate);
    expect(lines.map((l) => [l.msg, l.level])).toEqual([['could not free Redis memory', 40]]);
  });
});
