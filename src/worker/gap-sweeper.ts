import type { WorkerMetrics } from './worker-metrics';
import type { Logger } from '../shared/logger';
import type { GapSweep } from '../store/plan-event-store';

/** The part of PlanEventStore the sweeper needs. */
export interface GapStore {
  applyOverdueGaps(cutoff: Date, limit?: number): Promise<GapSweep>;
  waitingPlans(): Promise<number>;
}

export interface GapSweeperDeps {
  store: GapStore;
  /** WORKER_GAP_TIMEOUT_MS; 0 = never skip a gap (plans waiting are still counted). */
  timeoutMs: number;
  metrics: WorkerMetrics;
  logger: Logger;
  /** Skip a tick while the database is known to be down. */
  databaseUp(): boolean;
  /** Between ticks. @defaultValue a quarter of the timeout, between 1 and 15 s */
  intervalMs?: number;
}

/**
 * Every few seconds: counts the plans waiting on a missing seq (the `plans_waiting_on_gap` gauge)
 * and, once a plan has waited past the timeout, has the store apply its waiting events past the
 * gap (docs/store.md#a-gap-that-never-fills). Several workers may sweep at once: the store re-checks each plan under
 * its lock. A failed tick is logged and retried at the next one.
 */
export class GapSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly deps: GapSweeperDeps) {}

  start(): void {
    const every =
      this.deps.intervalMs ?? Math.min(15_000, Math.max(1_000, Math.floor((this.deps.timeoutMs || 60_000) / 4)));
    this.timer = setInterval(() => {
      if (!this.running && this.deps.databaseUp()) this.running = this.tick().finally(() => (this.running = undefined));
    }, every);
    this.timer.unref();
  }

  /** One sweep now (tests, and the interval). */
  async tick(): Promise<void> {
    const { store, metrics, logger, timeoutMs } = this.deps;
    try {
      if (timeoutMs > 0) {
        for (let round = 0; round < 100 && !this.stopped; round++) {
          const sweep = await store.applyOverdueGaps(new Date(Date.now() - timeoutMs));
          metrics.gapsSkipped.inc(sweep.plans);
          if (sweep.plans < 100) break;
        }
      }
      metrics.plansWaitingOnGap.set(await store.waitingPlans());
    } catch (err) {
      logger.warn({ err }, 'gap sweep failed; retrying at the next tick');
    }
  }

  /** Stop ticking and wait for a tick in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
