/**
 * The merchant dashboard on the checkout host under `/dashboard`: server-rendered pages (the checkout's escaping
 * template and CSP, one stylesheet and one small script from this host), a test/live switch in the path
 * (`/dashboard/test/…`, `/dashboard/live/…`), and sessions, roles, CSRF and second factor from context.ts.
 *
 * Capabilities add their pages as a `DashboardModule` in `dashboardModules` and a `navigation` entry (layout.ts).
 * Docs: docs/dashboard.md.
 */
import type { FastifyError } from 'fastify';
import type { Kasse } from '../../kasse.ts';
import { addFormParser } from '../page.ts';
import type { CheckoutRoute } from '../routes.ts';
import { authRoutes } from './auth.ts';
import { cookieName, parseCookies, setCookie } from './context.ts';
import { auditPages } from './pages/audit.ts';
import { developerPages } from './pages/developers.ts';
import { goingLivePages } from './pages/going-live.ts';
import { disbursementPages } from './pages/disbursements.ts';
import { agentPages } from './pages/agents.ts';
import { linkPages } from './pages/links.ts';
import { paymentPages } from './pages/payments.ts';
import './pages/refunds.ts';
import { subscriptionPages } from './pages/subscriptions.ts';
import { settingsPages } from './pages/settings.ts';
import { teamPages } from './pages/team.ts';
import { addMultipartParser } from './upload.ts';
import { statementPages } from './pages/statements.ts';
import { invoicePages } from './pages/invoices.ts';
import { holdPages } from './pages/holds.ts';
import { errorPage, notFound, Router, type DashboardModule } from './routing.ts';

/** Every page module, in registration order. */
export const dashboardModules: DashboardModule[] = [
  authRoutes,
  paymentPages,
  linkPages,
  developerPages,
  teamPages,
  settingsPages,
  auditPages,
  statementPages,
  invoicePages,
  subscriptionPages,
  goingLivePages,
];
dashboardModules.push(disbursementPages);
dashboardModules.push(agentPages);
dashboardModules.push(holdPages);

const dashboard: CheckoutRoute = async (app, { kasse }: { kasse: Kasse }) => {
  addFormParser(app);
  addMultipartParser(app);
  // Whatever fails outside a page's own handling still answers a dashboard page, never the API's JSON.
  app.setErrorHandler((err, req, reply) => errorPage(kasse, err as FastifyError, req, reply));
  // The last mode looked at is where `/dashboard` and sign-in land next time.
  app.addHook('onRequest', (req, reply, next) => {
    const m = /^\/dashboard\/(test|live)(?:[/?]|$)/.exec(req.url);
    if (m && parseCookies(req)[cookieName(kasse, 'mode')] !== m[1])
      setCookie(reply, kasse, 'mode', m[1]!, 365 * 24 * 3600);
    next();
  });
  const router = new Router(app, kasse);
  for (const mod of dashboardModules) mod(router);
  // Any other address under /dashboard, with any method: the dashboard's own 404 page, never the API's JSON.
  await app.register(
    async (child) => {
      child.setNotFoundHandler((req, reply) => notFound(kasse, req, reply));
    },
    { prefix: '/dashboard' },
  );
};

export default dashboard;
