/**
 * Opaque list cursors: the sort key of the last item of a page, base64url-encoded so clients treat it as a token
 * and never build one. A cursor that does not decode is a 400 on the `cursor` parameter.
 */
import { invalid } from './errors.ts';

/** Encodes a page position (e.g. the last row's sequence number). */
export function encodeCursor(position: string | number | bigint): string {
  return Buffer.from(`c1:${position}`, 'utf8').toString('base64url');
}

/** Decodes a cursor made by `encodeCursor`; `pattern` validates the position text. */
export function decodeCursor(cursor: string, pattern: RegExp = /^\d{1,19}$/): string {
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const position = text.startsWith('c1:') ? text.slice(3) : '';
  if (!pattern.test(position)) throw invalid('cursor is not a cursor returned by this list', 'cursor');
  return position;
}

/**
 * A page of a list fetched `limit + 1` rows deep: the rows shown, and the next page's cursor (the last shown row's
 * `position`), null when the extra row was not there (the last page).
 */
export function pageOf<R>(
  rows: R[],
  limit: number,
  position: (row: R) => string | number | bigint,
): { page: R[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  return { page, next_cursor: rows.length > limit ? encodeCursor(position(page[page.length - 1]!)) : null };
}

/** Runs `query` (a list in the order of its cursor) `limit + 1` rows deep and makes a page of it (`pageOf`). */
export async function fetchPage<R>(
  query: { limit(n: number): { execute(): Promise<R[]> } },
  limit: number,
  position: (row: R) => string | number | bigint,
): Promise<{ page: R[]; next_cursor: string | null }> {
  return pageOf(await query.limit(limit + 1).execute(), limit, position);
}
