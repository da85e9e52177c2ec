/**
 * The read side: each question the stored data answers is one function taking a DataSource.
 * The CLI, the tests and the demo all call these.
 */
export * from './query-errors';
export * from './query-args';
export { toIso, toNum, toDay, compareText } from './row-normalize';
export * from './plan-rows';
export * from './plan-timeline.query';
export * from './plan-timeline.format';
export * from './plan-list.query';
export * from './session-plans.query';
export * from './workflow-resume.query';
export * from './next-seq.query';
export * from './step-output.query';
export * from './plan-export.query';
export * from './analytics.query';
export * from './token-usage.query';
export * from './cost-usage.query';
export * from './text-output';
export * from './plan-lineage.query';
export * from './reconcile.query';
