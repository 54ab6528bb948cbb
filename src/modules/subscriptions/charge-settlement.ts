/**
 * A charge that landed, recorded as its period's payment (charging.ts hands it here): in one transaction the charge
 * settles, the period's waiting payment — or a fresh one when that stopped waiting — is paid with the charge's
 * transfer as its deposit through the payments engine (ledger, `payment.paid`, the subscriptions hook's
 * `subscription.paid`), the grant counts it and the receipt is mailed.
 */
import type { ChargeState } from '../../chains/charges.ts';
import { tenantOf } from '../../core/tenant.ts';
import { withTx, type Tx } from '../../db/index.ts';
import { MAIL_KINDS } from './mail.ts';
import type { Presenter } from './presenter.ts';
import { countCharge, markSucceeded, receiverOf, type ChargeRow, type GrantRow } from './store/charges.ts';
import { clockOf, insertInvoices, invoicesOf, loadSubscription, type SubscriptionRow } from './store/subscriptions.ts';

/** Thrown inside a settling transaction whose payment stopped waiting meanwhile: the settlement is made again. */
class PaymentMoved extends Error {}

/** A charge that landed pays its period: charge settled, payment paid, grant counted, receipt mailed — one transaction. */
export async function settleCharge(
  p: Presenter,
  charge: ChargeRow,
  grant: GrantRow,
  state: ChargeState & { status: 'succeeded' },
): Promise<void> {
  const tenant = tenantOf(charge);
  const receiver = await receiverOf(p.deps.db, tenant, grant.chain);
  if (!receiver || receiver.address.toLowerCase() !== grant.receiver.toLowerCase())
    throw new Error(`grant ${grant.id} pays ${grant.receiver}, not the merchant's receiver on ${grant.chain}`);
  for (let i = 0; i < 3; i++) {
    try {
      await withTx(p.deps.db, async (tx) => {
        const wall = p.deps.clock.now();
        const sub = (await loadSubscription(tx, tenant, charge.subscription_id))!;
        const paymentId = await waitingPayment(p, tx, sub, charge.period);
        if (!(await markSucceeded(tx, charge.id, paymentId, state.transaction, wall))) return;
        await countCharge(tx, grant.id, BigInt(charge.amount), wall);
        const paid = await p.deps.payments.settleCharged(tx, tenant, paymentId, {
          chain: grant.chain,
          token: grant.token,
          address: receiver.address,
          addressIndex: receiver.index,
          amount: BigInt(charge.amount),
          transfer: {
            txHash: state.transaction,
            index: state.index,
            blockNumber: state.blockNumber,
            blockHash: state.blockHash,
            from: state.from,
          },
        });
        if (!paid) throw new PaymentMoved();
        await p.deps.email.enqueue(
          tx,
          p.mail(sub, MAIL_KINDS.charged, paymentId, `subscription:${sub.id}:charge:${charge.id}`),
        );
      });
      p.deps.log.info(
        {
          chargeId: charge.id,
          subscriptionId: charge.subscription_id,
          period: charge.period,
          txHash: state.transaction,
        },
        'subscription charge succeeded',
      );
      return;
    } catch (err) {
      if (!(err instanceof PaymentMoved)) throw err;
    }
  }
  throw new Error(`charge ${charge.id}: the period's payment kept changing while it was being paid`);
}

/**
 * The period's payment to pay with a charge: its latest invoice's payment if that is still waiting, else a fresh
 * one for the period (the old one expired, was withdrawn, or was paid by hand meanwhile: the money is credited
 * like any second payment of a period, which counts once).
 */
async function waitingPayment(p: Presenter, tx: Tx, sub: SubscriptionRow, period: number): Promise<string> {
  const invoices = (await invoicesOf(tx, [sub.id])).filter((i) => i.period === period);
  const latest = invoices.at(-1);
  if (!latest) throw new Error(`subscription ${sub.id} has no invoice for period ${period}`);
  const states = await p.deps.payments.summaries(tx, sub.mode, [latest.payment_id]);
  if (states.get(latest.payment_id)?.status === 'waiting') return latest.payment_id;
  const [payment] = await p.deps.payments.createIn(tx, sub.mode, [
    {
      merchantId: sub.merchant_id,
      price_amount: sub.amount_usd_cents,
      order_id: `${sub.id}-${period}`,
      description: `${sub.title} (period ${period})`,
      success_url: sub.success_url,
      locale: sub.locale,
      metadata: { subscription_id: sub.id, period },
    },
  ]);
  await insertInvoices(tx, [
    {
      payment_id: payment!.id,
      subscription_id: sub.id,
      period,
      seq: latest.seq + 1,
      due_at: latest.due_at,
      grace_ends_at: latest.grace_ends_at,
      issued_at: clockOf(sub, p.deps.clock.now()),
      check_at: null,
    },
  ]);
  return payment!.id;
}
