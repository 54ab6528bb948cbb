/**
 * The payments module's `DepositSink`: what chain watchers report becomes deposit rows, and every payment a report
 * touches runs the state machine (`deposits_changed`) in the same transaction as the deposit writes.
 *
 * A deposit's status follows its confirmations: `pending` below the attempt's `confirmations_required`, `confirmed`
 * from there, `final` from the network's `finalityConfirmations` or when the chain's commitment says so (never
 * reorged after that), `orphaned` when its block left the chain or the transfer was dropped. A transfer seen in the
 * mempool is a `pending` deposit without a block until it is reported in one. Depth-final chains call
 * `recordDeposits` for transfers in new blocks, then `headAdvanced`; commitment-final chains call
 * `depositsProgressed` instead of `headAdvanced`.
 */
import type { DepositObservation, DepositProgress, DepositSink, TransferKey } from '../../chains/ports.ts';
import type { Mode } from '../../core/mode.ts';
import { unitsToCents } from '../../core/money.ts';
import type { Tx } from '../../db/index.ts';
import type { PaymentEngine } from './engine.ts';
import {
  attemptsByAddress,
  clearMark,
  issuedAddresses,
  markedPayments,
  orphanDeposits,
  paymentsWithDeposits,
  recountConfirmations,
  anyWaitingAttempt,
  setConfirmations,
  upsertDeposit,
  withDeposits,
  type DepositSelection,
  type NewDeposit,
} from './store/deposits.ts';
import type { AttemptRow, Loaded } from './store/payments.ts';

export class DepositRecorder implements DepositSink {
  constructor(private readonly engine: PaymentEngine) {}

  async watchedAddresses(mode: Mode, chain: string, addresses: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (addresses.length === 0) return out;
    const canonical = await issuedAddresses(this.engine.deps.db, mode, chain, addresses);
    for (const a of addresses) {
      const c = canonical.get(a.toLowerCase());
      if (c) out.set(a, c);
    }
    return out;
  }

  depositsOpen(mode: Mode, chain: string): Promise<boolean> {
    return anyWaitingAttempt(this.engine.deps.db, mode, chain, this.engine.deps.clock.now());
  }

  async recordDeposits(mode: Mode, deposits: DepositObservation[]): Promise<void> {
    const byPayment = new Map<string, Array<{ attempt: AttemptRow; deposit: NewDeposit }>>();
    for (const chain of new Set(deposits.map((d) => d.chain))) {
      const onChain = deposits.filter((d) => d.chain === chain);
      const attempts = await attemptsByAddress(
        this.engine.deps.db,
        mode,
        chain,
        onChain.map((d) => d.address),
      );
      const byAddress = new Map(attempts.map((a) => [a.address.toLowerCase(), a]));
      for (const d of onChain) {
        const attempt = byAddress.get(d.address.toLowerCase());
        if (!attempt) continue;
        const list = byPayment.get(attempt.payment_id) ?? [];
        const now = this.engine.deps.clock.now();
        list.push({ attempt, deposit: { ...d, seenAt: d.blockTime && d.blockTime < now ? d.blockTime : now } });
        byPayment.set(attempt.payment_id, list);
      }
    }
    for (const [paymentId, items] of byPayment) {
      await this.engine.lockedById(mode, paymentId, async (tx, l) => {
        for (const { attempt, deposit } of items) l = await this.store(tx, l, attempt, deposit);
        await this.engine.apply(tx, l, { kind: 'deposits_changed' });
      });
    }
  }

  /**
   * One statement recounts the confirmations of every open deposit on the chain and marks the payments where a
   * deposit changed status (or started counting confirmations); only those run through the state machine, so the
   * cost of a new block does not grow with the number of payments that merely gained a confirmation. The mark is
   * durable: a crash before the state machine ran leaves it for the next pass (`settleMarked`).
   */
  async headAdvanced(mode: Mode, chain: string, head: bigint): Promise<void> {
    const network = this.engine.deps.chains.network(mode, chain);
    if (!network) return;
    await recountConfirmations(this.engine.deps.db, mode, chain, head, network.finalityConfirmations);
    await this.settleMarked(mode);
  }

  async depositsProgressed(mode: Mode, chain: string, progress: DepositProgress[]): Promise<void> {
    if (!this.engine.deps.chains.network(mode, chain)) return;
    await setConfirmations(this.engine.deps.db, mode, chain, progress);
    await this.settleMarked(mode);
  }

  /**
   * Runs the state machine on every payment marked by a recount and clears the mark in the same transaction. A payment
   * that fails keeps its mark for the next pass and does not hold back the others.
   */
  async settleMarked(mode?: Mode): Promise<number> {
    const marked = await markedPayments(this.engine.deps.db, mode);
    for (const { id, mode: m } of marked) {
      try {
        await this.engine.lockedById(m, id, async (tx, l) => {
          if (!l.row.deposits_dirty) return;
          await this.engine.apply(tx, l, { kind: 'deposits_changed' });
          await clearMark(tx, id);
        });
      } catch (err) {
        this.engine.deps.log.error({ err, paymentId: id }, 'marked payment failed; the next pass tries again');
      }
    }
    return marked.length;
  }

  async blocksRemoved(mode: Mode, chain: string, fromBlock: bigint): Promise<void> {
    await this.orphan(mode, chain, { fromBlock });
  }

  async depositsDropped(mode: Mode, chain: string, transfers: TransferKey[]): Promise<void> {
    await this.orphan(mode, chain, { keys: transfers });
  }

  private async orphan(mode: Mode, chain: string, selection: DepositSelection): Promise<void> {
    for (const paymentId of await paymentsWithDeposits(this.engine.deps.db, mode, chain, selection)) {
      await this.engine.lockedById(mode, paymentId, async (tx, l) => {
        await this.engine.apply(tx, await orphanDeposits(tx, l, chain, selection), { kind: 'deposits_changed' });
      });
    }
  }

  /**
   * Stores one transfer on `attempt` of the locked payment `l` and returns the payment with it. Its worth in cents
   * and whether it reaches its coin's minimum are fixed when first seen.
   */
  async store(tx: Tx, l: Loaded, attempt: AttemptRow, d: NewDeposit): Promise<Loaded> {
    const { chains, prices, clock } = this.engine.deps;
    const token = chains.token(attempt.mode, d.token);
    const quote = token ? prices.quote(token) : null;
    const row = await upsertDeposit(tx, attempt, d, {
      valueCents: token && quote ? unitsToCents(d.amount, quote.rate, token.decimals) : null,
      atLeastMin: !!token && d.amount >= token.minAmount,
      now: clock.now(),
    });
    return withDeposits(l, [row]);
  }
}
