/**
 * Replay defaults that `--help` shows: in a module of their own, so that printing the help does not
 * load the replayer (which loads BullMQ).
 */

/** The publisher's job size: a replayed job costs the worker what a live one does. */
export const DEFAULT_REPLAY_BATCH = 500;
