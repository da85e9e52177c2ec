/**
 * `npm run bench:pricing` (`-- --events N`, default 200,000; `-- --rounds N`, default 5).
 *
 * What pricing adds to the worker's CPU per event, measured in this process: the whole-log fold
 * (PlanReducer, the rules the worker's incremental apply runs) of realistic plans (test/support's
 * event factory: gpt-4o, claude-sonnet-4, llama-3.1-70b steps, some failing), and, in the same run
 * on the same events, priceStep alone with the arguments the fold gives it for every finished
 * step. The fold without pricing is the fold's CPU less priceStep's; rounds alternate the two
 * measurements and the median round is reported. The fold is a part of the worker's CPU per
 * event (parsing, Redis, SQL are the rest), so its ratio bounds pricing's share of the worker's.
 */
import 'reflect-metadata';
import { priceStep, type StepUsage } from '../src/pricing';
import { foldPlan } from '../src/store/projection/fold-plan';
import type { PlanEvent } from '../src/contracts';
import { manyPlanRuns } from '../test/support/event-factory';
import { BenchOptions } from './support/cli-options';

const opts = new BenchOptions('npm run bench:pricing -- [options]: what pricing adds to the fold per event', [
  { name: 'events', value: 'N', help: 'events folded per round (default 200000)' },
  { name: 'rounds', value: 'N', help: 'rounds (default 5); the median is reported' },
]);

function cpuUs(work: () => void): number {
  const start = process.cpuUsage();
  work();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

function main(): void {
  const total = opts.number('events', 200_000);
  const rounds = opts.number('rounds', 5);
  const events = manyPlanRuns(total);
  const plans = new Map<string, PlanEvent[]>();
  for (const e of events) {
    const list = plans.get(e.planId);
    if (list) list.push(e);
    else plans.set(e.planId, [e]);
  }
  const finishes: Array<{ usage: StepUsage; at: Date }> = [];
  for (const e of events) {
    if (e.type !== 'step.completed' && e.type !== 'step.failed') continue;
    const p = e.payload;
    finishes.push({
      at: new Date(e.occurredAt),
      usage: {
        model: p.model ?? null,
        provider: p.provider ?? null,
        inputTokens: p.inputTokens ?? 0,
        outputTokens: p.outputTokens ?? 0,
        cacheReadTokens: p.cacheReadTokens ?? 0,
        cacheWriteTokens: p.cacheWriteTokens ?? 0,
        reasoningTokens: p.reasoningTokens ?? 0,
        reportedCost: p.reportedCost ?? null,
      },
    });
  }
  const fold = () => {
    for (const list of plans.values()) foldPlan(list);
  };
  const price = () => {
    for (const f of finishes) priceStep(f.usage, f.at);
  };
  fold(); // warm-up: JIT, and the price table's model lookups
  price();
  const samples: Array<{ fold: number; pricing: number }> = [];
  for (let r = 0; r < rounds; r++) samples.push({ fold: cpuUs(fold), pricing: cpuUs(price) });
  const perEvent = (us: number) => Math.round((us / events.length) * 1000) / 1000;
  const ratios = samples.map((s) => s.fold / (s.fold - s.pricing)).sort((a, b) => a - b);
  const median = samples.slice().sort((a, b) => a.fold - b.fold)[Math.floor(rounds / 2)]!;
  const priced = finishes.filter((f) => priceStep(f.usage, f.at).source === 'table').length;
  console.log(
    `pricing bench: ${events.length} events of ${plans.size} plans, ${finishes.length} finished steps (${priced} priced by the table), ${rounds} rounds`,
  );
  console.log(
    `  fold with pricing ${perEvent(median.fold)} us/event; priceStep ${perEvent(median.pricing)} us/event; fold without pricing ${perEvent(median.fold - median.pricing)} us/event`,
  );
  console.log(
    `  fold with / without pricing: median ${ratios[Math.floor(rounds / 2)]!.toFixed(3)}x (min ${ratios[0]!.toFixed(3)}, max ${ratios[rounds - 1]!.toFixed(3)})`,
  );
}

main();
