/**
 * A readable API reference rendered on the server from the OpenAPI document itself, so it can never disagree with
 * the routes. Plain HTML with inline styles: no scripts, no third-party resources.
 */
import { escapeHtml } from '../core/html.ts';

interface OpenApiDoc {
  info: { title: string; version: string; description?: string };
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown> };
}

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<{ name: string; in: string; required?: boolean; description?: string; schema?: unknown }>;
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }>;
}

export { escapeHtml };

const json = (v: unknown) => `<pre>${escapeHtml(JSON.stringify(v, null, 2))}</pre>`;

export function renderReference(doc: OpenApiDoc): string {
  const ops: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = (op.parameters ?? [])
        .map((p) => `<li><code>${escapeHtml(p.name)}</code> (${escapeHtml(p.in)}${p.required ? ', required' : ''}) ${escapeHtml(p.description ?? '')}</li>`)
        .join('');
      const body = op.requestBody?.content?.['application/json']?.schema;
      const responses = Object.entries(op.responses ?? {})
        .map(([code, r]) => `<li><b>${escapeHtml(code)}</b> ${escapeHtml(r.description ?? '')}</li>`)
        .join('');
      const id = `${method}-${path}`.replace(/[^a-zA-Z0-9]+/g, '-');
      ops.push(`<section id="${escapeHtml(id)}"><h2><span class="m">${escapeHtml(method.toUpperCase())}</span> ${escapeHtml(path)}</h2>
${op.summary ? `<p><b>${escapeHtml(op.summary)}</b></p>` : ''}${op.description ? `<p>${escapeHtml(op.description)}</p>` : ''}
${params ? `<h3>Parameters</h3><ul>${params}</ul>` : ''}${body ? `<h3>Request body</h3>${json(body)}` : ''}
<h3>Responses</h3><ul>${responses}</ul></section>`);
    }
  }
  const schemas = Object.entries(doc.components?.schemas ?? {})
    .map(([name, s]) => `<section id="schema-${escapeHtml(name)}"><h2>${escapeHtml(name)}</h2>${json(s)}</section>`)
    .join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(doc.info.title)} reference</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
pre{background:#f4f4f5;padding:.75rem;overflow:auto;font-size:13px}section{border-top:1px solid #ddd;padding:.5rem 0}
.m{font-family:monospace;background:#1f4fd1;color:#fff;padding:0 .4rem;border-radius:3px}code{background:#f4f4f5}</style></head>
<body><h1>${escapeHtml(doc.info.title)} <small>v${escapeHtml(doc.info.version)}</small></h1>
<p>${escapeHtml(doc.info.description ?? '')}</p><p>Base URL: <code>${escapeHtml(doc.servers?.[0]?.url ?? '')}</code> · <a href="openapi.json">openapi.json</a></p>
${ops.join('\n')}<h1>Schemas</h1>${schemas}</body></html>`;
}
