import * as fc from 'fast-check';
import { PlanEvent } from '../../src/contracts';
import { foldPlan } from '../../src/store/projection/fold-plan';
import { isVoidedSeq, refusedSeqOf, voidedSeqEvent, voidedSeqId } from '../../src/store/projection/voided-seq';
import { planLifeArb, seqLayoutArb, toEvents } from './plan-events.arbitrary';

const AT = new Date(Date.UTC(2026, 6, 1));

/** The voided seq the worker records for a refused event. */
const voidOf = (e: { eventId: string }, kind = 'invalid') =>
  voidedSeqEvent(refusedSeqOf(e)!, kind, `dl-${e.eventId}`, AT);

describe('voided seqs: pure parts', () => {
  it('reads the plan, session and seq of a refused event only when each is valid', () => {
    const e = {
      planId: 'p1',
      sessionId: 's1',
      seq: 4,
      eventId: 'A1B2C3D4-0000-4000-8000-000000000000',
      type: 'nope',
      payload: 7,
    };
    expect(refusedSeqOf(e)).toEqual({
      planId: 'p1',
      sessionId: 's1',
      seq: 4,
      eventId: 'a1b2c3d4-0000-4000-8000-000000000000',
    });
    expect(refusedSeqOf({ ...e, eventId: 'not-a-uuid' })).toEqual({
      planId: 'p1',
      sessionId: 's1',
      seq: 4,
      eventId: null,
    });
    for (const bad of [
      { seq: -1 },
      { seq: 1.5 },
      { seq: '4' },
      { seq: 2 ** 31 },
      { planId: '' },
      { planId: 'a b' },
      { sessionId: undefined },
    ])
      expect(refusedSeqOf({ ...e, ...bad })).toBeUndefined();
    for (const raw of [null, 'text', [e], 42]) expect(refusedSeqOf(raw)).toBeUndefined();
  });

  it('one id per refused event (from its eventId alone, else its plan and seq), so a redelivery records the same fact', () => {
    const ref = { planId: 'p1', sessionId: 's1', seq: 4, eventId: 'a1b2c3d4-0000-4000-8000-000000000000' };
    expect(voidedSeqId(ref)).toBe(voidedSeqId({ ...ref, seq: 9, planId: 'p2' }));
    expect(voidedSeqId(ref)).not.toBe(voidedSeqId({ ...ref, eventId: 'a1b2c3d4-0000-4000-8000-000000000001' }));
    expect(voidedSeqId({ ...ref, eventId: null })).not.toBe(voidedSeqId({ ...ref, eventId: null, seq: 5 }));
    expect(voidedSeqId({ ...ref, eventId: null })).not.toBe(voidedSeqId({ ...ref, eventId: null, planId: 'p2' }));
    const v = voidedSeqEvent(ref, 'invalid', 'dl-x', AT);
    expect(isVoidedSeq(v)).toBe(true);
    expect(v).toMatchObject({
      planId: 'p1',
      sessionId: 's1',
      seq: 4,
      payload: { eventId: ref.eventId, kind: 'invalid', deadLetterId: 'dl-x' },
    });
  });

  it('the whole-log fold ignores voided seqs: the plan is the fold of the events that were not refused', () => {
    fc.assert(
      fc.property(
        planLifeArb,
        seqLayoutArb,
        fc.array(fc.nat(40), { minLength: 1, maxLength: 4 }),
        (drafts, layout, refusedAt) => {
          const events = toEvents(drafts, 'fold_plan', 'fold_sess', layout);
          const refused = new Set<PlanEvent>(
            refusedAt.map((i) => events[i % events.length]).filter((e) => e.type !== 'plan.created'),
          );
          const kept = events.filter((e) => !refused.has(e));
          expect(foldPlan([...kept, ...[...refused].map((e) => voidOf(e))])).toEqual(foldPlan(kept));
        },
      ),
      { numRuns: 200 },
    );
  });
});
