/**
 * The approval channels on a real Redis: what the worker announces after a commit wakes the watches
 * of that approvalId in serve, and only those; a message that arrives between a watch's read and its
 * wait is not lost; a watch without a message ends at its time or on abort.
 */
import { announceApprovalChanges, approvalChannels, ApprovalWakeups } from '../../src/queue/approval-signals';
import { openRedis, uniquePrefix } from '../worker/helpers/queue-harness';

jest.setTimeout(30_000);

/** A wait longer than a test may run: one that ends while the test runs was woken (or aborted). */
const LONGER_THAN_THE_TEST_MS = 3_600_000;

describe('approval wakeups over Redis pub/sub', () => {
  const prefix = uniquePrefix('approval-signals');
  const publisher = openRedis();
  let wakeups: ApprovalWakeups;

  beforeAll(async () => {
    wakeups = new ApprovalWakeups(openRedis(), prefix);
    await wakeups.start();
  });
  afterAll(async () => {
    wakeups.close();
    publisher.disconnect();
  });

  const announce = (approvalId: string, change: 'requested' | 'decided' = 'decided') =>
    announceApprovalChanges(publisher, prefix, [{ change, approvalId, planId: 'p' }]);

  it('names the channels under the queue prefix', () => {
    expect(approvalChannels('{pl}')).toEqual({
      requested: '{pl}:approvals:requested',
      decided: '{pl}:approvals:decided',
    });
  });

  it('wakes the watches of the announced approval, not the others', async () => {
    const mine = wakeups.watch('as_1');
    const other = wakeups.watch('as_2');
    let otherWoke = false;
    const otherWait = other.wait(LONGER_THAN_THE_TEST_MS).then(() => (otherWoke = true));
    const woke = mine.wait(LONGER_THAN_THE_TEST_MS);
    announce('as_1');
    await woke;
    // messages arrive in order: once a later one has woken its watch, the first was handled everywhere
    const later = wakeups.watch('as_1_later');
    const laterWoke = later.wait(LONGER_THAN_THE_TEST_MS);
    announce('as_1_later');
    await laterWoke;
    later.close();
    expect(otherWoke).toBe(false);
    mine.close();
    other.close(); // ends its wait
    await otherWait;
    expect(wakeups.watching).toBe(0);
  });

  it('keeps a message that came before the wait, until the next reset', async () => {
    const watch = wakeups.watch('as_3');
    announce('as_3', 'requested');
    // the message arrives while the watch is not waiting (between its read and its wait)
    await new Promise((r) => setTimeout(r, 300));
    await watch.wait(LONGER_THAN_THE_TEST_MS);
    watch.reset();
    const again = Date.now();
    await watch.wait(300);
    expect(Date.now() - again).toBeGreaterThanOrEqual(250);
    watch.close();
  });

  it('ends a wait on abort', async () => {
    const watch = wakeups.watch('as_4');
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 100);
    await watch.wait(LONGER_THAN_THE_TEST_MS, abort.signal);
    watch.close();
  });
});
