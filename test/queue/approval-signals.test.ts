/**
 * The approval channels on a real Redis: what the worker announces after a commit (one message per
 * transaction) wakes the watches of the approvalIds it names in serve, and only those; a message of
 * a worker of the earlier version (one approvalId on its own channel) still does; a message that
 * arrives between a watch's read and its wait is not lost; a watch without a message ends at its
 * time or on abort.
 */
import {
  announceApprovalChanges,
  approvalChannel,
  ApprovalWakeups,
  earlierApprovalChannels,
} from '../../src/queue/approval-signals';
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
    expect(approvalChannel('{pl}')).toBe('{pl}:approvals:changed');
    expect(earlierApprovalChannels('{pl}')).toEqual({
      requested: '{pl}:approvals:requested',
      decided: '{pl}:approvals:decided',
    });
  });

  it("wakes the watches of every approval a transaction's one message names", async () => {
    const ids = ['as_b1', 'as_b2', 'as_b3'];
    const watches = ids.map((id) => wakeups.watch(id));
    const woken = watches.map((w) => w.wait(LONGER_THAN_THE_TEST_MS));
    let published = 0;
    const counting = {
      publish: (channel: string, message: string) => {
        published++;
        return publisher.publish(channel, message);
      },
    } as unknown as Parameters<typeof announceApprovalChanges>[0];
    announceApprovalChanges(counting, prefix, [
      { change: 'requested', approvalId: 'as_b1', planId: 'p' },
      { change: 'decided', approvalId: 'as_b1', planId: 'p', decision: 'approve' },
      { change: 'requested', approvalId: 'as_b2', planId: 'p' },
      { change: 'decided', approvalId: 'as_b3', planId: 'q', decision: 'reject' },
    ]);
    await Promise.all(woken);
    expect(published).toBe(1);
    for (const w of watches) w.close();
  });

  it('wakes a watch on the message of a worker of the earlier version (one approvalId on its channel)', async () => {
    const watch = wakeups.watch('as_earlier');
    const woke = watch.wait(LONGER_THAN_THE_TEST_MS);
    await publisher.publish(earlierApprovalChannels(prefix).decided, 'as_earlier');
    await woke;
    watch.close();
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
