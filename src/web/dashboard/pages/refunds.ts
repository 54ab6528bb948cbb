/**
 * The refunds of a payment, as a section of its page: each with its status, amount, destination, note, transaction
 * and, when it failed, why (the merchant may then ask again with the refund form above it).
 */
import { html, type Html } from '../../../core/html.ts';
import type { Payment } from '../../../modules/payments/index.ts';
import type { Ctx } from '../context.ts';
import { coinSymbol } from '../../../chains/names.ts';
import { amount, badge, when } from '../format.ts';
import { paymentSections } from './payments.ts';

async function refundsSection(ctx: Ctx, p: Payment): Promise<Html | string> {
  const refunds = await ctx.kasse.refunds.list(ctx.tenant, p.id);
  if (refunds.length === 0) return '';
  return html`<section class="d-panel" id="refunds"><h2>Refunds</h2><table class="d-table"><thead><tr><th>Requested</th><th class="d-num">Amount</th><th>Destination</th><th>Status</th><th>Transaction or reason</th></tr></thead><tbody>${refunds.map(
    (r) =>
      html`<tr><td data-label="Requested">${when(r.created_at)}${r.note ? html`<p class="d-muted">${r.note}</p>` : ''}</td><td data-label="Amount" class="d-num">${amount(r.amount_display, coinSymbol(ctx.kasse.chains, ctx.mode, r.token))}</td><td data-label="Destination"><code class="d-mono">${r.destination}</code></td><td data-label="Status">${badge(r.status)}</td><td data-label="Transaction or reason">${
        r.status === 'failed'
          ? html`<p class="d-refund-error">${r.error ?? 'The transfer failed.'}</p><p class="d-muted">Nothing was sent. You can request the refund again.</p>`
          : r.tx_hash
            ? html`<code class="d-mono">${r.tx_hash}</code>`
            : '—'
      }</td></tr>`,
  )}</tbody></table></section>`;
}

paymentSections.push(refundsSection);
