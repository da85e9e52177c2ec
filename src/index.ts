/** Package root: `import { PlanEventPublisher, parsePlanEvent } from 'plan-ledger'`. */
export * from './contracts';
export * from './publisher';
