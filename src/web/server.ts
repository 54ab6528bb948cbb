/**
 * The checkout listener: hosted checkout, link pages, the POS terminal and checkout.js. Payers need no key here.
 * Pages register themselves through `checkoutRoutes`; this file only sets the shared frame (errors, security
 * headers, probes).
 */
import type { FastifyInstance } from 'fastify';
import type { Kasse } from '../kasse.ts';
import { baseFastify, instrument } from '../http/frame.ts';
import { checkoutRoutes } from './routes.ts';

export async function buildCheckoutServer(kasse: Kasse): Promise<FastifyInstance> {
  const app = baseFastify(kasse);
  instrument(app, kasse, 'checkout');
  app.addHook('onSend', async (_req, reply) => {
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('Referrer-Policy', 'no-referrer');
    if (!reply.hasHeader('X-Frame-Options') && !reply.hasHeader('Content-Security-Policy'))
      reply.header('X-Frame-Options', 'DENY');
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  for (const route of checkoutRoutes) await app.register(route, { kasse });
  return app;
}
