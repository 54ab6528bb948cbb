/**
 * The README's "Going live" section inside the dashboard, linked from live mode's banner when a network takes no
 * payments (the installation may have no way out to the internet, so the dashboard shows the README it ships with),
 * after what each such network still needs in the operator's words: the banner says it plainly, this page exactly.
 *
 *   GET /dashboard/<mode>/going-live
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KASSE_HOME } from '../../../config.ts';
import { html, type Html } from '../../../core/html.ts';
import type { Ctx } from '../context.ts';
import { send, shell } from '../layout.ts';
import type { Router } from '../routing.ts';

const README = join(KASSE_HOME, 'README.md');

/** The text of a `## <title>` section of the README, or null when the file or section is missing. */
export async function readmeSection(title: string): Promise<string | null> {
  const text = await readFile(README, 'utf8').catch(() => null);
  const m = text ? new RegExp(`^## ${title}\\n([\\s\\S]*?)(?=^## |(?![\\s\\S]))`, 'm').exec(text) : null;
  return m ? m[1]!.trim() : null;
}

/** `code` spans and **bold** of one line of Markdown, escaped. */
function inline(text: string): Html {
  return html`${text
    .split(/(`[^`]+`|\*\*[^*]+\*\*)/)
    .map((part) =>
      part.startsWith('`') && part.length > 1
        ? html`<code>${part.slice(1, -1)}</code>`
        : part.startsWith('**') && part.length > 3
          ? html`<strong>${part.slice(2, -2)}</strong>`
          : part.replace(/\[([^\]]+)\]\([^)]+\)/g, '$1'),
    )}`;
}

/** The README's Markdown as the few blocks it uses: paragraphs, a numbered list, fenced code. */
export function markdownBlocks(md: string): Html {
  const blocks: Html[] = [];
  /** The numbered list's items so far, each the content of its <li> (a code block or paragraph under it included). */
  const items: Html[] = [];
  const flush = () => {
    if (items.length) blocks.push(html`<ol>${items.splice(0).map((item) => html`<li>${item}</li>`)}</ol>`);
  };
  // A numbered item starts a block of its own, though the README writes items without blank lines between them.
  for (const block of md.replace(/\n(?=\d+\. )/g, '\n\n').split(/\n\s*\n/)) {
    const body = block.replace(/^ {3}/gm, '');
    if (/^\s*```/.test(body)) {
      const code = html`<pre class="d-pre">${body.replace(/^\s*```\w*\n?|\n?\s*```\s*$/g, '')}</pre>`;
      if (items.length) items[items.length - 1] = html`${items[items.length - 1]!}${code}`;
      else blocks.push(code);
    } else if (/^\d+\. /.test(block)) {
      items.push(inline(block.replace(/^\d+\. /, '').replace(/\s*\n\s*/g, ' ')));
    } else if (/^ {3}/.test(block) && items.length) {
      items[items.length - 1] = html`${items[items.length - 1]!}<p>${inline(body.replace(/\s*\n\s*/g, ' '))}</p>`;
    } else {
      flush();
      blocks.push(html`<p>${inline(block.replace(/\s*\n\s*/g, ' '))}</p>`);
    }
  }
  flush();
  return html`${blocks}`;
}

/**
 * What each live network that takes no payments still needs, in the operator's words (`NetworkStatus.reason`, as
 * `kasse <family> status` and GET /currencies give it: settings, commands, documents).
 */
function missing(ctx: Ctx): Html | string {
  const { chains } = ctx.kasse;
  const reasons = new Map<string, string[]>();
  for (const n of chains.networks('live')) {
    const s = chains.status('live', n.id);
    if (s.state !== 'running') reasons.set(s.reason ?? s.state, [...(reasons.get(s.reason ?? s.state) ?? []), n.name]);
  }
  if (reasons.size === 0) return html`<section class="d-panel"><p>Every live network takes payments.</p></section>`;
  return html`<section class="d-panel" data-missing><h2>What this installation still needs</h2><ul>${[...reasons].map(
    ([why, names]) => html`<li><strong>${names.join(', ')}</strong>: ${inline(why)}</li>`,
  )}</ul></section>`;
}

export function goingLivePages(r: Router): void {
  r.page('/going-live', 'read', async (ctx) => {
    const section = await readmeSection('Going live');
    const body = html`${missing(ctx)}${
      section
        ? html`<section class="d-panel d-doc">${markdownBlocks(section)}</section>`
        : html`<p>See the section "Going live" in the README.md that came with Kasse.</p>`
    }`;
    return send(ctx.reply, 200, shell(ctx, { title: 'Going live', active: null, body, wide: true }));
  });
}
