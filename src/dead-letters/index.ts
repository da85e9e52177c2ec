/** Dead letters: the record, the service every caller uses, and its text rendering. */
export * from './dead-letter';
export * from './dead-letter-filter';
export { DeadLetterRepository, DEAD_LETTER_STATES } from './dead-letter.repository';
export { toDeadLetter } from './dead-letter-compat';
export * from './dead-letter-replayer';
export * from './dead-letter.service';
export * from './dead-letter-connections';
export * from './dead-letter-format';
export * from './replay-progress';
