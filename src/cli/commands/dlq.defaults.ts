/** Defaults of the `dlq` commands, read by their help (dlq.command.ts) and their actions (dlq.actions.ts). */

/** Rows `dlq list` shows unless --limit says otherwise. */
export const DEFAULT_LIST_LIMIT = 100;
/** How long `replay --wait` waits for the replayed jobs. */
export const DEFAULT_WAIT_SECONDS = 120;
