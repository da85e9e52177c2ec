import { Pacer } from '../../src/retention/retention-batch';

/** Keeps the CPU busy for `ms`: the work a rest is measured against. */
function work(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('retention rests between transactions (Pacer)', () => {
  it('rests nothing at 0 %', async () => {
    const pacer = new Pacer(0);
    work(5);
    await pacer.rest();
    expect(pacer.pausedMs).toBe(0);
  });

  it('rests in proportion to the work since its last rest, not since it was made', async () => {
    const pacer = new Pacer(100);
    work(20);
    await pacer.rest();
    // a timer may fire a little early, never much
    expect(pacer.pausedMs).toBeGreaterThanOrEqual(15);
    const first = pacer.pausedMs;
    await pacer.rest();
    // nothing worked since: no second rest of the first one's length
    expect(pacer.pausedMs - first).toBeLessThan(first);
  });

  it('a stop ends a rest at once, and no rest starts after it', async () => {
    const stop = new AbortController();
    // 100 ms of work at 10,000 %: a 10 s rest, longer than this test may take, unless the stop ends it
    const pacer = new Pacer(10_000, stop.signal);
    work(100);
    setTimeout(() => stop.abort(), 50);
    await pacer.rest();
    work(100);
    const paused = pacer.pausedMs;
    await pacer.rest();
    expect(pacer.pausedMs).toBe(paused);
  }, 5_000);
});
