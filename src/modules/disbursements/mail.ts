/** The mail that asks every owner to approve a new batch, and the dollar amounts as owners read them. */
import { coinName, type CoinNames } from '../../chains/names.ts';
import type { Mode } from '../../core/mode.ts';
import { formatCents } from '../../core/money.ts';
import type { Tx } from '../../db/index.ts';
import { type EmailService, renderEmail } from '../email/index.ts';
import type { Disbursement } from './schema.ts';

/** Mails every owner that a batch waits for approval (in the creating transaction: the outbox sends it). */
export async function mailOwners(
  deps: { email: EmailService; checkoutBase: () => string; chains: CoinNames },
  tx: Tx,
  mode: Mode,
  d: Disbursement,
  owners: readonly string[],
): Promise<void> {
  const url = `${deps.checkoutBase()}/dashboard/${mode}/disbursements/${d.id}`;
  const content = renderEmail({
    heading: `A disbursement waits for your approval`,
    paragraphs: [
      `“${d.title}” pays ${d.item_count} ${d.item_count === 1 ? 'address' : 'addresses'} ${usdText(BigInt(d.total_usd_cents))} in ${coinName(deps.chains, mode, d.token)}.`,
      `It needs ${d.approvals_required} owner ${d.approvals_required === 1 ? 'approval' : 'approvals'}. Check every item on the dashboard and approve it there with your authenticator code.`,
    ],
    action: { label: 'Review the disbursement', url },
    details: [
      ['Disbursement', d.id],
      ['Total', usdText(BigInt(d.total_usd_cents))],
      ['Items', String(d.item_count)],
    ],
  });
  for (const email of owners) {
    await deps.email.enqueue(tx, {
      merchantId: d.merchant_id,
      mode: mode,
      kind: 'disbursement.approval',
      to: email,
      subject: `Approve disbursement: ${d.title}`,
      text: content.text,
      html: content.html,
      dedupeKey: `disbursement:${d.id}:approval:${email}`,
    });
  }
}

/** US dollars with thousands separators: `$1,234.50`. */
export function usdText(cents: bigint): string {
  const neg = cents < 0n;
  return `${neg ? '-' : ''}$${formatCents(neg ? -cents : cents).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;
}
