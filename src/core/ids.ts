/**
 * Object ids: prefix + Crockford base32 (upper case), time-sortable.
 *
 * The 26-character body is a ULID (48-bit millisecond time + 80 random bits), monotonic within one process so
 * ids created in the same millisecond still sort in creation order. Payment ids carry 10 extra random characters
 * because the spec fixes `pay_` + 36. Request ids are cheaper still (see `requestIds`).
 */
import { randomFillSync } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

// Random bytes are drawn from a pooled buffer: one system call per 4 KiB instead of one per id.
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function randomChars(n: number): number[] {
  if (poolAt + n > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = pool[poolAt++]! & 31;
  return out;
}

let lastTime = -1;
let lastRandom: number[] = [];
// The encoded forms of the above, kept so that an id in the same millisecond re-encodes only what changed.
let timeChars = '';
let randomText = '';

/** A ULID: 10 characters of millisecond time + 16 random, incremented instead of redrawn within one millisecond. */
export function ulid(now: number = Date.now()): string {
  if (now <= lastTime) {
    let i = lastRandom.length - 1;
    while (i >= 0 && lastRandom[i] === 31) lastRandom[i--] = 0;
    if (i >= 0) lastRandom[i]!++;
    const from = Math.max(0, i);
    let tail = '';
    for (let j = from; j < lastRandom.length; j++) tail += CROCKFORD[lastRandom[j]!];
    randomText = randomText.slice(0, from) + tail;
  } else {
    lastTime = now;
    lastRandom = randomChars(16);
    timeChars = '';
    for (let i = 0, t = now; i < 10; i++, t = Math.floor(t / 32)) timeChars = CROCKFORD[t % 32] + timeChars;
    randomText = '';
    for (const c of lastRandom) randomText += CROCKFORD[c];
  }
  return timeChars + randomText;
}

export type IdPrefix =
  | 'pay'
  | 'att'
  | 'dep'
  | 'evt'
  | 'mer'
  | 'key'
  | 'lnk'
  | 'sub'
  | 'dsb'
  | 'rfd'
  | 'po'
  | 'txi'
  | 'usr'
  | 'led'
  | 'dlv'
  | 'swp'
  | 'eml'
  | 'dsp'
  | 'x4s'
  | 'x4r'
  | 'hld'
  | 'cap'
  | 'vod';

function randomBase32(chars: number): string {
  let out = '';
  for (const c of randomChars(chars)) out += CROCKFORD[c];
  return out;
}

export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  const body = ulid(now);
  return prefix === 'pay' ? `pay_${body}${randomBase32(10)}` : `${prefix}_${body}`;
}

/**
 * Request ids: `req_` + 26 characters of [0-9A-Z]. Fifteen random characters drawn once name the process, then a
 * counter follows, so ids are unique across processes and restarts and in order within one process, with no clock
 * or randomness per request (every answer carries one).
 *
 * The counter is kept in two parts so that the part converted on every request is a small integer, which V8 turns
 * into text far faster than a large one: `low` runs through the six-digit base-32 numbers and `high` (five digits,
 * part of the cached prefix) counts its wraps, one per billion requests.
 */
export function requestIds(lowDigits = 6): () => string {
  const tag = randomBase32(15);
  // (Tests pass fewer low digits to see it wrap.)
  const LOW_FIRST = 32 ** (lowDigits - 1);
  const LOW_END = 32 ** lowDigits;
  let high = 0;
  let low = LOW_FIRST;
  let prefix = '';
  const setPrefix = () => {
    prefix = `req_${tag}${(32 ** 5 + high).toString(32).slice(1).toUpperCase()}`;
  };
  setPrefix();
  return () => {
    if (low === LOW_END) {
      high++;
      low = LOW_FIRST;
      setPrefix();
    }
    return prefix + (low++).toString(32).toUpperCase();
  };
}

export const ID_PATTERNS = {
  pay: '^pay_[0-9A-Z]{36}$',
  lnk: '^lnk_[0-9A-Z]{26}$',
  evt: '^evt_[0-9A-Z]{26}$',
  mer: '^mer_[0-9A-Z]{26}$',
  sub: '^sub_[0-9A-Z]{26}$',
  dsb: '^dsb_[0-9A-Z]{26}$',
} as const;
