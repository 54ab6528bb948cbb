/**
 * Object ids: prefix + Crockford base32 (upper case), time-sortable.
 *
 * The 26-character body is a ULID (48-bit millisecond time + 80 random bits), monotonic within one process so
 * ids created in the same millisecond still sort in creation order. Payment ids carry 10 extra random
 * characters because the spec fixes `pay_` + 36.
 */
import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulid';

const ulid = monotonicFactory();
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export type IdPrefix = 'pay' | 'att' | 'dep' | 'evt' | 'mer' | 'key' | 'lnk' | 'sub' | 'dsb' | 'rfd' | 'po' | 'txi' | 'usr' | 'led' | 'dlv' | 'swp';

function randomBase32(chars: number): string {
  const bytes = randomBytes(chars);
  let out = '';
  for (let i = 0; i < chars; i++) out += CROCKFORD[bytes[i]! & 31];
  return out;
}

export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  const body = ulid(now);
  return prefix === 'pay' ? `pay_${body}${randomBase32(10)}` : `${prefix}_${body}`;
}

export const ID_PATTERNS = {
  pay: '^pay_[0-9A-Z]{36}$',
  lnk: '^lnk_[0-9A-Z]{26}$',
  evt: '^evt_[0-9A-Z]{26}$',
  mer: '^mer_[0-9A-Z]{26}$',
  sub: '^sub_[0-9A-Z]{26}$',
  dsb: '^dsb_[0-9A-Z]{26}$',
} as const;
