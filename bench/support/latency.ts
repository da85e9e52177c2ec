/** Per-call latency recording and summaries for the benchmarks. */

export interface LatencySummary {
  calls: number;
  p50Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
}

/** Wall time of individual calls, in nanoseconds, in a preallocated array (no allocation per sample). */
export class LatencyRecorder {
  private readonly samples: Float64Array;
  private n = 0;

  constructor(capacity: number) {
    this.samples = new Float64Array(capacity);
  }

  time<T>(fn: () => T): T {
    const start = process.hrtime.bigint();
    const result = fn();
    if (this.n < this.samples.length) this.samples[this.n++] = Number(process.hrtime.bigint() - start);
    return result;
  }

  add(ns: number): void {
    if (this.n < this.samples.length) this.samples[this.n++] = ns;
  }

  summary(): LatencySummary {
    const sorted = this.samples.slice(0, this.n).sort();
    const at = (p: number) => round((sorted[Math.min(this.n - 1, Math.floor(this.n * p))] ?? 0) / 1_000);
    return {
      calls: this.n,
      p50Us: at(0.5),
      p99Us: at(0.99),
      p999Us: at(0.999),
      maxUs: round((sorted[this.n - 1] ?? 0) / 1_000),
    };
  }
}

/** Cost of the timer itself (two hrtime.bigint calls), reported so figures can be read net of it. */
export function timerOverheadNs(): number {
  const rec = new LatencyRecorder(100_000);
  for (let i = 0; i < 100_000; i++) rec.time(() => i);
  return rec.summary().p50Us * 1_000;
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export function mb(bytes: number): number {
  return round(bytes / 1024 / 1024, 1);
}
