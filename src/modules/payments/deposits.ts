/**
 * The payments module's `DepositSink`: what chain watchers report becomes deposit rows, and every payment a report
 * touches runs the state machine (`deposits_changed`) in the same transaction as the deposit writes.
 *
 * A deposit's status follows its confirmations: `pending` below the attempt's `confirmations_required`, `confirmed`
 * from there, `final` from the network's `finalityConfirmations` (never reorged after that), `orphaned` when its
 * block left the chain. Watchers call `recordDeposits` for transfers in new blocks, then `headAdvanced`.
 */
import { sql, type RawBuilder } from 'kysely';
import type { DepositObservation, DepositSink } from '../../chains/types.ts';
import type { Mode } from '../../core/mode.ts';
import { newId } from '../../core/ids.ts';
import { unitsToCents } from '../../core/money.ts';
import type { Tx } from '../../db/index.ts';
import type { PaymentEngine } from './engine.ts';
import type { AttemptRow } from './store.ts';

/** A transfer to be stored on an attempt: a watcher observation, or a simulated one (no block). */
export interface NewDeposit {
  token: string;
  txHash: string;
  index: number;
  amount: bigint;
  from: string | null;
  blockNumber: bigint | null;
  blockHash: string | null;
  status?: 'pending' | 'confirmed';
  confirmations?: number;
  seenAt?: Date;
}

export class DepositRecorder implements DepositSink {
  constructor(private readonly engine: PaymentEngine) {}

  async watchedAddresses(mode: Mode, chain: string, addresses: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (addresses.length === 0) return out;
    const rows = await this.engine.deps.db
      .selectFrom('attempts')
      .select('address')
      .where('mode', '=', mode)
      .where('chain', '=', chain)
      .where(sql<string>`lower(address)`, 'in', [...new Set(addresses.map((a) => a.toLowerCase()))])
      .execute();
    const canonical = new Map(rows.map((r) => [r.address.toLowerCase(), r.address]));
    for (const a of addresses) {
      const c = canonical.get(a.toLowerCase());
      if (c) out.set(a, c);
    }
    return out;
  }

  async recordDeposits(mode: Mode, deposits: DepositObservation[]): Promise<void> {
    const byPayment = new Map<string, Array<{ attempt: AttemptRow; deposit: NewDeposit }>>();
    for (const chain of new Set(deposits.map((d) => d.chain))) {
      const onChain = deposits.filter((d) => d.chain === chain);
      const attempts = await this.engine.deps.db
        .selectFrom('attempts')
        .selectAll()
        .where('mode', '=', mode)
        .where('chain', '=', chain)
        .where(sql<string>`lower(address)`, 'in', [...new Set(onChain.map((d) => d.address.toLowerCase()))])
        .execute();
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
      await this.engine.locked({ mode, merchantId: null }, paymentId, async (tx, l) => {
        for (const { attempt, deposit } of items) await insertDeposit(this.engine, tx, attempt, deposit);
        await this.engine.apply(tx, await this.engine.reload(tx, l), { kind: 'deposits_changed' });
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
    const h = head.toString();
    await sql`
      WITH cur AS (
        SELECT id, status, confirmations FROM deposits
        WHERE mode = ${mode} AND chain = ${chain} AND status IN ('pending', 'confirmed')
          AND block_number IS NOT NULL AND block_number <= ${h}::bigint
          AND confirmations <> (${h}::bigint - block_number + 1)::int
        FOR UPDATE
      ), upd AS (
        UPDATE deposits d SET
          confirmations = (${h}::bigint - d.block_number + 1)::int,
          status = CASE WHEN (${h}::bigint - d.block_number + 1) >= ${network.finalityConfirmations} THEN 'final'
                        WHEN (${h}::bigint - d.block_number + 1) >= d.confirmations_required THEN 'confirmed'
                        ELSE 'pending' END
        FROM cur WHERE d.id = cur.id
        RETURNING d.payment_id, d.status AS new_status, cur.status AS old_status, cur.confirmations AS old_confirmations
      )
      UPDATE payments SET deposits_dirty = true
      WHERE id IN (SELECT payment_id FROM upd WHERE new_status <> old_status OR old_confirmations = 0)`.execute(this.engine.deps.db);
    await this.settleMarked(mode);
  }

  /** Runs the state machine on every payment marked by `headAdvanced` and clears the mark in the same transaction. */
  async settleMarked(mode?: Mode): Promise<number> {
    let q = this.engine.deps.db.selectFrom('payments').select(['id', 'mode']).where('deposits_dirty', '=', true);
    if (mode) q = q.where('mode', '=', mode);
    const marked = await q.orderBy('id').execute();
    for (const { id, mode: m } of marked) {
      await this.engine.locked({ mode: m, merchantId: null }, id, async (tx, l) => {
        if (!l.row.deposits_dirty) return;
        await this.engine.apply(tx, await this.engine.reload(tx, l), { kind: 'deposits_changed' });
        await tx.updateTable('payments').set({ deposits_dirty: false }).where('id', '=', id).execute();
      });
    }
    return marked.length;
  }

  async blocksRemoved(mode: Mode, chain: string, fromBlock: bigint): Promise<void> {
    const removed = () => sql<boolean>`status IN ('pending', 'confirmed') AND block_number >= ${fromBlock.toString()}::bigint`;
    for (const paymentId of await this.openPayments(mode, chain, removed())) {
      await this.engine.locked({ mode, merchantId: null }, paymentId, async (tx, l) => {
        await tx.updateTable('deposits').set({ status: 'orphaned', confirmations: 0 }).where('payment_id', '=', paymentId).where('chain', '=', chain).where(removed()).execute();
        await this.engine.apply(tx, await this.engine.reload(tx, l), { kind: 'deposits_changed' });
      });
    }
  }

  private async openPayments(mode: Mode, chain: string, condition: RawBuilder<boolean>): Promise<string[]> {
    const rows = await this.engine.deps.db
      .selectFrom('deposits')
      .select('payment_id')
      .distinct()
      .where('mode', '=', mode)
      .where('chain', '=', chain)
      .where(condition)
      .execute();
    return rows.map((r) => r.payment_id);
  }
}

/**
 * Stores one transfer on `attempt` inside the caller's transaction (the payment is locked). Idempotent on
 * (mode, chain, tx hash, index): a transfer seen again after its block was orphaned is revived as pending in its
 * new block. Its worth in cents and whether it reaches its coin's minimum are fixed when first seen.
 */
export async function insertDeposit(engine: PaymentEngine, tx: Tx, attempt: AttemptRow, d: NewDeposit): Promise<void> {
  const { chains, prices, clock } = engine.deps;
  const token = chains.token(attempt.mode, d.token);
  const quote = token ? prices.quote(token) : null;
  const now = clock.now();
  await tx
    .insertInto('deposits')
    .values({
      id: newId('dep'),
      attempt_id: attempt.id,
      payment_id: attempt.payment_id,
      mode: attempt.mode,
      chain: attempt.chain,
      token: d.token,
      tx_hash: d.txHash,
      log_index: d.index,
      amount: d.amount.toString(),
      from_address: d.from,
      block_number: d.blockNumber,
      block_hash: d.blockHash,
      status: d.status ?? 'pending',
      confirmations: d.confirmations ?? 0,
      confirmations_required: attempt.confirmations_required,
      value_cents: token && quote ? unitsToCents(d.amount, quote.rate, token.decimals) : null,
      at_least_min: !!token && d.amount >= token.minAmount,
      seen_at: d.seenAt ?? now,
      created_at: now,
    })
    .onConflict((oc) =>
      oc.columns(['mode', 'chain', 'tx_hash', 'log_index']).doUpdateSet({
        block_number: (eb) => eb.ref('excluded.block_number'),
        block_hash: (eb) => eb.ref('excluded.block_hash'),
        status: sql`CASE WHEN deposits.status = 'orphaned' THEN 'pending' ELSE deposits.status END`,
      }),
    )
    .execute();
}
