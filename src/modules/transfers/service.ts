/**
 * Outgoing transfers (refunds today, payouts next): the one place money leaves Kasse's hot wallets.
 *
 * A module that sends money (the owner, named by a purpose: `refund`, `payout`) calls `request` inside the
 * transaction that creates its own object; the transfer is recorded there and handed, in the same transaction, to
 * the sender of the chain family serving the network (no network I/O). Senders report the outcome through the one
 * sink, `transferSettled`, which settles the transfer once and calls the owner back in the same transaction, so the
 * owner's object and the transfer cannot disagree after a crash. Test-mode networks without a sender use the
 * simulated sender: the owner's due work settles them as sent with a `0xsim…` hash. Live networks without a sender
 * keep the transfer pending (an operator must run one). Rules: docs/payments.md ("Refunds").
 */
import type { TransferProgress, TransferRequest, TransferResult, TransferSink } from '../../chains/ports.ts';
import type { ChainRegistry } from '../../chains/registry.ts';
import { simulatedTxHash } from '../../chains/types.ts';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import { sql } from 'kysely';
import { withTx, type Db, type Tx } from '../../db/index.ts';
import { groupBy } from '../../core/group.ts';

/** A transfer as it settled, handed to its owner. */
export interface SettledTransfer {
  id: string;
  mode: Mode;
  purpose: string;
  status: 'sent' | 'failed';
  txHash: string | null;
  error: string | null;
  /** The block the transaction landed in, when the sender reports it. */
  blockNumber?: bigint | null;
}

/**
 * A module that asks for transfers; called back once per transfer, inside the transaction that settles it, with the
 * transfers of its purpose that settled together (one chain transaction's: one, or a batch's members).
 */
export interface TransferOwner {
  transfersSettled(tx: Tx, transfers: SettledTransfer[]): Promise<void>;
  /** Optional: pending transfers were signed or broadcast (informational; may repeat; never after they settled). */
  transfersProgressed?(tx: Tx, mode: Mode, progress: TransferProgress[]): Promise<void>;
}

export interface TransferDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  chains: ChainRegistry;
}

/** How a requested transfer will leave. */
export type Delivery = 'sender' | 'simulated' | 'waiting_for_sender';

export class TransferService implements TransferSink {
  private readonly owners = new Map<string, TransferOwner>();

  constructor(private readonly deps: TransferDeps) {}

  /** Registers the module that asks for transfers of `purpose` (called back when they settle). */
  own(purpose: string, owner: TransferOwner): void {
    if (this.owners.has(purpose)) throw new Error(`transfers of purpose "${purpose}" already have an owner`);
    this.owners.set(purpose, owner);
  }

  /** Whether transfers on `chain` in `mode` leave through a chain sender (else simulated in test mode). */
  hasSender(mode: Mode, chain: string): boolean {
    return this.deps.chains.sender(mode, chain) !== null;
  }

  /**
   * Records a transfer in the caller's transaction and hands it to the network's sender there too; says how it will
   * leave. A transfer id is requested once (the table's key refuses a second, rolling the caller's work back).
   */
  async request(tx: Tx, t: TransferRequest, options: { simulated?: boolean } = {}): Promise<Delivery> {
    if (!this.owners.has(t.purpose)) throw new Error(`no owner for transfers of purpose "${t.purpose}"`);
    if (t.amount <= 0n) throw new Error('a transfer moves a positive amount');
    if (options.simulated && t.mode !== 'test') throw new Error(`transfer ${t.transferId}: only test mode simulates`);
    // A transfer on something only simulated (a hold the simulator authorized) is simulated whatever runs the network.
    const sender = options.simulated ? null : this.deps.chains.sender(t.mode, t.token.chain);
    const simulated = !sender && t.mode === 'test';
    await tx
      .insertInto('transfers')
      .values({
        id: t.transferId,
        mode: t.mode,
        purpose: t.purpose,
        chain: t.token.chain,
        token: t.token.id,
        destination: t.destination,
        amount: t.amount.toString(),
        status: 'pending',
        simulated,
        created_at: this.deps.clock.now(),
      })
      .execute();
    if (sender) {
      await sender.enqueue(tx, t);
      return 'sender';
    }
    if (simulated) return 'simulated';
    this.deps.log.warn(
      { transferId: t.transferId, purpose: t.purpose, chain: t.token.chain },
      'transfer recorded but no sender runs for this network; it stays pending',
    );
    return 'waiting_for_sender';
  }

  /** A sender reports how a transfer ended; the first report settles it and calls its owner back, later ones do nothing. */
  transferSettled(mode: Mode, result: TransferResult): Promise<void> {
    return this.transfersSettled(mode, [result]);
  }

  /**
   * A sender reports transfers that settled together: in one database transaction, the pending ones among them settle
   * (one statement) and each owner is called back once with its own; transfers settled before are left as they are.
   */
  async transfersSettled(mode: Mode, results: readonly TransferResult[]): Promise<void> {
    if (results.length === 0) return;
    const ids = results.map((r) => r.transferId);
    await withTx(this.deps.db, async (tx) => {
      const rows = await tx
        .selectFrom('transfers')
        .select(['id', 'purpose', 'status'])
        .where('id', 'in', ids)
        .where('mode', '=', mode)
        .orderBy('id')
        .forUpdate()
        .execute();
      const known = new Map(rows.map((r) => [r.id, r]));
      const missing = results.filter((r) => !known.has(r.transferId)).map((r) => r.transferId);
      if (missing.length > 0)
        this.deps.log.error({ transferIds: missing, mode }, 'a sender reported a transfer Kasse has no record of');
      const settling = results.filter((r) => known.get(r.transferId)?.status === 'pending');
      if (settling.length === 0) return;
      await sql`
        UPDATE transfers AS t SET status = v.status, tx_hash = v.tx_hash, error = v.error, settled_at = ${this.deps.clock.now()}
        FROM (SELECT unnest(${settling.map((r) => r.transferId)}::text[]) AS id,
                     unnest(${settling.map((r) => r.status)}::text[]) AS status,
                     unnest(${settling.map((r) => r.txHash)}::text[]) AS tx_hash,
                     unnest(${settling.map((r) => r.error)}::text[]) AS error) AS v
        WHERE t.id = v.id AND t.mode = ${mode}`.execute(tx);
      const settled: SettledTransfer[] = settling.map((r) => ({
        id: r.transferId,
        mode,
        purpose: known.get(r.transferId)!.purpose,
        status: r.status,
        txHash: r.txHash,
        error: r.error,
        blockNumber: r.blockNumber ?? null,
      }));
      for (const [purpose, own] of groupBy(settled, (t) => t.purpose)) {
        const owner = this.owners.get(purpose);
        if (!owner) throw new Error(`no owner for transfers of purpose "${purpose}"`);
        await owner.transfersSettled(tx, own);
      }
    });
  }

  /** A sender says pending transfers were signed or broadcast; their owners are told if they listen. */
  async transfersProgressed(mode: Mode, progress: readonly TransferProgress[]): Promise<void> {
    if (progress.length === 0) return;
    await withTx(this.deps.db, async (tx) => {
      const rows = await tx
        .selectFrom('transfers')
        .select(['id', 'purpose'])
        .where(
          'id',
          'in',
          progress.map((p) => p.transferId),
        )
        .where('mode', '=', mode)
        .where('status', '=', 'pending')
        .orderBy('id')
        .forUpdate()
        .execute();
      const purposeOf = new Map(rows.map((r) => [r.id, r.purpose]));
      const pending = progress.filter((p) => purposeOf.has(p.transferId));
      for (const [purpose, list] of groupBy(pending, (p) => purposeOf.get(p.transferId)!))
        await this.owners.get(purpose)?.transfersProgressed?.(tx, mode, list);
    });
  }

  /**
   * Test mode without a chain sender: settles pending simulated transfers of `purpose` as sent, together. When their
   * owner cannot apply one, each settles on its own, so that one stays pending (logged) and never holds back the
   * others. Returns how many settled.
   */
  async settleSimulated(purpose: string): Promise<number> {
    const rows = await this.deps.db
      .selectFrom('transfers')
      .select('id')
      .where('status', '=', 'pending')
      .where('simulated', '=', true)
      .where('mode', '=', 'test')
      .where('purpose', '=', purpose)
      .orderBy('created_at')
      .limit(500)
      .execute();
    const sent = (id: string) => ({ transferId: id, status: 'sent' as const, txHash: simulatedTxHash(), error: null });
    try {
      await this.transfersSettled(
        'test',
        rows.map((r) => sent(r.id)),
      );
      return rows.length;
    } catch {
      // One by one below: the one that cannot be applied is logged there.
    }
    let n = 0;
    for (const r of rows) {
      try {
        await this.transfersSettled('test', [sent(r.id)]);
        n++;
      } catch (err) {
        this.deps.log.error({ err, transferId: r.id, purpose }, 'simulated transfer could not be settled');
      }
    }
    return n;
  }
}
