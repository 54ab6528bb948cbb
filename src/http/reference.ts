/**
 * The API reference at `{base_url}/docs` and the OpenAPI document it renders, `{base_url}/openapi.json`, both
 * answered without a key. The page is Redoc (the `redoc` package's standalone bundle, served by Kasse from
 * node_modules: no CDN) started by a small script of ours; it loads the document from this host. Its
 * Content-Security-Policy allows scripts from this host only; styles may be inline (Redoc's styled components write
 * <style> elements) and its search index runs in a worker it creates from a blob.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { escapeHtml } from '../core/html.ts';
import type { ApiDeps } from './api.ts';
import { referenceDocument } from './openapi.ts';

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

interface Asset {
  body: Buffer;
  gzip: Buffer;
  hash: string;
}

const require = createRequire(import.meta.url);
const FILES: Record<string, () => string> = {
  'redoc.standalone.js': () => require.resolve('redoc/bundles/redoc.standalone.js'),
  'reference.js': () => new URL('./static/reference.js', import.meta.url).pathname,
};
const assets = new Map<string, Asset>();

function asset(name: string): Asset {
  let a = assets.get(name);
  if (!a) {
    const body = readFileSync(FILES[name]!());
    a = {
      body,
      gzip: gzipSync(body, { level: 9 }),
      hash: createHash('sha256').update(body).digest('hex').slice(0, 12),
    };
    assets.set(name, a);
  }
  return a;
}

function sendAsset(
  req: FastifyRequest<{ Params: { name: string }; Querystring: { v?: string } }>,
  reply: FastifyReply,
) {
  const name = req.params.name;
  if (!Object.hasOwn(FILES, name)) return reply.callNotFound();
  const a = asset(name);
  const etag = `"${a.hash}"`;
  reply
    .header('content-type', 'text/javascript; charset=utf-8')
    .header('cache-control', req.query.v === a.hash ? 'public, max-age=31536000, immutable' : 'no-cache')
    .header('etag', etag)
    .header('vary', 'Accept-Encoding');
  if (req.headers['if-none-match'] === etag) return reply.code(304).send();
  if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? '')))
    return reply.header('content-encoding', 'gzip').send(a.gzip);
  return reply.send(a.body);
}

function page(title: string, prefix: string): string {
  const src = (name: string) => escapeHtml(`${prefix}/docs/assets/${name}?v=${asset(name).hash}`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<style>body{margin:0}img[alt="redocly logo"]{display:none}</style>
<script src="${src('redoc.standalone.js')}" defer></script>
<script src="${src('reference.js')}" defer></script>
</head>
<body>
<div id="reference" data-spec-url="${escapeHtml(`${prefix}/openapi.json`)}">
<noscript><p>This reference needs JavaScript. The OpenAPI document it shows is at <a href="${escapeHtml(`${prefix}/openapi.json`)}">openapi.json</a>.</p></noscript>
</div>
</body>
</html>
`;
}

export default async function referenceRoutes(app: FastifyInstance, { kasse, mode }: ApiDeps): Promise<void> {
  const open = { schema: { hide: true }, config: { public: true } };
  // Built on first use: with port 0 the server URL is known only after listen; routes do not change after that.
  let doc: Record<string, unknown> | undefined;
  const document = () =>
    (doc ??= referenceDocument(app.swagger() as Record<string, unknown>, mode, kasse.apiBase(mode)));
  const prefix = () => new URL(kasse.apiBase(mode)).pathname.replace(/\/$/, '');

  app.get('/v1/openapi.json', open, async () => document());
  app.get('/v1/docs', open, async (_req, reply) => {
    reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', CSP)
      .header('cache-control', 'no-cache');
    return page(`Kasse ${mode} API reference`, prefix());
  });
  // Asset URLs carry their content hash (`?v=`) so they can be cached for good; it is the one query parameter.
  const asset = {
    ...open,
    schema: {
      hide: true,
      querystring: { type: 'object', properties: { v: { type: 'string' } }, additionalProperties: false },
    },
  };
  app.get<{ Params: { name: string }; Querystring: { v?: string } }>('/v1/docs/assets/:name', asset, sendAsset);
}
