/**
 * The `approvals` scenario of `npm run bench:e2e`: what approvals and a webhook subscription cost
 * the pipeline. Grouped and interleaved PostgreSQL runs of the same events, without them and with
 * them, back to back in one run: "with" adds one enabled webhook subscription (every webhook type)
 * to a local receiver, and on 10 % of the plans an
 * `approval.requested` right after `plan.created` and its `approval.decided` (the request's seq)
 * two events later, as the decide endpoint stores one. The receiver runs in the bench's process,
 * on the 2 cores the publisher and worker share (a user's receiver runs on another machine): during
 * the timed window it answers 204 to every request and only records its headers and raw body; every
 * signature is verified after the run's last commit, and the run fails if any does not verify. The
 * clock stops at the last commit; the worker then runs until the receiver has every outbox row, timed
 * apart (deliveries may wait for an ingest backlog: docs/webhooks.md).
 */
import type { PlanEventInput } from '../../src/contracts';
import { argsDigest } from '../../src/contracts';
import { addSubscription, newSecret } from '../../src/webhooks/webhook-subscriptions';
import { Receiver } from '../../test/webhooks/receiver';
import { round } from './latency';
import { BenchContext, pregenerate, roundRobin, sustained, SustainedResult } from './e2e-scenarios';

/** One traffic shape: the run without approvals and webhooks, the run with both, each alone, and with / without. */
export interface ApprovalsPair {
  traffic: 'grouped' | 'interleaved';
  /** Passes; each figure below is its variant's median run. */
  repeat: number;
  /** Each variant's run times, in the order they ran. */
  secondsByRun: Record<string, number[]>;
  without: SustainedResult;
  with: SustainedResult;
  /** The same events with approvals and no subscription, and without approvals with the subscription: which costs what. */
  approvalsOnly: SustainedResult;
  webhookOnly: SustainedResult;
  /** Plans with an approval, and the approval events added (2 per such plan). */
  approvalPlans: number;
  approvalEvents: number;
  /**
   * Deliveries the receiver got by the last commit (where the run's clock stops), all of them (every
   * outbox row: the bench waits for them before it stops the worker), and refused signatures.
   */
  webhooksReceived: number;
  webhooksReceivedAll: number;
  webhooksUnverified: number;
  /**
   * The run with both: seconds from its last commit until the receiver had every webhook, and the
   * worker's CPU in that time per event of the run (not in `cpuUsPerEvent`).
   */
  webhooksAfterLastCommitSeconds: number;
  webhooksAfterLastCommitWorkerCpuUsPerEvent: number;
  /**
   * with / without, in events/s (approval events counted) and in plans/s (the same plans in both):
   * the median over the passes of each pass's ratio (its two runs ran back to back).
   */
  ratioEventsPerSec: number;
  ratioPlansPerSec: number;
  /**
   * The same ratio (plans/s, both against without) by two more estimators: the variants' median
   * times, and their mean times. When the three disagree across the target, the run does not settle it.
   */
  ratioPlansPerSecOfMedians: number;
  ratioPlansPerSecOfMeans: number;
  /** approvals alone and the subscription alone, in plans/s against without. */
  ratioPlansPerSecApprovalsOnly: number;
  ratioPlansPerSecWebhookOnly: number;
  /** The worker's CPU per event with both / without (the median runs): less moved by the machine's load than time. */
  workerCpuRatio: number;
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

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const total = (chunks: PlanEventInput[][]) => chunks.reduce((n, c) => n + c.length, 0);

/** One sustained PostgreSQL run of `source`, with a webhook subscription to a local receiver when `webhook`. */
async function run(
  ctx: BenchContext,
  seed: number,
  source: PlanEventInput[][],
  how: { interleaved: boolean; webhook: boolean; profile: boolean },
): Promise<{ result: SustainedResult; received: number; receivedAll: number; unverified: number }> {
  const { interleaved, webhook, profile } = how;
  if (!webhook)
    return {
      result: await sustained(ctx, 'postgres', total(source), seed, { interleaved, source, profile }),
      received: 0,
      receivedAll: 0,
      unverified: 0,
    };
  const secret = newSecret();
  const receiver = await Receiver.start(secret, 0, { verifyLater: true });
  let byLastCommit = 0;
  try {
    const result = await sustained(ctx, 'postgres', total(source), seed, {
      interleaved,
      source,
      profile,
      workerEnv: { WEBHOOKS_ALLOW_PRIVATE: '127.0.0.1' },
      prepare: async (ds) => {
        await addSubscription(ds, { url: receiver.url, eventTypes: '*', secret });
      },
      // every outbox row received before the worker stops: what the run's deliveries cost after its clock stopped
      settle: async (ds) => {
        byLastCommit = receiver.answered;
        const [{ n }] = await ds.query('SELECT COUNT(*) AS n FROM webhook_deliveries');
        const deadline = Date.now() + 120_000;
        while (receiver.answered < Number(n)) {
          if (Date.now() > deadline) throw new Error(`${receiver.answered} of ${n} webhooks received after 120 s`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      },
    });
    receiver.verifyRecorded();
    if (receiver.unverified > 0)
      throw new Error(
        `${receiver.unverified} of the ${receiver.unverified + receiver.got.length} webhooks received did not verify`,
      );
    return { result, received: byLastCommit, receivedAll: receiver.got.length, unverified: receiver.unverified };
  } finally {
    await receiver.close();
  }
}

type Variant = 'without' | 'both' | 'approvalsOnly' | 'webhookOnly';
const VARIANTS: readonly Variant[] = ['without', 'both', 'approvalsOnly', 'webhookOnly'];

/**
 * Grouped and interleaved on PostgreSQL, each without approvals and webhooks, with both, and with
 * each alone; `repeat` passes, the pair without / with both back to back in alternating order (the
 * machine's load drifts), ratios the median of the passes' ratios, other figures from each
 * variant's median run; `profile`: a V8 CPU profile of the worker in every run.
 */
export async function approvalsOverhead(
  ctx: BenchContext,
  count: number,
  seed: number,
  options: { profile?: boolean; repeat?: number } = {},
): Promise<ApprovalsPair[]> {
  const pairs: ApprovalsPair[] = [];
  const repeat = options.repeat ?? 1;
  for (const traffic of ['grouped', 'interleaved'] as const) {
    const grouped = pregenerate(count, seed, false);
    const shape = (chunks: PlanEventInput[][]) => (traffic === 'interleaved' ? chunks.map(roundRobin) : chunks);
    const plain = shape(grouped);
    const approved = withApprovals(grouped);
    const withSource = shape(approved.chunks);
    const interleaved = traffic === 'interleaved';
    const runs = new Map<Variant, Awaited<ReturnType<typeof run>>[]>(VARIANTS.map((v) => [v, []]));
    // without and both back to back, in alternating order, then each alone: a pass's pair shares its load
    for (let pass = 0; pass < repeat; pass++)
      for (let i = 0; i < VARIANTS.length; i++) {
        const v = VARIANTS[pass % 2 ? i ^ 1 : i];
        const source = v === 'both' || v === 'approvalsOnly' ? withSource : plain;
        const webhook = v === 'both' || v === 'webhookOnly';
        runs.get(v)!.push(await run(ctx, seed, source, { interleaved, webhook, profile: options.profile ?? false }));
      }
    const medianRun = (v: Variant) => {
      const sorted = [...runs.get(v)!].sort((a, b) => a.result.seconds - b.result.seconds);
      return sorted[(sorted.length - 1) >> 1];
    };
    const [without, both, approvalsOnly, webhookOnly] = VARIANTS.map(medianRun);
    // the same plans in every run: plans/s compare as 1 / seconds; each pass's ratio against its
    // own without run (the one beside it), the median of the passes
    const seconds = (v: Variant) => runs.get(v)!.map((r) => r.result.seconds);
    const vs = (v: Variant) =>
      round(median(runs.get(v)!.map((r, pass) => runs.get('without')![pass].result.seconds / r.result.seconds)));
    pairs.push({
      traffic,
      repeat,
      secondsByRun: Object.fromEntries(VARIANTS.map((v) => [v, runs.get(v)!.map((r) => r.result.seconds)])),
      without: without.result,
      with: both.result,
      approvalsOnly: approvalsOnly.result,
      webhookOnly: webhookOnly.result,
      approvalPlans: approved.plans,
      approvalEvents: total(withSource) - total(plain),
      webhooksReceived: both.received,
      webhooksReceivedAll: both.receivedAll,
      webhooksUnverified: both.unverified,
      webhooksAfterLastCommitSeconds: both.result.settleSeconds ?? 0,
      webhooksAfterLastCommitWorkerCpuUsPerEvent: both.result.settleWorkerCpuUsPerEvent ?? 0,
      ratioEventsPerSec: round((vs('both') * total(withSource)) / total(plain)),
      ratioPlansPerSec: vs('both'),
      ratioPlansPerSecOfMedians: round(without.result.seconds / both.result.seconds),
      ratioPlansPerSecOfMeans: round(mean(seconds('without')) / mean(seconds('both'))),
      ratioPlansPerSecApprovalsOnly: vs('approvalsOnly'),
      ratioPlansPerSecWebhookOnly: vs('webhookOnly'),
      workerCpuRatio: round(both.result.cpuUsPerEvent.worker / without.result.cpuUsPerEvent.worker),
    });
  }
  return pairs;
}
