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
