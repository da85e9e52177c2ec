import * as os from 'node:os';
import * as v8 from 'node:v8';

/**
 * How far V8 lets the heap grow past the live set before its next full collection, in percent
 * (V8's own default lets it roughly double). V8 reads the heuristic at every full GC, so setting
 * it while running takes effect. Lower: less RSS for the same work, a few more collections. The
 * worker takes it from WORKER_HEAP_GROWING_PERCENT; bulk commands use BULK_HEAP_GROWING_PERCENT.
 */
export function limitHeapGrowth(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/**
 * For commands that stream a large selection through memory (`dlq replay`): a lower peak heap at the same speed
 * (BENCHMARKS.md, dead-letter replay).
 */
export const BULK_HEAP_GROWING_PERCENT = 20;

/**
 * The CPU priority bulk commands lower themselves to: 19, the lowest, as backups and other batch
 * jobs run. Alone on a host it costs nothing; beside a busy worker and Redis it takes only the CPU
 * they leave (nice 10 left a live queue 0.45x of its throughput during a 100k replay, 19 0.5-0.56x:
 * BENCHMARKS.md, "Dead letters").
 */
export const BULK_NICENESS = 19;

/**
 * Settings for a one-off command that moves a large selection (`dlq replay`): collect garbage
 * sooner, and give way to services sharing the host (a worker, Redis) by lowering this process's
 * CPU priority, as batch jobs are run. It never raises a priority (a process already nicer stays
 * as it is), and a refusal by the system changes nothing else.
 */
export function runAsBulkCommand(): void {
  limitHeapGrowth(BULK_HEAP_GROWING_PERCENT);
  try {
    if (os.getPriority() < BULK_NICENESS) os.setPriority(BULK_NICENESS);
  } catch {
    // not allowed here: run at the priority we have
  }
}
