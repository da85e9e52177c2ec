import { QueryArgumentError } from './query-errors';
import { compareText } from './row-normalize';

/**
 * The pages of the two long lists of the tokens report (per session, per plan): each sorted
 * largest consumer first, its key breaking ties, and cut after `limit` lines. A cursor names, for
 * each list that has more, the last line of the page it follows (its total and key), so the next
 * page starts after it; a list the cursor leaves out has ended.
 */

/** Lines per page of the tokens report's session and plan lists. @defaultValue 100 */
export const DEFAULT_TOKEN_PAGE = 100;

export interface TokenPageRequest {
  /** Lines per list and page (1-1000). @defaultValue DEFAULT_TOKEN_PAGE */
  limit?: number;
  /** `nextCursor` of the page before; absent: the first page. */
  cursor?: string;
}

export interface TokenPageInfo {
  limit: number;
  /** Whether the session or plan list goes on past this page. */
  hasMore: boolean;
  /** Pass as `cursor` for the next page; null on the last. */
  nextCursor: string | null;
}

export type Position = [totalTokens: number, key: string];

/** Whether a line of `totalTokens` and `key` comes after `at` in a list's order (largest first, then the key). */
export function isAfter(at: Position, totalTokens: number, key: string): boolean {
  return totalTokens < at[0] || (totalTokens === at[0] && compareText(key, at[1]) > 0);
}
export type CursorLists = Partial<Record<'session' | 'plan', Position>>;

export function decodeTokenCursor(raw: string | undefined, argument = '--cursor'): CursorLists | undefined {
  if (raw === undefined) return undefined;
  const bad = () => new QueryArgumentError(argument, `"${raw.slice(0, 60)}" is not a cursor this report printed`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw bad();
  const out: CursorLists = {};
  for (const [list, at] of Object.entries(parsed as Record<string, unknown>)) {
    if (list !== 'session' && list !== 'plan') throw bad();
    if (!Array.isArray(at) || at.length !== 2 || typeof at[0] !== 'number' || typeof at[1] !== 'string') throw bad();
    out[list] = [at[0], at[1]];
  }
  return out;
}

export function encodeTokenCursor(lists: CursorLists): string {
  return Buffer.from(JSON.stringify(lists), 'utf8').toString('base64url');
}

/** The page's `hasMore` and `nextCursor`, from where each list that goes on left off. */
export function pageInfo(limit: number, next: CursorLists): TokenPageInfo {
  const hasMore = Object.keys(next).length > 0;
  return { limit, hasMore, nextCursor: hasMore ? encodeTokenCursor(next) : null };
}
