/**
 * `timestamptz` values as PostgreSQL sends them in text (`2026-04-01 00:00:00.123456+00`, DateStyle ISO), parsed
 * to a `Date` without the general parser's regexes: every row the workers read carries several of them, and the
 * general parser was a visible share of decoding a batch. Fractions are truncated to the millisecond, as `Date`
 * holds. Anything not of that plain form (years before 1000 or after 9999, BC, infinity, a zone offset with
 * seconds) goes to the general parser.
 */
import pg from 'pg';

const TIMESTAMPTZ = 1184;
const general = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (v: string) => Date | number | null;

const digit = (s: string, i: number) => s.charCodeAt(i) - 48;
const two = (s: string, i: number) => digit(s, i) * 10 + digit(s, i + 1);

export function parseTimestamptz(s: string): Date | number | null {
  // 0123456789012345678
  // YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM]
  const n = s.length;
  if (n < 22 || s.charCodeAt(4) !== 45 || s.charCodeAt(10) !== 32 || s.charCodeAt(0) === 48) return general(s);
  let i = 19;
  let ms = 0;
  if (s.charCodeAt(i) === 46) {
    let scale = 100;
    for (i++; i < n; i++) {
      const d = digit(s, i);
      if (d < 0 || d > 9) break;
      ms += d * scale;
      scale /= 10;
    }
    ms = Math.floor(ms);
  }
  const sign = s.charCodeAt(i);
  if ((sign !== 43 && sign !== 45) || (n !== i + 3 && !(n === i + 6 && s.charCodeAt(i + 3) === 58))) return general(s);
  const offsetMin = (two(s, i + 1) * 60 + (n === i + 6 ? two(s, i + 4) : 0)) * (sign === 43 ? 1 : -1);
  const t =
    Date.UTC(two(s, 0) * 100 + two(s, 2), two(s, 5) - 1, two(s, 8), two(s, 11), two(s, 14), two(s, 17), ms) -
    offsetMin * 60_000;
  return Number.isNaN(t) ? general(s) : new Date(t);
}

export { TIMESTAMPTZ };
