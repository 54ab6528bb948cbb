/**
 * Webhook signatures. Kasse signs each delivery with `Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, the
 * MAC taken over `<t>.<raw body>` with the whole webhook secret (`whsec_…`, as UTF-8) as the key. `constructEvent`
 * checks a delivery exactly as the API's receiver rules say and returns the Event; `sign` makes the header (for
 * tests, and for `kasse listen`, which re-signs the events it forwards).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { KasseEvent } from './types.ts';

/** Seconds a signature's `t` may differ from the receiver's clock. */
export const DEFAULT_TOLERANCE = 300;

export type SignatureFailure =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch'
  | 'malformed_body';

/** The delivery is not authentic (or not readable): answer it with 400 and do not act on it. */
export class KasseSignatureVerificationError extends Error {
  constructor(
    readonly reason: SignatureFailure,
    message: string,
  ) {
    super(message);
    this.name = 'KasseSignatureVerificationError';
  }
}

export interface ConstructEventOptions {
  /** Seconds `t` may be away from now (default 300). */
  tolerance?: number;
  /** The current time in unix seconds (default: the system clock). */
  now?: number;
}

const encoder = new TextEncoder();
const bytes = (b: string | Uint8Array) => (typeof b === 'string' ? encoder.encode(b) : b);

function mac(secret: string, t: number | string, body: string | Uint8Array): Buffer {
  return createHmac('sha256', secret).update(`${t}.`).update(bytes(body)).digest();
}

/**
 * Verifies a webhook and returns its Event. `rawBody` must be the body exactly as received (a string or the bytes,
 * before any JSON parsing); `signatureHeader` the `Service-Signature` header. Throws
 * `KasseSignatureVerificationError` when the header is missing or malformed, `t` is more than `tolerance` seconds
 * from now, a `v1` is not 64 hex characters, or no `v1` matches (compared in constant time). Several `v1` values are
 * allowed (Kasse sends one per active secret while a secret is being rolled); one match is enough.
 */
export function constructEvent(
  rawBody: string | Uint8Array,
  signatureHeader: string | readonly string[] | null | undefined,
  secret: string,
  options: ConstructEventOptions = {},
): KasseEvent {
  const header = Array.isArray(signatureHeader)
    ? signatureHeader.join(',')
    : (signatureHeader as string | null | undefined);
  if (!header) throw new KasseSignatureVerificationError('missing_header', 'No Service-Signature header');
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new TypeError(
      'constructEvent needs the raw body as a string or bytes, exactly as received (not parsed JSON)',
    );
  }
  let t: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (eq < 0)
      throw new KasseSignatureVerificationError(
        'malformed_header',
        'Service-Signature is not a list of key=value pairs',
      );
    if (key === 't') t = value;
    else if (key === 'v1') {
      if (!/^[0-9a-fA-F]{64}$/.test(value))
        throw new KasseSignatureVerificationError('malformed_header', 'A v1 signature is not 64 hex characters');
      signatures.push(value.toLowerCase());
    }
  }
  if (t === undefined || !/^\d{1,15}$/.test(t))
    throw new KasseSignatureVerificationError('malformed_header', 'Service-Signature has no valid t= timestamp');
  if (signatures.length === 0)
    throw new KasseSignatureVerificationError('malformed_header', 'Service-Signature has no v1 signature');
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(t)) > tolerance) {
    throw new KasseSignatureVerificationError(
      'timestamp_out_of_tolerance',
      `The signature's timestamp is more than ${tolerance} seconds from now`,
    );
  }
  const expected = mac(secret, t, rawBody);
  let matched = false;
  for (const s of signatures) if (timingSafeEqual(Buffer.from(s, 'hex'), expected)) matched = true;
  if (!matched)
    throw new KasseSignatureVerificationError('signature_mismatch', 'No signature matches the body and the secret');
  try {
    return JSON.parse(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody)) as KasseEvent;
  } catch {
    throw new KasseSignatureVerificationError('malformed_body', 'The signed body is not JSON');
  }
}

/** The `Service-Signature` value Kasse would send for `rawBody` at `timestamp` (unix seconds, default now). */
export function sign(rawBody: string | Uint8Array, secret: string, options: { timestamp?: number } = {}): string {
  const t = options.timestamp ?? Math.floor(Date.now() / 1000);
  return `t=${t},v1=${mac(secret, t, rawBody).toString('hex')}`;
}

export const webhooks = { constructEvent, sign, DEFAULT_TOLERANCE } as const;
