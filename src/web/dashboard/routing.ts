/**
 * How dashboard pages and actions are declared: `page` (GET) and `action` (POST) under `/dashboard/:mode/…`, each with
 * the permission it needs. The wrapper loads the context (session, second factor, mode), checks the permission and,
 * for actions, the CSRF token — so a route cannot forget any of them. A new capability adds a `DashboardModule` to
 * `dashboardModules` in index.ts and an entry to `navigation` in layout.ts.
 *
 * POST/redirect/GET for every action: an action that succeeds redirects (303) itself; one that answers with a page
 * of a failed form (status 400 and up) is turned into a 303 to the page the form belongs to (the nearest page above
 * the action's address), which shows that answer once (`?form=<id>`, kept as a session note) with its status. So no
 * page a person can reload is the answer to a POST, and reloading shows the page afresh and repeats nothing.
 * A refused permission is in the audit log (`permission.refused`). Addresses under /dashboard that match nothing get
 * the dashboard's own 404 page (`notFound`).
 */
import { gunzipSync } from 'node:zlib';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html } from '../../core/html.ts';
import { ApiError } from '../../core/errors.ts';
import type { Mode } from '../../core/mode.ts';
import type { Kasse } from '../../kasse.ts';
import { NOTE_PAGE_MAX, type Permission } from '../../modules/users/index.ts';
import {
  checkSessionCsrf,
  cookieName,
  crossSite,
  loadCtx,
  modeOf,
  optionalCtx,
  parseCookies,
  type Ctx,
} from './context.ts';
import { documentOf, refusal, send, shell } from './layout.ts';
import { errorBox, tell } from './forms.ts';
import { tooLargeUpload } from './upload.ts';

export type DashboardModule = (r: Router) => void;

/** Form fields as strings (a JSON or repeated field is refused). */
export type Form = Record<string, string>;

type Params = { mode: string; [k: string]: string };

/** The path of a request's URL, without the query and a trailing slash. */
function pathOf(url: string): string {
  const path = url.split('?')[0]!;
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

export class Router {
  /** Every page's address as a pattern, to find the page a failed action returns to. */
  private readonly pages: RegExp[] = [];
  /** The context of each action request, for its onSend hook. */
  private readonly actions = new WeakMap<FastifyRequest, Ctx>();

  constructor(
    readonly app: FastifyInstance,
    readonly kasse: Kasse,
  ) {}

  /** GET /dashboard/:mode<path>; `handler` answers (usually with `send(ctx.reply, 200, shell(...))`). */
  page(
    path: string,
    permission: Permission,
    handler: (ctx: Ctx, params: Params, query: Record<string, string>) => Promise<unknown>,
  ): void {
    const segments = `/dashboard/:mode${path}`
      .split('/')
      .map((s) => (s.startsWith(':') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    this.pages.push(new RegExp(`^${segments.join('/')}$`));
    this.app.get<{ Params: Params; Querystring: Record<string, string> }>(
      `/dashboard/:mode${path}`,
      async (req, reply) => {
        const ctx = await this.enter(req, reply);
        if (!ctx) return reply;
        const { form, ...query } = (req.query ?? {}) as Record<string, string>;
        // A failed form's answer was made for this session (a refusal included), so it is shown before the page's own check.
        if (form && !crossSite(req)) {
          const kept = await this.kasse.users.notes.takePage(ctx.session.id, pathOf(req.url), form);
          if (kept) return send(reply.header('cache-control', 'no-store'), kept.status, kept.body);
        }
        if (!ctx.can(permission))
          return this.refuse(ctx, permission, 'Your role does not allow this page. Ask an owner of the account.');
        return handler(ctx, req.params, query);
      },
    );
  }

  /** POST /dashboard/:mode<path>: CSRF-checked, permission-checked; a failed form's page is shown after a redirect. */
  action(
    path: string,
    permission: Permission,
    handler: (ctx: Ctx, form: Form, params: Params) => Promise<unknown>,
  ): void {
    this.app.post<{ Params: Params }>(
      `/dashboard/:mode${path}`,
      { onSend: (req, reply, payload) => this.redirectFailure(req, reply, payload) },
      async (req, reply) => {
        const ctx = await this.enter(req, reply);
        if (!ctx) return reply;
        const form = formOf(req.body);
        try {
          checkSessionCsrf(this.kasse, req, ctx.session, form);
        } catch (err) {
          // Not a form of this session (forged, or from an expired page): answered as it is, nothing kept for it.
          const told = tell(err, {}, true);
          return send(
            reply,
            403,
            shell(ctx, {
              title: 'Form refused',
              active: null,
              body: html`${errorBox(told)}<p><a href="${`/dashboard/${ctx.mode}`}">Back to the dashboard</a></p>`,
            }),
          );
        }
        this.actions.set(req, ctx);
        if (!ctx.can(permission))
          return this.refuse(ctx, permission, 'Your role does not allow this action. Ask an owner of the account.');
        return handler(ctx, form, req.params);
      },
    );
  }

  /** The page a failed action's answer is shown on: the nearest page above the action's address, else Home. */
  backTo(mode: Mode, actionPath: string): string {
    const segments = actionPath.split('/');
    for (let n = segments.length; n > 3; n--) {
      const candidate = segments.slice(0, n).join('/');
      if (this.pages.some((p) => p.test(candidate))) return candidate;
    }
    return `/dashboard/${mode}`;
  }

  /** onSend of every action: a page answered with status ≥ 400 is kept and the browser redirected to see it. */
  private async redirectFailure(req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const ctx = this.actions.get(req);
    const type = String(reply.getHeader('content-type') ?? '');
    if (!ctx || reply.statusCode < 400 || !type.startsWith('text/html')) return payload;
    // sendPage gzips larger pages for browsers that take it.
    const doc =
      typeof payload === 'string'
        ? payload
        : Buffer.isBuffer(payload) && reply.getHeader('content-encoding') === 'gzip'
          ? gunzipSync(payload).toString('utf8')
          : null;
    if (doc === null || doc.length > NOTE_PAGE_MAX) return payload;
    const to = this.backTo(ctx.mode, pathOf(req.url));
    const id = await this.kasse.users.notes.putPage(ctx.session.id, to, { status: reply.statusCode, body: doc });
    reply
      .code(303)
      .header('location', `${to}?form=${id}`)
      .header('cache-control', 'no-store')
      .removeHeader('content-type')
      .removeHeader('content-encoding');
    return '';
  }

  /** The signed-in context for a page or action under a valid mode, or null when the answer is already given. */
  private async enter(req: FastifyRequest<{ Params: Params }>, reply: FastifyReply): Promise<Ctx | null> {
    const mode = modeOf(req.params.mode);
    if (!mode) {
      await notFound(this.kasse, req, reply);
      return null;
    }
    return loadCtx(this.kasse, req, reply, mode);
  }

  /** 403 page for a permission the user's role lacks; the refusal is in the audit log. */
  private async refuse(ctx: Ctx, permission: Permission, message: string): Promise<FastifyReply> {
    await this.kasse.audit.recordAlone(
      { mode: ctx.mode, merchantId: ctx.merchant.id },
      ctx.actor,
      'permission.refused',
      null,
      { permission, request: `${ctx.req.method} ${pathOf(ctx.req.url)}`, role: ctx.user.role },
    );
    return refusal(ctx, 403, message);
  }
}

/**
 * The dashboard's 404 page for an address under /dashboard that is no page: inside the signed-in frame (the mode
 * from the address, else the one used last) for a signed-in user, else a card with a way to sign in.
 */
export async function notFound(kasse: Kasse, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const mode =
    modeOf(/^\/dashboard\/([^/?]+)/.exec(req.url)?.[1] ?? '') ??
    (parseCookies(req)[cookieName(kasse, 'mode')] === 'live' ? 'live' : 'test');
  const ctx = await optionalCtx(kasse, req, reply, mode);
  const message = 'There is no page at this address. It may have been mistyped, or be an old bookmark.';
  if (ctx) return refusal(ctx, 404, message);
  return send(
    reply,
    404,
    documentOf({
      title: 'Page not found',
      bare: true,
      body: html`<main class="d-card" id="main"><p class="d-brand">Kasse</p><h1>Page not found</h1><p>${message}</p><p><a class="d-btn" href="/dashboard">Go to the dashboard</a></p></main>`,
    }),
  );
}

/**
 * The dashboard's page for a request that failed before or outside its page's own handling (a body over the size
 * limit, a content type no form sends, an unexpected fault): an HTML card with what happened, never the API's JSON.
 * A fault is logged with the request id the page quotes.
 */
export function errorPage(kasse: Kasse, err: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const status =
    err instanceof ApiError
      ? err.status
      : typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500
        ? err.statusCode
        : 500;
  let message: string;
  if (status >= 500) {
    kasse.log.error({ err, reqId: req.id, method: req.method, url: req.url }, 'unhandled dashboard error');
    message = `Something went wrong on our side. Nothing was changed by this request; try again, and quote request id ${req.id} if it happens again.`;
  } else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const upload = tooLargeUpload(req.url, req.headers['content-length']);
    if (upload)
      return send(
        reply,
        status,
        documentOf({
          title: 'File too large',
          bare: true,
          body: html`<main class="d-card" id="main"><p class="d-brand">Kasse</p><h1>File too large</h1><p>${upload.message}</p><p><a class="d-btn" href="${upload.back}">Back to ${upload.page}</a></p></main>`,
        }),
      );
    message = 'What was sent is too large. Nothing was changed.';
  } else {
    message = err instanceof ApiError ? err.message : 'The request could not be read. Nothing was changed.';
  }
  return send(
    reply,
    status,
    documentOf({
      title: status >= 500 ? 'Something went wrong' : 'Request refused',
      bare: true,
      body: html`<main class="d-card" id="main"><p class="d-brand">Kasse</p><h1>${status >= 500 ? 'Something went wrong' : 'Request refused'}</h1><p>${message}</p><p><a class="d-btn" href="/dashboard">Go to the dashboard</a></p></main>`,
    }),
  );
}

export function formOf(body: unknown): Form {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return {};
  const out: Form = {};
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) if (typeof v === 'string') out[k] = v;
  return out;
}
