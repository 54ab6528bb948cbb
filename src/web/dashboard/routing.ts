/**
 * How dashboard pages and actions are declared: `page` (GET) and `action` (POST) under `/dashboard/:mode/…`, each with
 * the permission it needs. The wrapper loads the context (session, second factor, mode), checks the permission and,
 * for actions, the CSRF token — so a route cannot forget any of them. A new capability adds a `DashboardModule` to
 * `dashboardModules` in index.ts and an entry to `navigation` in layout.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html } from '../../core/html.ts';
import type { Kasse } from '../../kasse.ts';
import type { Permission } from '../../modules/users/permissions.ts';
import { checkSessionCsrf, loadCtx, modeOf, type Ctx } from './context.ts';
import { errorBox, refusal, send, shell, tell } from './layout.ts';

export type DashboardModule = (r: Router) => void;

/** Form fields as strings (a JSON or repeated field is refused). */
export type Form = Record<string, string>;

type Params = { mode: string; [k: string]: string };

export class Router {
  constructor(
    readonly app: FastifyInstance,
    readonly kasse: Kasse,
  ) {}

  /** GET /dashboard/:mode<path>; `handler` answers (usually with `send(ctx.reply, 200, shell(...))`). */
  page(path: string, permission: Permission, handler: (ctx: Ctx, params: Params, query: Record<string, string>) => Promise<unknown>): void {
    this.app.get<{ Params: Params; Querystring: Record<string, string> }>(`/dashboard/:mode${path}`, async (req, reply) => {
      const ctx = await this.enter(req, reply, permission);
      if (!ctx) return reply;
      return handler(ctx, req.params, (req.query ?? {}) as Record<string, string>);
    });
  }

  /** POST /dashboard/:mode<path>: CSRF-checked, permission-checked. */
  action(path: string, permission: Permission, handler: (ctx: Ctx, form: Form, params: Params) => Promise<unknown>): void {
    this.app.post<{ Params: Params }>(`/dashboard/:mode${path}`, async (req, reply) => {
      const ctx = await this.enter(req, reply, null);
      if (!ctx) return reply;
      const form = formOf(req.body);
      try {
        checkSessionCsrf(this.kasse, req, ctx.session, form);
      } catch (err) {
        const told = tell(err, {}, true);
        return send(reply, 403, shell(ctx, { title: 'Form refused', active: '', body: html`${errorBox(told)}<p><a href="${`/dashboard/${ctx.mode}`}">Back to the dashboard</a></p>` }));
      }
      if (!ctx.can(permission)) return refusal(ctx, 403, 'Your role does not allow this action. Ask an owner of the account.');
      return handler(ctx, form, req.params);
    });
  }

  private async enter(req: FastifyRequest<{ Params: Params }>, reply: FastifyReply, permission: Permission | null): Promise<Ctx | null> {
    const mode = modeOf(req.params.mode);
    if (!mode) {
      reply.callNotFound();
      return null;
    }
    const ctx = await loadCtx(this.kasse, req, reply, mode);
    if (!ctx) return null;
    if (permission && !ctx.can(permission)) {
      refusal(ctx, 403, 'Your role does not allow this page. Ask an owner of the account.');
      return null;
    }
    return ctx;
  }
}

export function formOf(body: unknown): Form {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return {};
  const out: Form = {};
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) if (typeof v === 'string') out[k] = v;
  return out;
}
