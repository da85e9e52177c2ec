/** Public API of the worker runtime: start one in-process, or read its settings from the environment. */
export { startWorker } from './start-worker';
export type { StartWorkerOptions, WorkerHandle } from './start-worker';
export type { ShutdownResult } from './worker-lifecycle';
export type { WorkerStats } from './worker-state';
export { loadWorkerConfig, DEFAULT_WORKER_CONFIG, WORKER_ENV_HELP } from './worker-config';
export type { WorkerConfig } from './worker-config';
export type { JobSummary } from './job-processor';
export type { EventPersister, JobWriteOutcome } from './batch-writer';
export { WorkerMetrics } from './worker-metrics';
