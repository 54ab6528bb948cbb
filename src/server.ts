/**
 * Binds the three listeners (live API, test API, checkout) and reports their public URLs. Port 0 picks a free
 * port; unless a public URL is configured, the URL shows the bound port.
 */
import type { FastifyInstance } from 'fastify';
import { buildApiServer } from './http/api.ts';
import type { Kasse } from './kasse.ts';
import { buildCheckoutServer } from './web/server.ts';

export interface Listeners {
  live: FastifyInstance;
  test: FastifyInstance;
  checkout: FastifyInstance;
  /** Stops accepting connections and waits for in-flight requests. */
  close(): Promise<void>;
}

export async function startListeners(kasse: Kasse): Promise<Listeners> {
  const { host, ports, publicUrls } = kasse.config;
  const apps = {
    live: await buildApiServer({ kasse, mode: 'live' }),
    test: await buildApiServer({ kasse, mode: 'test' }),
    checkout: await buildCheckoutServer(kasse),
  };
  const close = async () => {
    await Promise.all([apps.live.close(), apps.test.close(), apps.checkout.close()]);
  };
  try {
    for (const role of ['live', 'test', 'checkout'] as const) {
      await apps[role].listen({ host, port: ports[role] });
      const { port } = apps[role].server.address() as { port: number };
      const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
      kasse.urls[role] = publicUrls[role] ?? `http://${shownHost}:${port}`;
    }
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
  return { ...apps, close };
}
