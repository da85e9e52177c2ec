export { PlanEventPublisher } from './plan-event-publisher';
export { DEFAULT_JOB_OPTIONS, PublisherConfigError } from './publisher-options';
export type { PublisherOptions, ValidationMode } from './publisher-options';
export type {
  CloseResult,
  Durability,
  DurabilityMark,
  EventStamps,
  PlanRef,
  PublishResult,
  PublisherStats,
} from './publisher.types';
export {
  ApprovalRefusedError,
  ApprovalRequestError,
  ApprovalServerError,
  consumeApproval,
  requestApproval,
  waitForApproval,
} from './approval-client';
export type { ApprovalRequestInput, ApprovalServer, RequestedApproval } from './approval-client';
