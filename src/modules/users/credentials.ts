/**
 * What a user proves who they are with: a password (argon2id through @node-rs/argon2 with its default cost, which is
 * the OWASP recommendation: 19 MiB, 2 passes), a TOTP second factor (otpauth; RFC 6238, SHA-1, 6 digits, 30 s — what
 * every authenticator app reads from the QR code) and single-use recovery codes, stored as keyed hashes.
 */
import { createHmac, randomBytes, randomInt } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import { Secret, TOTP } from 'otpauth';
import { invalid } from '../../core/errors.ts';
import { loadOnce } from '../../core/lazy.ts';
import { textLength } from '../../core/text.ts';

/** NOTE: password rules. */
export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 200;
export const RECOVERY_CODE_COUNT = 10;
const TOTP_PERIOD = 30;

/** A hash of a random password, verified against when the email is unknown so both answers take as long. */
let decoy: Promise<string> | null = null;

export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

/** Whether `password` matches `stored` (null: no password set, which still costs one verification). */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  if (stored === null) {
    decoy ??= hash(randomBytes(16).toString('hex'));
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}

type Checker = { checkAsync(pw: string, inputs?: string[]): Promise<{ score: number }> };

/** zxcvbn-ts with its list of the most common passwords, loaded on first use (it is large). */
const strength = loadOnce(async (): Promise<Checker> => {
  const [{ ZxcvbnFactory }, common] = await Promise.all([
    import('@zxcvbn-ts/core'),
    import('@zxcvbn-ts/language-common'),
  ]);
  return new ZxcvbnFactory({ dictionary: { ...common.dictionary }, graphs: common.adjacencyGraphs }) as Checker;
});

/**
 * 400 (param `param`) unless the password is 10 to 200 characters and not one of the most common passwords or an
 * easy variation of one (zxcvbn score below 2, which also counts the user's own email as a guess).
 */
export async function assertPasswordAcceptable(password: string, email: string, param = 'password'): Promise<void> {
  if (textLength(password) < PASSWORD_MIN) throw invalid(`Passwords need at least ${PASSWORD_MIN} characters.`, param);
  if (textLength(password) > PASSWORD_MAX)
    throw invalid(`Passwords can have at most ${PASSWORD_MAX} characters.`, param);
  const { score } = await (await strength()).checkAsync(password.slice(0, 100), [email, ...email.split(/[@.]/)]);
  if (score < 2)
    throw invalid('This password is one of the most common passwords, or close to one. Choose another.', param);
}

/** A new TOTP secret (160 bits) and the otpauth:// URI an authenticator app reads from the QR code. */
export function newTotp(email: string, issuer: string): { secret: string; uri: string } {
  const secret = new Secret({ size: 20 }).base32;
  return { secret, uri: totpUri(email, issuer, secret) };
}

/** The otpauth:// URI of a base32 secret. */
export function totpUri(email: string, issuer: string, secret: string): string {
  return new TOTP({
    issuer,
    label: email,
    secret: Secret.fromBase32(secret),
    algorithm: 'SHA1',
    digits: 6,
    period: TOTP_PERIOD,
  }).toString();
}

/**
 * The time step a 6-digit code is valid for at `nowMs` (the current one or its neighbours, for clock drift), or
 * null. The caller refuses a step at or before the last one accepted, so a code works once.
 */
export function totpStep(secret: string, code: string, nowMs: number): number | null {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return null;
  const delta = TOTP.validate({
    token,
    secret: Secret.fromBase32(secret),
    algorithm: 'SHA1',
    digits: 6,
    period: TOTP_PERIOD,
    timestamp: nowMs,
    window: 1,
  });
  return delta === null ? null : Math.floor(nowMs / 1000 / TOTP_PERIOD) + delta;
}

const CODE_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** Ten codes like `k7dq-m2xp-9h`: 10 characters from a 31-letter alphabet (about 50 bits) each. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    let s = '';
    for (let i = 0; i < 10; i++) s += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
    return `${s.slice(0, 4)}-${s.slice(4, 8)}-${s.slice(8)}`;
  });
}

/** Recovery codes are stored as HMAC-SHA256 under the operator's key: a copy of the database alone cannot test guesses. */
export function recoveryCodeHash(key: Buffer, userId: string, code: string): string {
  const normal = code.toLowerCase().replace(/[^a-z0-9]/g, '');
  return createHmac('sha256', key).update(`recovery:${userId}:${normal}`).digest('hex');
}

/** Whether the text looks like a recovery code rather than a TOTP code. */
export function looksLikeRecoveryCode(text: string): boolean {
  return text.toLowerCase().replace(/[^a-z0-9]/g, '').length === 10;
}
