/**
 * The `approvals` scenario of `npm run bench:e2e`: what approvals and a webhook subscription cost
 * the pipeline. Grouped and interleaved PostgreSQL runs of the same events, without them and with
 * them, back to back in one run: "with" adds one enabled webhook subscription (every webhook type)
 * to a local receiver that verifies each delivery, and on 10 % of the plans an
 * `approval.requested` right after `plan.created` and its `approval.decided` (the request's seq)
 * two events later, as the decide endpoint stores one.
 */
import type { PlanEventInput } from '../../src/contracts';
import { argsDigest } from '../../src/contracts';
import { addSubscription, newSecret } from '../../src/webhooks/webhook-subscriptions';
import { Receiver } from '../../test/webhooks/receiver';
import { round } from './latency';
import { BenchContext, pregenerate, roundRobin, sustained, SustainedResult } from './e2e-scenarios';

/** One traffic shape: the run without approvals and webhooks, the run with them, and with / without. */
export interface ApprovalsPair {
  traffic: 'grouped' | 'interleaved';
  without: SustainedResult;
  with: SustainedResult;
  /** Plans with an approval, and the approval events added (2 per such plan). */
  approvalPlans: number;
  approvalEvents: number;
  /** Deliveries the receiver got by the end of the run (the run's clock stops at the last commit), and refused signatures. */
  webhooksReceived: number;
  webhooksUnverified: number;
  /** with / without, in events/s (approval events counted) and in plans/s (the same plans in both). */
  ratioEventsPerSec: number;
  ratioPlansPerSec: number;
}

const DIGEST = argsDigest({ to: 'ops@example.com' });

/** The grouped chunks with an approval on every `every`-th plan of each chunk (whole plans only). */
export function withApprovals(chunks: PlanEventInput[][], every = 10): { chunks: PlanEventInput[][]; plans: number } {
  let plans = 0;
  const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
  const out = chunks.map((chunk) => {
    const result: PlanEventInput[] = [];
    let planIndex = -1;
    let pending: { planId: string; sessionId: string; after: number; approvalId: string } | undefined;
    for (const e of chunk) {
      if (pending && pending.planId !== e.planId) pending = undefined;
      result.push(e);
      if (e.type === 'plan.created') {
        planIndex++;
        if (planIndex % every !== 0) continue;
        plans++;
        const approvalId = `appr-${e.planId}`;
        // plan.created is the plan's seq 0, so the request is its seq 1
        result.push({
          type: 'approval.requested',
          planId: e.planId,
          sessionId: e.sessionId,
          payload: { approvalId, stepId: 's1', tool: 'send_mail', argsDigest: DIGEST, expiresAt },
        } as PlanEventInput);
        pending = { planId: e.planId, sessionId: e.sessionId, after: 2, approvalId };
      } else if (pending && --pending.after === 0) {
        result.push({
          type: 'approval.decided',
          planId: pending.planId,
          sessionId: pending.sessionId,
          seq: 1,
          payload: { approvalId: pending.approvalId, decision: 'approve', decidedBy: 'bench' },
        } as PlanEventInput);
        pending = undefined;
      }
    }
    return result;
  });
  return { chunks: out, plans };
}

const total = (chunks: PlanEventInput[][]) => chunks.reduce((n, c) => n + c.length, 0);

/** Grouped and interleaved, each without and with approvals and a webhook subscription, on PostgreSQL. */
export async function approvalsOverhead(ctx: BenchContext, count: number, seed: number): Promise<ApprovalsPair[]> {
  const pairs: ApprovalsPair[] = [];
  for (const traffic of ['grouped', 'interleaved'] as const) {
    const grouped = pregenerate(count, seed, false);
    const shape = (chunks: PlanEventInput[][]) => (traffic === 'interleaved' ? chunks.map(roundRobin) : chunks);
    const plain = shape(grouped);
    const approved = withApprovals(grouped);
    const withSource = shape(approved.chunks);
    const interleaved = traffic === 'interleaved';
    const without = await sustained(ctx, 'postgres', total(plain), seed, { interleaved, source: plain });
    const secret = newSecret();
    const receiver = await Receiver.start(secret);
    let result: SustainedResult;
    try {
      result = await sustained(ctx, 'postgres', total(withSource), seed, {
        interleaved,
        source: withSource,
        workerEnv: { WEBHOOKS_ALLOW_PRIVATE: '127.0.0.1' },
        prepare: async (ds) => {
          await addSubscription(ds, { url: receiver.url, eventTypes: '*', secret });
        },
      });
    } finally {
      await receiver.close();
    }
    const plansPerSec = (r: SustainedResult) => 1 / r.seconds;
    pairs.push({
      traffic,
      without,
      with: result,
      approvalPlans: approved.plans,
      approvalEvents: total(withSource) - total(plain),
      webhooksReceived: receiver.got.length,
      webhooksUnverified: receiver.unverified,
      ratioEventsPerSec: round(result.eventsPerSec / without.eventsPerSec),
      ratioPlansPerSec: round(plansPerSec(result) / plansPerSec(without)),
    });
  }
  return pairs;
}
