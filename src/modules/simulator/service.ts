/**
 * The simulator module: finishes a waiting test payment with a chosen outcome by synthesizing what a chain would
 * report (deposits with `0xsim…` hashes, already confirmed) or what time would do, then running the same deposit,
 * state machine, ledger and event paths as real payments, through the payments module's engine and deposit sink.
 * Because deposits arrive already confirmed, each outcome publishes only its own event. Decisions per outcome:
 * docs/payments.md.
 */
import { simulatedTxHash, type TokenConfig } from '../../chains/types.ts';
import { invalid, invalidState, notFound } from '../../core/errors.ts';
import type { Tx } from '../../db/index.ts';
import type { Tenant } from '../../core/tenant.ts';
import { systemActor, type Actor } from '../audit/index.ts';
import type { CaptureService } from '../capture/index.ts';
import type {
  DepositRecorder,
  Loaded,
  NewDeposit,
  Payment,
  PaymentEngine,
  PaymentEventType,
  PaymentService,
  SimulateOutcome,
} from '../payments/index.ts';

const EXPECTED: Record<SimulateOutcome, PaymentEventType> = {
  paid: 'payment.paid',
  underpaid: 'payment.underpaid',
  expired: 'payment.expired',
  late: 'payment.late',
  wrong_asset: 'payment.wrong_asset',
  authorized: 'payment.authorized',
};

export class Simulator {
  private readonly engine: PaymentEngine;
  private readonly deposits: DepositRecorder;

  constructor(
    private readonly payments: PaymentService,
    private readonly holds: Pick<CaptureService, 'simulateAuthorized'>,
  ) {
    this.engine = payments.engine;
    this.deposits = payments.deposits;
  }

  /**
   * Runs `outcome` on a waiting payment of the tenant, which is in test mode (the simulator is the test API's);
   * answers the Payment after it. A coin it chooses first is the simulator's choice, not the actor's.
   */
  async simulate(
    tenant: Tenant,
    id: string,
    outcome: SimulateOutcome,
    actor: Actor,
    amount?: bigint,
    from?: string,
  ): Promise<Payment> {
    if (tenant.mode !== 'test') throw new Error(`payment ${id} of ${tenant.merchantId}: simulation is for test mode`);
    if (amount !== undefined && outcome !== 'paid' && outcome !== 'underpaid')
      throw invalid('amount is for the paid and underpaid outcomes only', 'amount');
    if (from !== undefined && outcome === 'expired') throw invalid('from is for outcomes that bring money', 'from');
    const first = await this.engine.load(tenant, id);
    if (!first) throw notFound('payment');
    assertWaiting(first);
    // A held payment is authorized (or expires); its money then comes only by captures.
    const manual = first.row.capture_method === 'manual';
    if (manual !== (outcome === 'authorized') && outcome !== 'expired')
      throw invalidState(
        manual
          ? `This payment's capture_method is manual: simulate the authorized outcome (or expired), then capture it.`
          : 'Only a payment with capture_method manual can be authorized.',
      );
    const coin = outcome !== 'expired' && first.attempts.length === 0 ? this.defaultCoin(manual) : null;
    if (from !== undefined) this.assertAddress(coin?.chain ?? first.attempts[first.attempts.length - 1]!.chain, from);
    if (coin) await this.payments.createAttempt(tenant, id, { token: coin.id }, systemActor('simulator'));
    const sender = from ?? null;
    const result = await this.engine.locked(tenant, id, async (tx, l) => {
      assertWaiting(l);
      const applied =
        outcome === 'authorized'
          ? await this.holds.simulateAuthorized(tx, l, sender)
          : outcome === 'expired' || outcome === 'late'
            ? await this.closeWindow(tx, l, outcome, sender)
            : await this.deposit(tx, l, outcome, sender, amount);
      if (!applied.events.includes(EXPECTED[outcome]))
        throw invalidState(`The ${outcome} outcome does not apply to this payment in its current state.`);
      await this.engine.deps.audit.record(tx, tenant, actor, 'payment.simulate', { type: 'payment', id }, { outcome });
      return applied.payment;
    });
    if (!result) throw notFound('payment');
    return result;
  }

  /**
   * paid: the exact amount; underpaid: half of it (either: `amount` when given); wrong_asset: another coin of the
   * chain at its minimum.
   */
  private async deposit(
    tx: Tx,
    l: Loaded,
    outcome: 'paid' | 'underpaid' | 'wrong_asset',
    from: string | null,
    given?: bigint,
  ) {
    const attempt = l.attempts[l.attempts.length - 1]!;
    const payAmount = BigInt(attempt.pay_amount);
    const now = this.engine.deps.clock.now();
    let d: NewDeposit;
    if (outcome === 'wrong_asset') {
      const other = this.otherCoin(attempt.chain, attempt.token);
      d = simulated(other.id, other.minAmount, now, from);
    } else {
      const amount = given ?? (outcome === 'paid' ? payAmount : payAmount / 2n);
      if (amount === 0n) throw invalidState('The pay amount is too small to simulate an underpayment.');
      // Seen within the coin hold even if the fake clock has passed it: the outcome is paid, not late.
      // biome-ignore lint/complexity/useMathMinMax: Dates, which Math.min/max would turn into numbers
      d = simulated(attempt.token, amount, attempt.expires_at < now ? attempt.expires_at : now, from);
    }
    return this.engine.apply(
      tx,
      await this.deposits.store(tx, l, attempt, { ...d, confirmations: attempt.confirmations_required }),
      { kind: 'deposits_changed' },
    );
  }

  /**
   * expired runs the clock rule as of the end of the payment's 24 hours; late delivers the full amount just after
   * the coin hold ended. Neither rewrites the payment's or attempt's stored times. Like real late money, a late
   * payment in a coin whose price held is auto-accepted by a later pass of the workers.
   */
  private async closeWindow(tx: Tx, l: Loaded, outcome: 'expired' | 'late', from: string | null) {
    const now = this.engine.deps.clock.now();
    if (outcome === 'expired') {
      // biome-ignore lint/complexity/useMathMinMax: Dates, which Math.min/max would turn into numbers
      const end = l.row.expires_at > now ? l.row.expires_at : now;
      return this.engine.apply(tx, l, { kind: 'tick' }, end);
    }
    const attempt = l.attempts[l.attempts.length - 1]!;
    const afterHold = new Date(Math.max(now.getTime(), attempt.expires_at.getTime() + 1));
    const withMoney = await this.deposits.store(tx, l, attempt, {
      ...simulated(attempt.token, BigInt(attempt.pay_amount), afterHold, from),
      confirmations: attempt.confirmations_required,
    });
    return this.engine.apply(tx, withMoney, { kind: 'deposits_changed' }, afterHold);
  }

  /** A payer's address must be one of the network paid on, as a refund's destination must. */
  private assertAddress(chain: string, from: string): void {
    const { chains } = this.engine.deps;
    if (!chains.adapter('test', chain).isValidAddress(from))
      throw invalid(`from is not a valid ${chains.network('test', chain)?.name ?? chain} address`, 'from');
  }

  /**
   * The networks file's `default` coin, else the first stablecoin, on an available test network; for a held payment,
   * among the coins that can be held.
   */
  private defaultCoin(held: boolean): TokenConfig {
    const { chains } = this.engine.deps;
    const usable = chains
      .tokens('test')
      .filter((t) => chains.available('test', t.chain) && (!held || chains.holdable('test', t.id)));
    const any = usable.find((t) => t.default) ?? usable.find((t) => t.stable);
    if (!any) throw invalidState('No stablecoin on an available test network to simulate with; choose a coin first.');
    return any;
  }

  private otherCoin(chain: string, token: string): TokenConfig {
    const others = this.engine.deps.chains.network('test', chain)?.tokens.filter((t) => t.id !== token) ?? [];
    const other = others.find((t) => t.stable) ?? others[0];
    if (!other) throw invalidState(`The ${chain} network has no other coin to simulate a wrong asset with.`);
    return other;
  }
}

function assertWaiting(l: Loaded): void {
  if (l.row.status !== 'waiting')
    throw invalidState(`Only a waiting payment can be simulated; this payment is ${l.row.status}.`);
}

function simulated(token: string, amount: bigint, seenAt: Date, from: string | null): NewDeposit {
  return {
    token,
    txHash: simulatedTxHash(),
    index: 0,
    amount,
    from,
    blockNumber: null,
    blockHash: null,
    status: 'confirmed',
    seenAt,
  };
}
