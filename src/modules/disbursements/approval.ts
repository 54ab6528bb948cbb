/**
 * What owners approve: the canonical batch — id, merchant, mode, payout coin, every item's number, destination and
 * amount, and the total — as RFC 8785 canonical JSON. Its SHA-256 digest is what an owner sees (a short
 * fingerprint) and approves; at quorum the batch is sealed with `approval_mac` = HMAC-SHA256 under a key derived from
 * the operator's secret key, and release recomputes it over the stored rows, so a batch changed after approval (in
 * the database, by anyone) is refused.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import canonicalize from 'canonicalize';

export interface CanonicalBatch {
  id: string;
  merchantId: string;
  mode: string;
  token: string;
  totalUsdCents: bigint | number | string;
  items: Array<{ item_no: number; destination: string; amount: bigint | string }>;
}

/** The batch as canonical text (destinations lower-cased: an address's checksum spelling does not change it). */
export function canonicalBatch(b: CanonicalBatch): string {
  return canonicalize({
    v: 1,
    id: b.id,
    merchant_id: b.merchantId,
    mode: b.mode,
    token: b.token,
    total_usd_cents: String(b.totalUsdCents),
    items: [...b.items]
      .sort((x, y) => x.item_no - y.item_no)
      .map((i) => [i.item_no, i.destination.toLowerCase(), String(i.amount)]),
  })!;
}

/** SHA-256 of the canonical batch, hex: what each owner approves. */
export function batchDigest(b: CanonicalBatch): string {
  return createHash('sha256').update(canonicalBatch(b)).digest('hex');
}

/** The digest's first 16 hex digits in groups of four (`3f2a 91c0 …`), for people to compare. */
export function fingerprint(digest: string): string {
  return digest.slice(0, 16).replace(/(.{4})(?=.)/g, '$1 ');
}

/** The MAC key: HMAC of a fixed label under the operator's secret key, so it is used for nothing else. */
export function approvalKey(secretKey: Buffer): Buffer {
  return createHmac('sha256', secretKey).update('kasse/disbursement-approval/v1').digest();
}

export function approvalMac(key: Buffer, b: CanonicalBatch): string {
  return createHmac('sha256', key).update(canonicalBatch(b)).digest('hex');
}

export function macMatches(key: Buffer, b: CanonicalBatch, mac: string): boolean {
  const want = Buffer.from(approvalMac(key, b), 'hex');
  const got = Buffer.from(/^[0-9a-f]{64}$/.test(mac) ? mac : '', 'hex');
  return got.length === want.length && timingSafeEqual(got, want);
}
