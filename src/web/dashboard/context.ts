/**
 * What every dashboard request goes through: cookies, the session and its user, the merchant, the mode from the
 * path, CSRF tokens, and the permission check. `guarded` wraps a page or action so none can forget a step:
 *
 *   1. the session cookie must name a live session (else: to the sign-in page, then back);
 *   2. the session must be past its second factor (else: the code page, or TOTP enrolment for an owner without one);
 *   3. a POST must carry the CSRF token of this session (HMAC of the session id under the operator's key) and come
 *      from this host;
 *   4. the user's role must have the permission (else 403) — on the server, for every page and action.
 *
 * Cookies are HttpOnly, and Secure with the `__Host-` prefix when the checkout URL is https. The session cookie is
 * SameSite=Lax, so a link from a mail client or another site (a top-level GET) opens the page signed in; requests
 * from other sites that change anything are POSTs, which carry no Lax cookie and must carry the CSRF token anyway.
 * GET requests change nothing (a note kept for the session is not shown to a request another site started).
 * The other cookies are SameSite=Strict.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Mode } from '../../core/mode.ts';
import type { Tenant } from '../../core/tenant.ts';
import { ApiError } from '../../core/errors.ts';
import type { Kasse } from '../../kasse.ts';
import type { Actor } from '../../modules/audit/index.ts';
import type { MerchantRecord } from '../../modules/merchants/index.ts';
import { can, type ClientMeta, type Permission, type SessionRow, type UserRow } from '../../modules/users/index.ts';
import { assertSameOrigin } from '../page.ts';

export const MODES: readonly Mode[] = ['test', 'live'];

export interface Ctx {
  kasse: Kasse;
  req: FastifyRequest;
  reply: FastifyReply;
  session: SessionRow;
  user: UserRow;
  merchant: MerchantRecord;
  mode: Mode;
  /** The session's merchant in the path's mode: what the page's service calls act for. */
  tenant: Tenant;
  /** This session's CSRF token, for forms. */
  csrf: string;
  meta: ClientMeta;
  /** The audit log's actor for changes made in this request. */
  actor: Actor;
  can(p: Permission): boolean;
}

// ---- cookies ------------------------------------------------------------------------------------------------------

export function parseCookies(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of String(req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = decodeURIComponent(part.slice(i + 1).trim());
  }
  return out;
}

export function secureCookies(kasse: Kasse): boolean {
  return kasse.urls.checkout.startsWith('https://');
}

/** Cookie names: `__Host-` prefixed (bound to this host, Secure, Path=/) on https. */
export function cookieName(kasse: Kasse, base: 'session' | 'pre' | 'device' | 'mode'): string {
  return secureCookies(kasse) ? `__Host-kasse_${base}` : `kasse_${base}`;
}

export function setCookie(
  reply: FastifyReply,
  kasse: Kasse,
  base: 'session' | 'pre' | 'device' | 'mode',
  value: string,
  maxAgeSeconds?: number,
): void {
  const attrs = [
    `${cookieName(kasse, base)}=${encodeURIComponent(value)}`,
    'Path=/',
    'HttpOnly',
    `SameSite=${base === 'session' ? 'Lax' : 'Strict'}`,
  ];
  if (secureCookies(kasse)) attrs.push('Secure');
  if (maxAgeSeconds !== undefined) attrs.push(`Max-Age=${maxAgeSeconds}`);
  // One Set-Cookie per cookie: a later value replaces an earlier one of the answer (Fastify appends to the header).
  const prior = reply.getHeader('set-cookie');
  const others = (Array.isArray(prior) ? prior : prior ? [String(prior)] : []).filter(
    (c) => !c.startsWith(`${cookieName(kasse, base)}=`),
  );
  reply.removeHeader('set-cookie');
  reply.header('set-cookie', [...others, attrs.join('; ')]);
}

export function clearCookie(reply: FastifyReply, kasse: Kasse, base: 'session' | 'pre'): void {
  setCookie(reply, kasse, base, '', 0);
}

export function clientMeta(req: FastifyRequest): ClientMeta {
  return {
    ip: req.ip ?? null,
    userAgent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : null,
  };
}

// ---- CSRF ---------------------------------------------------------------------------------------------------------

function mac(kasse: Kasse, text: string): string {
  return createHmac('sha256', kasse.secrets.secretKey).update(text).digest('base64url');
}

export function sessionCsrf(kasse: Kasse, session: SessionRow): string {
  return mac(kasse, `csrf:${session.id}`);
}

/**
 * The CSRF token for forms shown before sign-in (sign-in, set-up and reset pages): bound to a random cookie of this
 * browser, so another site cannot post those forms (login CSRF). Sets the cookie when missing.
 */
export function preCsrf(kasse: Kasse, req: FastifyRequest, reply: FastifyReply): string {
  let value = parseCookies(req)[cookieName(kasse, 'pre')];
  if (!value || !/^[A-Za-z0-9_-]{22}$/.test(value)) {
    value = randomBytes(16).toString('base64url');
    setCookie(reply, kasse, 'pre', value);
  }
  return mac(kasse, `pre:${value}`);
}

function sameToken(a: string, b: unknown): boolean {
  if (typeof b !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * A form refused before its action ran: no CSRF token of this browser or session, or sent from another site. The
 * dashboard answers it 403 wherever it is refused (forms.ts `tell`); as an API error it stays `invalid_request`.
 */
export class FormRefused extends ApiError {
  constructor(message: string, param: string) {
    super('invalid_request', message, param);
  }
}

export const csrfRefused = () =>
  new FormRefused('This form has expired or did not come from the dashboard. Reload the page and try again.', '_csrf');

function sameOrigin(kasse: Kasse, req: FastifyRequest): void {
  try {
    assertSameOrigin(req, kasse.urls.checkout);
  } catch (err) {
    throw err instanceof ApiError ? new FormRefused(err.message, err.param ?? 'Origin') : err;
  }
}

/** FormRefused unless the form carries the pre-sign-in token of this browser and comes from this host. */
export function checkPreCsrf(kasse: Kasse, req: FastifyRequest, body: Record<string, unknown>): void {
  sameOrigin(kasse, req);
  const value = parseCookies(req)[cookieName(kasse, 'pre')];
  if (!value || !sameToken(mac(kasse, `pre:${value}`), body._csrf)) throw csrfRefused();
}

/** FormRefused unless the form carries this session's token and comes from this host. */
export function checkSessionCsrf(
  kasse: Kasse,
  req: FastifyRequest,
  session: SessionRow,
  body: Record<string, unknown>,
): void {
  sameOrigin(kasse, req);
  if (!sameToken(sessionCsrf(kasse, session), body._csrf)) throw csrfRefused();
}

// ---- sessions -----------------------------------------------------------------------------------------------------

export async function currentSession(
  kasse: Kasse,
  req: FastifyRequest,
): Promise<{ session: SessionRow; user: UserRow } | null> {
  return kasse.users.sessions.load(parseCookies(req)[cookieName(kasse, 'session')]);
}

/** Where a session that is not yet full must go next, or null when it is full. */
export function pendingStep(session: SessionRow): string | null {
  if (session.stage === 'password') return '/dashboard/signin/code';
  if (session.stage === 'enrol') return '/dashboard/enrol';
  return null;
}

/** A path on this host to return to after sign-in (only dashboard and POS pages; never another host). */
export function safeNext(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 300) return null;
  return /^\/(dashboard(\/[A-Za-z0-9_./-]*)?|l\/[0-9a-z]{12}(\/[A-Za-z0-9_/-]*)?)(\?[A-Za-z0-9_=&%.-]*)?$/.test(
    value,
  ) && !value.includes('//')
    ? value
    : null;
}

export function signInRedirect(reply: FastifyReply, req: FastifyRequest): FastifyReply {
  const next = req.method === 'GET' ? safeNext(req.url) : null;
  return reply
    .code(303)
    .header('location', `/dashboard/signin${next ? `?next=${encodeURIComponent(next)}` : ''}`)
    .send();
}

export function actorOf(user: UserRow, meta: ClientMeta): Actor {
  return { type: 'user', id: user.id, label: user.email, ip: meta.ip };
}

/** Builds the context of a signed-in request (`mode` from the path), or answers the redirect/refusal itself. */
export async function loadCtx(kasse: Kasse, req: FastifyRequest, reply: FastifyReply, mode: Mode): Promise<Ctx | null> {
  const found = await currentSession(kasse, req);
  if (!found) {
    signInRedirect(reply, req);
    return null;
  }
  const step = pendingStep(found.session);
  if (step) {
    reply.code(303).header('location', step).send();
    return null;
  }
  return ctxOf(kasse, req, reply, mode, found);
}

/** The context of a request with a full session, or null (no redirect): for pages shown signed in or not (404). */
export async function optionalCtx(
  kasse: Kasse,
  req: FastifyRequest,
  reply: FastifyReply,
  mode: Mode,
): Promise<Ctx | null> {
  const found = await currentSession(kasse, req);
  return found && !pendingStep(found.session) ? ctxOf(kasse, req, reply, mode, found) : null;
}

/** Whether another site started this request (a link or form there): such a request is shown nothing kept for later. */
export function crossSite(req: FastifyRequest): boolean {
  return req.headers['sec-fetch-site'] === 'cross-site';
}

async function ctxOf(
  kasse: Kasse,
  req: FastifyRequest,
  reply: FastifyReply,
  mode: Mode,
  found: { session: SessionRow; user: UserRow },
): Promise<Ctx> {
  const meta = clientMeta(req);
  const merchant = await kasse.merchants.get(found.user.merchant_id);
  return {
    kasse,
    req,
    reply,
    session: found.session,
    user: found.user,
    merchant,
    mode,
    tenant: { mode, merchantId: merchant.id },
    csrf: sessionCsrf(kasse, found.session),
    meta,
    actor: actorOf(found.user, meta),
    can: (p) => can(found.user.role, p),
  };
}

export function modeOf(value: string): Mode | null {
  return (MODES as readonly string[]).includes(value) ? (value as Mode) : null;
}

/**
 * Staff access to a POS terminal of `merchantId`: a full session of a user of that merchant (any role). Answers the
 * user and the CSRF token for the terminal's form, or why not.
 */
export async function posAccess(
  kasse: Kasse,
  req: FastifyRequest,
  merchantId: string,
): Promise<{ session: SessionRow; user: UserRow; csrf: string } | 'signin' | 'forbidden'> {
  const found = await currentSession(kasse, req);
  if (!found || found.session.stage !== 'full') return 'signin';
  if (found.user.merchant_id !== merchantId || !can(found.user.role, 'pos.use')) return 'forbidden';
  return { ...found, csrf: sessionCsrf(kasse, found.session) };
}
