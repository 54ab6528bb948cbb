/**
 * Agents: what the x402 facilitator does for the merchant (docs/x402.md). Every role reads it; staff turn resources
 * on and off for discovery.
 *
 *   GET  /dashboard/<mode>/agents                            settlements that failed (with why) or are still
 *                                                            settling, the discovery catalogue (declared resources
 *                                                            and agent-payable links, each listed or not and why),
 *                                                            x402 addresses retired
 *   POST /dashboard/<mode>/agents/resources/<id>/publish     (staff) `published=0|1`: a declared resource
 *   POST /dashboard/<mode>/agents/links/<id>/publish         (staff) `published=0|1`: an agent-payable link
 */
import { html, type Html } from '../../../core/html.ts';
import { ID_PATTERNS } from '../../../core/ids.ts';
import type { CatalogueEntry } from '../../../modules/x402/index.ts';
import type { Ctx } from '../context.ts';
import { badge, when } from '../format.ts';
import { actionForm, found, tell } from '../forms.ts';
import { done, navigation, refusal, sendShell } from '../layout.ts';
import type { Router } from '../routing.ts';

const PATH = '/agents';
const RESOURCE_ID = /^x4r_[0-9A-Z]{26}$/;

// After Links in the navigation.
navigation.splice(navigation.findIndex((n) => n.path === '/links') + 1, 0, {
  path: PATH,
  label: 'Agents',
  permission: 'read',
});

function settlementsPanel(
  rows: Awaited<ReturnType<Ctx['kasse']['x402']['settlements']>>,
  title: string,
  empty: string,
  data: string,
): Html {
  const table = rows.length
    ? html`<table class="d-table"><thead><tr><th>Started</th><th>Network</th><th>Payer</th><th class="d-num">Amount (units)</th><th>Resource</th><th>Status</th><th>Transaction or reason</th></tr></thead><tbody>${rows.map(
        (r) =>
          html`<tr><td data-label="Started">${when(r.created_at)}</td><td data-label="Network">${r.network}</td><td data-label="Payer"><code class="d-mono">${r.payer}</code></td><td data-label="Amount (units)" class="d-num">${r.amount}</td><td data-label="Resource">${r.resource ?? '—'}</td><td data-label="Status">${badge(r.status)}</td><td data-label="Transaction or reason">${
            r.error ? html`<p class="d-refund-error">${r.error}</p>` : ''
          }${r.transaction ? html`<code class="d-mono">${r.transaction}</code>` : r.error ? '' : '—'}</td></tr>`,
      )}</tbody></table>`
    : html`<p class="d-empty">${empty}</p>`;
  return html`<section class="d-panel" data-panel="${data}"><h2>${title}</h2>${table}</section>`;
}

function resourceState(e: CatalogueEntry, days: number): string {
  if (!e.published) return 'turned off';
  if (e.listed) return 'listed';
  return e.lastPaidAt ? `not paid for ${days} days` : 'not paid yet';
}

/** A link's state in the catalogue: listed (the catalogue's own rule says so), else why not. */
function linkState(
  ctx: Ctx,
  l: { expires_at: string | null },
  published: boolean,
  listed: boolean,
  days: number,
): string {
  if (listed) return 'listed';
  if (!published) return 'turned off';
  if (l.expires_at !== null && Date.parse(l.expires_at) <= ctx.kasse.clock.millis()) return 'expired';
  return `not paid by an agent for ${days} days`;
}

async function agentsPage(ctx: Ctx): Promise<unknown> {
  const { kasse, mode, tenant } = ctx;
  const discovery = kasse.x402.discovery;
  const [failed, pending, declared, linkStates, listedLinks, links, retired] = await Promise.all([
    kasse.x402.settlements(tenant, { status: 'failed', limit: 50 }),
    kasse.x402.settlements(tenant, { status: 'pending', limit: 50 }),
    discovery.catalogue(tenant),
    discovery.linkStates(tenant),
    discovery.listedLinkIds(tenant),
    kasse.links.list(tenant),
    kasse.x402.retired(tenant),
  ]);
  const base = `/dashboard/${mode}${PATH}`;
  const staff = ctx.can('links.write');
  const toggle = (action: string, published: boolean) =>
    staff
      ? actionForm(ctx, action, published ? 'Turn off' : 'Turn on', {
          danger: published,
          fields: html`<input type="hidden" name="published" value="${published ? '0' : '1'}">`,
        })
      : '';
  const agentLinks = links.data.filter(
    (l) => l.kind === 'fixed' && !l.collect_email && l.active && (l.max_uses === null || l.uses < l.max_uses),
  );
  const catalogue = html`<section class="d-panel" data-catalogue><h2>Discovery</h2>
<p class="d-hint">Agents find what you sell through Kasse's catalogue at <code class="d-mono">${kasse.apiBase(mode)}/x402/discovery/resources</code>: your agent-payable links, and the resources your servers declare with the <code>bazaar</code> extension once they are paid for. A resource drops out when you turn it off or when it has not been paid for ${discovery.days} days.</p>
${
  declared.length
    ? html`<table class="d-table"><thead><tr><th>Resource</th><th>Networks</th><th>Last paid</th><th>State</th><th></th></tr></thead><tbody>${declared.map(
        (e) =>
          html`<tr data-resource="${e.id}"><td data-label="Resource"><code class="d-mono">${e.method ?? e.type.toUpperCase()} ${e.resource}</code>${e.description ? html`<p class="d-muted">${e.description}</p>` : ''}</td><td data-label="Networks">${e.networks.join(', ')}</td><td data-label="Last paid">${when(e.lastPaidAt)}</td><td data-label="State">${resourceState(e, discovery.days)}</td><td>${toggle(`${base}/resources/${e.id}/publish`, e.published)}</td></tr>`,
      )}</tbody></table>`
    : html`<p class="d-empty">No resource of your servers has been declared through Kasse in this mode yet.</p>`
}
<h3>Agent-payable links</h3>
${
  agentLinks.length
    ? html`<table class="d-table"><thead><tr><th>Link</th><th>Last paid by an agent</th><th>State</th><th></th></tr></thead><tbody>${agentLinks.map(
        (l) => {
          const s = linkStates.get(l.id);
          const published = s?.published ?? true;
          return html`<tr data-link="${l.id}"><td data-label="Link"><a href="/dashboard/${mode}/links/${l.id}">${l.title}</a><p class="d-muted"><code class="d-mono">${l.url}</code></p></td><td data-label="Last paid by an agent">${when(s?.lastPaidAt ?? null)}</td><td data-label="State">${linkState(ctx, l, published, listedLinks.has(l.id), discovery.days)}</td><td>${toggle(`${base}/links/${l.id}/publish`, published)}</td></tr>`;
        },
      )}</tbody></table>`
    : html`<p class="d-empty">No active fixed-amount link in this mode: agents pay those directly.</p>`
}
</section>`;
  const retiredPanel = retired.length
    ? html`<section class="d-panel" data-retired><h2>Retired x402 addresses</h2><p class="d-hint">Given out before their network's configuration changed (for example on the simulator, before a node was set up). Kasse no longer offers them and refuses payments to them.</p><ul>${retired.map(
        (r) => html`<li><code class="d-mono">${r.address}</code> (${r.chain}), retired ${when(r.retired_at)}</li>`,
      )}</ul></section>`
    : '';
  const body = html`${settlementsPanel(failed, 'Failed settlements', 'No settlement has failed in this mode.', 'failed')}
${pending.length ? settlementsPanel(pending, 'Settling', '', 'pending') : ''}
${catalogue}${retiredPanel}`;
  return sendShell(ctx, null, { title: 'Agents', active: PATH, body, wide: true });
}

export function agentPages(r: Router): void {
  const { kasse } = r;
  r.page(PATH, 'read', async (ctx) => agentsPage(ctx));

  r.action(`${PATH}/resources/:id/publish`, 'links.write', async (ctx, form, p) => {
    if (!RESOURCE_ID.test(p.id!)) return refusal(ctx, 404, 'There is no such resource in this mode of your account.');
    try {
      await kasse.x402.discovery.publishResource(ctx.tenant, p.id!, form.published === '1', ctx.actor);
    } catch (err) {
      tell(err);
      return refusal(ctx, 404, 'There is no such resource in this mode of your account.');
    }
    return done(ctx.reply, `/dashboard/${ctx.mode}${PATH}`);
  });

  r.action(`${PATH}/links/:id/publish`, 'links.write', async (ctx, form, p) => {
    const missing = () => refusal(ctx, 404, 'There is no such link in this mode of your account.');
    if (!new RegExp(ID_PATTERNS.lnk).test(p.id!)) return missing();
    const link = await found(() => kasse.links.get(ctx.tenant, p.id!));
    if (!link) return missing();
    await kasse.x402.discovery.publishLink(
      ctx.tenant,
      { id: link.id, url: link.url },
      form.published === '1',
      ctx.actor,
    );
    return done(ctx.reply, `/dashboard/${ctx.mode}${PATH}`);
  });
}
