/**
 * Package root: `import { PlanEventPublisher, parsePlanEvent } from 'plan-ledger'`. Executors need
 * only these; the worker and the admin libraries are exported for services that embed them.
 */
export * from './contracts';
export * from './publisher';
export { startWorker, loadWorkerConfig, DEFAULT_WORKER_CONFIG } from './worker';
export type { StartWorkerOptions, WorkerHandle, WorkerConfig } from './worker';
export { PlanEventStore } from './store/plan-event-store';
export { loadConfig } from './config/config';
