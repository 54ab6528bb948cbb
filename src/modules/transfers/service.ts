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
import { withTx, type Db, type Tx } from '../../db/index.ts';

/** A transfer as it settled, handed to its owner. */
export interface SettledTransfer {
  id: string;
  mode: Mode;
  purpose: string;
  status: 'sent' | 'failed';
  txHash: string | null;
  error: string | null;
}

/** A module that asks for transfers; called back once per transfer, inside the transaction that settles it. */
export interface TransferOwner {
  transferSettled(tx: Tx, transfer: SettledTransfer): Promise<void>;
  /** Optional: a pending transfer was signed or broadcast (informational; may repeat; never after it settled). */
  transferProgressed?(tx: Tx, transfer: TransferProgress & { mode: Mode }): Promise<void>;
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
  async request(tx: Tx, t: TransferRequest): Promise<Delivery> {
    if (!this.owners.has(t.purpose)) throw new Error(`no owner for transfers of purpose "${t.purpose}"`);
    if (t.amount <= 0n) throw new Error('a transfer moves a positive amount');
    const sender = this.deps.chains.sender(t.mode, t.token.chain);
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
  async transferSettled(mode: Mode, result: TransferResult): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      const row = await tx
        .selectFrom('transfers')
        .selectAll()
        .where('id', '=', result.transferId)
        .where('mode', '=', mode)
        .forUpdate()
        .executeTakeFirst();
      if (!row) {
        this.deps.log.error(
          { transferId: result.transferId, mode },
          'a sender reported a transfer Kasse has no record of',
        );
        return;
      }
      if (row.status !== 'pending') return;
      await tx
        .updateTable('transfers')
        .set({ status: result.status, tx_hash: result.txHash, error: result.error, settled_at: this.deps.clock.now() })
        .where('id', '=', row.id)
        .execute();
      const owner = this.owners.get(row.purpose);
      if (!owner) throw new Error(`no owner for transfers of purpose "${row.purpose}"`);
      await owner.transferSettled(tx, {
        id: row.id,
        mode,
        purpose: row.purpose,
        status: result.status,
        txHash: result.txHash,
        error: result.error,
      });
    });
  }

  /** A sender says a pending transfer was signed or broadcast; the owner is told if it listens. */
  async transferProgressed(mode: Mode, progress: TransferProgress): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      const row = await tx
        .selectFrom('transfers')
        .select(['purpose', 'status'])
        .where('id', '=', progress.transferId)
        .where('mode', '=', mode)
        .forUpdate()
        .executeTakeFirst();
      if (!row || row.status !== 'pending') return;
      await this.owners.get(row.purpose)?.transferProgressed?.(tx, { ...progress, mode });
    });
  }

  /** Test mode without a chain sender: settles pending simulated transfers of `purpose` as sent. Returns how many. */
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
    for (const r of rows)
      await this.transferSettled('test', { transferId: r.id, status: 'sent', txHash: simulatedTxHash(), error: null });
    return rows.length;
  }
}
