/**
 * Static files of the checkout host (src/web/static): the stylesheet, the pages' script and checkout.js, plus the
 * chain families' checkout scripts (`addScript`). Read and gzipped once (no build step). Pages link them as
 * `/assets/<name>?v=<hash>`, cached as immutable; the merchant-facing `/checkout.js` keeps a stable address and is
 * cached briefly with an ETag.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const DIR = new URL('./static/', import.meta.url);
const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

interface Asset {
  body: Buffer;
  gzip: Buffer;
  hash: string;
  type: string;
}

const assets = new Map<string, Asset>();

/** Files served under /assets/, by name: the host's own, then the families' scripts. */
const files = new Map<string, URL>();

function load(name: string): Asset {
  let a = assets.get(name);
  if (!a) {
    const body = readFileSync(files.get(name) ?? new URL(name, DIR));
    a = {
      body,
      gzip: gzipSync(body, { level: 9 }),
      hash: createHash('sha256').update(body).digest('hex').slice(0, 12),
      type: TYPES[name.split('.').pop()!]!,
    };
    assets.set(name, a);
  }
  return a;
}

/** The host's own files under /assets/. */
export const ASSET_NAMES = ['kasse.css', 'pay.js', 'dashboard.css', 'dashboard.js'] as const;
for (const n of ASSET_NAMES) files.set(n, new URL(n, DIR));

/** Serves a chain family's checkout script as `/assets/<name>` (`<family>.js`); the same file may be added again. */
export function addScript(name: string, file: URL): void {
  const known = files.get(name);
  if (known && known.href !== file.href) throw new Error(`two different assets are named ${name}`);
  files.set(name, file);
}

/** Versioned address of an asset for page markup. */
export function assetUrl(name: string): string {
  return `/assets/${name}?v=${load(name).hash}`;
}

function send(req: FastifyRequest, reply: FastifyReply, a: Asset, cacheControl: string) {
  const etag = `"${a.hash}"`;
  reply
    .header('content-type', a.type)
    .header('cache-control', cacheControl)
    .header('etag', etag)
    .header('vary', 'Accept-Encoding');
  // Merchant pages embed checkout.js; sites isolating themselves with COEP still may.
  reply.header('cross-origin-resource-policy', 'cross-origin');
  if (req.headers['if-none-match'] === etag) return reply.code(304).send();
  if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? '')))
    return reply.header('content-encoding', 'gzip').send(a.gzip);
  return reply.send(a.body);
}

export async function assetRoutes(app: FastifyInstance): Promise<void> {
  for (const n of files.keys()) load(n);
  load('checkout.js');
  app.get<{ Params: { name: string }; Querystring: { v?: string } }>('/assets/:name', async (req, reply) => {
    const name = req.params.name;
    if (!files.has(name)) return reply.callNotFound();
    const a = load(name);
    return send(req, reply, a, req.query.v === a.hash ? 'public, max-age=31536000, immutable' : 'no-cache');
  });
  app.get('/checkout.js', async (req, reply) => send(req, reply, load('checkout.js'), 'public, max-age=300'));
}
