/**
 * Read-only payment data for callers that act for no merchant: the hosted checkout and link pages (a payment by its
 * unguessable id, which is the payer's capability; change fingerprints for the live status) and chain families
 * (`PaymentsPort`: a coin choice for a relay, funded deposit addresses for sweeps).
 */
import type { CoinChoice, FundedAddress, PaymentsPort } from '../../chains/ports.ts';
import { ID_PATTERNS } from '../../core/ids.ts';
import type { Mode } from '../../core/mode.ts';
import { merchantName } from '../merchants/index.ts';
import type { PaymentEngine } from './engine.ts';
import type { Payment } from './schema.ts';
import { isFinal } from './state.ts';
import { fundedAddresses } from './store/deposits.ts';
import { loadPayment } from './store/payments.ts';
import { attemptOfPayment, fingerprints, publicOwner } from './store/reads.ts';

/** A payment found by id alone, with its mode, merchant and the merchant's display name. */
export interface PublicPayment {
  mode: Mode;
  merchantId: string;
  merchantName: string;
  payment: Payment;
}

const PAY_ID = new RegExp(ID_PATTERNS.pay);

export class PaymentsReader implements PaymentsPort {
  constructor(private readonly engine: PaymentEngine) {}

  /** A payment by id in either mode; null when there is none (or the id is malformed). */
  async publicPayment(id: string): Promise<PublicPayment | null> {
    if (!PAY_ID.test(id)) return null;
    const { db } = this.engine.deps;
    const owner = await publicOwner(db, id);
    if (!owner) return null;
    const [name, l] = await Promise.all([merchantName(db, owner.merchantId), loadPayment(db, owner, id)]);
    return l ? { ...owner, merchantName: name ?? '', payment: this.engine.json(l) } : null;
  }

  /** A fingerprint per payment that changes whenever what its payer sees may have changed; one query for all. */
  fingerprints(ids: string[]): Promise<Map<string, string>> {
    return fingerprints(this.engine.deps.db, ids);
  }

  async coinChoice(paymentId: string, attemptId: string): Promise<CoinChoice | 'no_payment' | 'no_attempt'> {
    const found = await attemptOfPayment(this.engine.deps.db, paymentId, attemptId);
    if (!found) return 'no_payment';
    const a = found.attempt;
    if (!a) return 'no_attempt';
    return {
      paymentId,
      attemptId: a.id,
      mode: found.mode,
      chain: a.chain,
      token: a.token,
      address: a.address,
      payAmount: BigInt(a.pay_amount),
      expiresAt: a.expires_at,
      open: a.status === 'waiting' && !isFinal(found.status),
      hold:
        found.capture_before && found.refund_before
          ? { captureBefore: found.capture_before, refundBefore: found.refund_before }
          : null,
    };
  }

  fundedAddresses(mode: Mode, chain: string): Promise<FundedAddress[]> {
    return fundedAddresses(this.engine.deps.db, mode, chain);
  }
}
