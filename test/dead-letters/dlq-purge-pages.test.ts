/**
 * A purge by filter, and the erasure of a session's dead letters, over more entries than one scan
 * page (SCAN_PAGE_SIZE) and more matches than a result lists (PURGE_LISTED_MAX): every match is
 * counted and removed, nothing else is, and the result lists the first matches, oldest first.
 * Real Redis, a prefix per test.
 */
import type { DeadLetter } from '../../src/dead-letters/dead-letter';
import { SCAN_PAGE_SIZE } from '../../src/dead-letters/dead-letter.repository';
import { DeadLetterService, PURGE_LISTED_MAX } from '../../src/dead-letters/dead-letter.service';
import { createLogger } from '../../src/shared/logger';
import { QueueFixture, letter } from './dead-letter.fixtures';

jest.setTimeout(120_000);

const logger = createLogger({ level: 'silent' });
const TOTAL = 2 * SCAN_PAGE_SIZE + 600;

/** TOTAL letters, oldest first; two of every three are `invalid` of plan_gone, the rest of plan_kept. */
function letters(): DeadLetter[] {
  return Array.from({ length: TOTAL }, (_, i) =>
    i % 3 === 2
      ? letter({ kind: 'retries-exhausted', planId: 'plan_kept' })
      : letter({ kind: 'invalid', planId: 'plan_gone' }),
  );
}

describe('dead letters: purges a page at a time', () => {
  let q: QueueFixture;
  let dlq: DeadLetterService;
  let written: DeadLetter[];
  beforeEach(async () => {
    q = new QueueFixture();
    dlq = new DeadLetterService({ deadLetters: q.deadLetters, events: q.events, logger });
    written = letters();
    for (let i = 0; i < written.length; i += 500) await q.write(...written.slice(i, i + 500));
  });
  afterEach(async () => q.close());

  const gone = () => written.filter((dl) => dl.kind === 'invalid');
  const kept = () => written.filter((dl) => dl.kind !== 'invalid');

  it('a filter: a dry run counts every match and removes none; the purge removes exactly the matches', async () => {
    expect(gone().length).toBeGreaterThan(PURGE_LISTED_MAX);
    const dry = await dlq.purge({ filter: { kinds: ['invalid'] } }, { dryRun: true });
    expect(dry.matched).toBe(gone().length);
    expect(dry.deadLetters.map((s) => s.id)).toEqual(
      gone()
        .slice(0, PURGE_LISTED_MAX)
        .map((dl) => dl.id),
    );
    expect(await q.deadLetterIds()).toHaveLength(TOTAL);

    const purged = await dlq.purge({ filter: { kinds: ['invalid'] } });
    expect(purged).toMatchObject({ dryRun: false, matched: gone().length });
    expect(purged.deadLetters).toHaveLength(PURGE_LISTED_MAX);
    expect(await q.deadLetterIds()).toEqual(
      kept()
        .map((dl) => dl.id)
        .sort(),
    );
  });

  it("a session's erasure: every entry of its plans, over several pages", async () => {
    const result = await dlq.purgeSession('session_elsewhere', new Set(['plan_gone']));
    expect(result.matched).toBe(gone().length);
    expect(result.deadLetters).toHaveLength(PURGE_LISTED_MAX);
    expect(await q.deadLetterIds()).toEqual(
      kept()
        .map((dl) => dl.id)
        .sort(),
    );
  });
});
