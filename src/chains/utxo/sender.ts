/**
 * The UTXO hot-wallet sender of one network and mode: refunds and payouts (from the transfers module) and sweeps of
 * deposit addresses (`kasse utxo sweep`), as transactions built and signed here with @scure/btc-signer.
 *
 * A transfer goes pending → signed → broadcast → sent (or failed):
 *   - signing picks confirmed coins (the hot wallet's for a refund or payout, deposit addresses' for a sweep), pays
 *     the node's fee estimate (`estimatesmartfee`, else the node's relay fee) capped at `max_fee_rate`, sends change
 *     back to the hot wallet, and signals RBF. The signed transaction is stored, and its coins marked spent by the
 *     transfer, in ONE database transaction, before anything is broadcast; a coin already marked cannot be taken,
 *     so no two transfers ever spend one coin.
 *   - broadcasting sends the newest stored version as it is, again after a crash or when the node lost it.
 *   - a version left unconfirmed for `bump_after_blocks` is replaced by a new version spending the SAME coins with
 *     a higher fee (taken from the change, or from the swept amount), stored before it is broadcast. All versions
 *     conflict, so at most one is ever mined: one transfer, one spend.
 *   - sent once a version has the network's first-tier confirmations.
 * The transfers queue (../queue.ts) leases the rows, drives these steps, retries failed ones and reports settled
 * refunds and payouts to the TransferSink (sweeps have no owner); this file supplies the steps and the versions,
 * transaction.ts the signed transactions.
 */
import { sql, type Selectable } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import { withTx, type Db, type Tx } from '../../db/index.ts';
import type { Metrics } from '../../core/metrics.ts';
import { methodUnavailable } from '../jsonrpc.ts';
import type { OutgoingSender, TransferRequest, TransferSink } from '../ports.ts';
import { QueuedSender, TransferQueue, type QueueOptions, type StepOutcome, type StepResult } from '../queue.ts';
import type { NetworkConfig } from '../types.ts';
import type { UtxoAdapter } from './adapter.ts';
import { outputScript } from './address.ts';
import type { UtxoSettings } from './config.ts';
import { RPC_CODES, satoshis, UtxoRpcError } from './rpc.ts';
import {
  buildTransaction,
  DUST,
  INPUT_VB,
  OUTPUT_VB,
  OVERHEAD_VB,
  paidTo,
  type Built,
  type Coin,
} from './transaction.ts';
import type { UtxoTransfersTable, UtxoTransferTxsTable } from './schema.ts';

const OPEN = ['pending', 'signed', 'broadcast'] as const;
const QUEUE_DEFAULTS: QueueOptions = { batch: 50, leaseMs: 60_000, retryBaseMs: 10_000, retryMaxMs: 600_000 };
/** How often a transfer waiting for the hot wallet's own change looks again when no block made it due sooner. */
const CHANGE_RECHECK_MS = 60_000;
/** Node answers meaning a transaction's inputs are spent by another one (mined, or in the mempool). */
const CONFLICT = /missingorspent|missing inputs|mempool-conflict|insufficient fee|rejecting replacement/i;

export type { StepResult };

export interface UtxoSenderDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  metrics?: Metrics;
  sink: TransferSink;
  /** Deposit address keys by address, for sweeps: the addresses holding confirmed deposits with their indexes. */
  fundedAddresses(): Promise<Array<{ address: string; index: bigint }>>;
}

type Row = Selectable<UtxoTransfersTable>;

export class UtxoSender extends QueuedSender<Row, Selectable<UtxoTransferTxsTable>> implements OutgoingSender {
  readonly network: NetworkConfig;
  readonly mode: Mode;
  private readonly settings: UtxoSettings;
  protected readonly queue: TransferQueue<Row>;

  constructor(
    private readonly adapter: UtxoAdapter,
    private readonly deps: UtxoSenderDeps,
    options: Partial<QueueOptions> = {},
  ) {
    super();
    this.network = adapter.network;
    this.mode = adapter.mode;
    this.settings = adapter.settings;
    this.queue = new TransferQueue<Row>(
      'utxo',
      adapter,
      deps,
      { ...QUEUE_DEFAULTS, ...options },
      {
        sign: (t) => this.signPending(t),
        broadcast: (t) => this.broadcast(t),
        follow: (t) => this.follow(t),
        unsent: (t) => this.unsent(t),
        fail: (t, reason) => this.settle(t.id, 'failed', null, reason),
        hash: (t) => t.txid,
      },
    );
  }

  /** Records a refund or payout in the caller's transaction (no network I/O). Idempotent on the transfer id. */
  async enqueue(tx: Tx, request: TransferRequest): Promise<void> {
    const { purpose, destination, amount } = request;
    await this.enqueued(tx, request.transferId, { purpose, destination, amount });
  }

  /**
   * A sweep: every unspent confirmed coin of deposit addresses (up to `maxInputs`) to the treasury (or the hot
   * wallet), signed and stored now (the sender broadcasts it). Returns the transfer's id, or null with nothing to sweep.
   */
  async sweep(id: string, maxInputs = 500): Promise<string | null> {
    const funded = await this.deps.fundedAddresses();
    if (funded.length === 0) return null;
    const indexByAddress = new Map(funded.map((f) => [f.address.toLowerCase(), f.index]));
    const coins = (await this.unspent([...indexByAddress.keys()], maxInputs)).map((c) => ({
      ...c,
      index: indexByAddress.get(c.address)!,
    }));
    if (coins.length === 0) return null;
    const destination = this.settings.treasury ?? this.adapter.hotWalletAddress();
    const now = this.deps.clock.now();
    await this.deps.db
      .insertInto('utxo_transfers')
      .values({
        id,
        mode: this.mode,
        chain: this.network.id,
        purpose: 'sweep',
        status: 'pending',
        destination,
        amount: 0n,
        next_attempt_at: now,
        created_at: now,
      })
      .execute();
    if (await this.signFirst(id, coins, destination, null)) return id;
    // Another sweep took some of the coins first: this one never existed.
    await this.deps.db.deleteFrom('utxo_transfers').where('id', '=', id).where('status', '=', 'pending').execute();
    return null;
  }

  // ---- signing ----

  private async signPending(t: Row): Promise<StepOutcome> {
    if (t.purpose === 'sweep') {
      // A sweep is signed when it is made; one left pending (a crash in between) holds no coins and is dropped.
      await this.settle(t.id, 'failed', null, 'the sweep was not signed');
      return 'done';
    }
    if (BigInt(t.amount) < DUST) {
      await this.settle(t.id, 'failed', null, `${t.amount} units is below the network's dust limit of ${DUST}`);
      return 'done';
    }
    // Hot-wallet coins are taken largest first until the amount and the fee are covered.
    const coins = (await this.unspent([this.adapter.hotWalletAddress()], 1000)).map((c) => ({ ...c, index: null }));
    const feeRate = await this.feeRate();
    const picked: Coin[] = [];
    let total = 0n;
    for (const c of coins) {
      picked.push(c);
      total += c.amount;
      if (total >= BigInt(t.amount) + feeRate * (OVERHEAD_VB + INPUT_VB * BigInt(picked.length) + OUTPUT_VB * 2n))
        break;
    }
    const need = BigInt(t.amount) + feeRate * (OVERHEAD_VB + INPUT_VB * BigInt(picked.length) + OUTPUT_VB);
    if (total < need) return this.short(t, total, picked.length, feeRate);
    return (await this.signFirst(t.id, picked, t.destination, BigInt(t.amount), feeRate)) ? 'progress' : 'wait';
  }

  /**
   * The hot wallet's coins in blocks (`confirmed`, `count` of them) do not cover the transfer. When they would with
   * the change of Kasse's own transactions not yet in a block, the transfer stays `pending` and waits for it (its
   * reason in `error`, at most `change_wait_ms` from when it started waiting; the watcher's block with one of them
   * makes it due at once); otherwise, or once the wait ran out, it fails with the reason.
   */
  private async short(t: Row, confirmed: bigint, count: number, feeRate: bigint): Promise<StepOutcome> {
    const change = await this.ownChange(t.id);
    const back = change.reduce((sum, c) => sum + c.amount, 0n);
    const inputs = BigInt(count + change.length);
    const need = BigInt(t.amount) + feeRate * (OVERHEAD_VB + INPUT_VB * inputs + OUTPUT_VB);
    const holds =
      back === 0n
        ? `the hot wallet holds ${confirmed} of the ${need} units this transfer and its fee need`
        : `the hot wallet holds ${confirmed} units in blocks and ${back} in the change of its own transactions not ` +
          `yet in a block (${change.map((c) => c.txid).join(', ')}), of the ${need} this transfer and its fee need`;
    const now = this.deps.clock.now();
    const since = t.waiting_since ?? now;
    const until = new Date(since.getTime() + this.settings.changeWaitMs);
    if (confirmed + back < need || now >= until) {
      const reason =
        confirmed + back < need
          ? holds
          : `the change of the hot wallet's own transactions was not in a block within ${waited(this.settings.changeWaitMs)}: ${holds}`;
      await this.settle(t.id, 'failed', null, reason);
      return 'done';
    }
    const recheck = Math.min(now.getTime() + CHANGE_RECHECK_MS, until.getTime());
    await this.deps.db
      .updateTable('utxo_transfers')
      .set({
        waiting_since: since,
        error: `waiting until ${until.toISOString()} for its own change: ${holds}`,
        next_attempt_at: new Date(recheck),
      })
      .where('id', '=', t.id)
      .where('status', '=', 'pending')
      .execute();
    if (t.waiting_since === null)
      this.deps.log.info(
        { transferId: t.id, chain: this.network.id, mode: this.mode, until, change: change.map((c) => c.txid) },
        "utxo transfer waits for the hot wallet's own change",
      );
    return 'wait';
  }

  /**
   * What the hot wallet gets back from Kasse's own transactions not yet in a block the watcher read: the outputs
   * paying it (change, or a sweep into it) of each open transfer's newest version, but `except`'s.
   */
  private async ownChange(except: string): Promise<Array<{ txid: string; amount: bigint }>> {
    const rows = await this.deps.db
      .selectFrom('utxo_transfers as t')
      .innerJoin('utxo_transfer_txs as v', (j) => j.onRef('v.transfer_id', '=', 't.id').onRef('v.txid', '=', 't.txid'))
      .select(['v.txid', 'v.raw'])
      .where('t.mode', '=', this.mode)
      .where('t.chain', '=', this.network.id)
      .where('t.status', 'in', ['signed', 'broadcast'])
      .where('t.block_height', 'is', null)
      .where('t.id', '<>', except)
      .execute();
    const hot = outputScript(this.adapter.hotWalletAddress(), this.settings.params);
    return rows.map((r) => ({ txid: r.txid, amount: paidTo(r.raw, hot) })).filter((c) => c.amount > 0n);
  }

  /**
   * Signs version 0 of a transfer over `coins` and stores it with the coins marked spent, in one transaction.
   * `amount` null: everything less the fee goes to `destination` (a sweep). False when a coin was taken meanwhile.
   */
  private async signFirst(
    id: string,
    coins: Coin[],
    destination: string,
    amount: bigint | null,
    feeRate?: bigint,
  ): Promise<boolean> {
    const rate = feeRate ?? (await this.feeRate());
    const built = this.build(coins, destination, amount, rate);
    const now = this.deps.clock.now();
    return withTx(this.deps.db, async (tx) => {
      const taken = await tx
        .updateTable('utxo_coins')
        .set({ spent_by: id })
        .where('mode', '=', this.mode)
        .where('chain', '=', this.network.id)
        .where('spent_by', 'is', null)
        .where(sql<boolean>`(txid, vout) IN (${sql.join(coins.map((c) => sql`(${c.txid}, ${c.vout})`))})`)
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) !== coins.length) {
        // Another transfer took one of them first: nothing is stored, the next pass picks again.
        await tx.updateTable('utxo_coins').set({ spent_by: null }).where('spent_by', '=', id).execute();
        return false;
      }
      await storeVersion(tx, id, 0, built, rate, now);
      await tx
        .updateTable('utxo_transfers')
        .set({
          status: 'signed',
          txid: built.txid,
          fee: built.fee,
          amount: built.sent,
          signed_at: now,
          error: null,
          tries: 0,
          next_attempt_at: now,
        })
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .execute();
      return true;
    });
  }

  /** Builds and signs a transaction over `coins` paying `amount` (or everything less the fee) at `feeRate` sat/vB. */
  private build(coins: Coin[], destination: string, amount: bigint | null, feeRate: bigint): Built {
    return buildTransaction(this.adapter, coins, destination, amount, feeRate);
  }

  /**
   * The node's fee estimate in sat/vB (its relay fee when it has none, or does not serve `estimatesmartfee`), at most
   * `max_fee_rate`, at least 1.
   */
  async feeRate(): Promise<bigint> {
    const rpc = this.adapter.rpc();
    const est = await rpc
      .call<{ feerate?: string }>('estimatesmartfee', [this.settings.feeTargetBlocks])
      .catch((err: unknown): { feerate?: string } => {
        if (methodUnavailable(err)) return {};
        throw err;
      });
    const perKvB =
      est.feerate !== undefined
        ? satoshis(est.feerate)
        : satoshis((await rpc.call<{ relayfee: string }>('getnetworkinfo')).relayfee);
    const rate = (perKvB + 999n) / 1000n;
    return rate < 1n ? 1n : rate > this.settings.maxFeeRate ? this.settings.maxFeeRate : rate;
  }

  // ---- broadcasting and following ----

  private async broadcast(t: Row): Promise<StepResult> {
    const newest = await this.newestVersion(t.id);
    const tip = await this.adapter.rpc().call<number>('getblockcount');
    try {
      await this.send(newest.raw);
    } catch (err) {
      // Its coins are spent already: an earlier version was mined (or is in the mempool). Following finds it.
      if (!(err instanceof UtxoRpcError && newest.version > 0 && CONFLICT.test(err.message))) throw err;
      this.deps.log.info(
        { transferId: t.id, err: err.message },
        'utxo replacement refused: an earlier version holds the coins',
      );
    }
    const now = this.deps.clock.now();
    await this.deps.db
      .updateTable('utxo_transfers')
      .set({
        status: 'broadcast',
        broadcast_height: sql`coalesce(broadcast_height, ${tip})`,
        bumped_height: tip,
        broadcast_at: now,
        next_attempt_at: now,
      })
      .where('id', '=', t.id)
      .where('status', '=', 'signed')
      .execute();
    return 'progress';
  }

  /** Sends a raw transaction; one the node already has (`known`), or has in a block (`in_chain`), counts as sent. */
  private async send(raw: string): Promise<'sent' | 'known' | 'in_chain'> {
    try {
      await this.adapter.rpc().call('sendrawtransaction', [raw]);
      return 'sent';
    } catch (err) {
      if (!(err instanceof UtxoRpcError)) throw err;
      if (err.code === RPC_CODES.VERIFY_ALREADY_IN_CHAIN || /already in (the )?block ?chain/i.test(err.message))
        return 'in_chain';
      if (/already in (the )?mempool|txn-already-known/i.test(err.message)) return 'known';
      throw err;
    }
  }

  /**
   * A broadcast transfer: settled once the block the watcher found one of its versions in (`blockConnected`) has the
   * first tier's confirmations by the watcher's height; rebroadcast when lost; bumped when stuck. O(1) node calls.
   */
  private async follow(t: Row): Promise<StepResult> {
    const tip = await this.height();
    if (t.block_height !== null) {
      if (tip - Number(t.block_height) + 1 < this.network.confirmationTiers[0]!.confirmations) return 'wait';
      await this.settle(t.id, 'sent', t.txid, null);
      return 'done';
    }
    const versions = await this.versions(t.id);
    const newest = versions[versions.length - 1]!;
    const inMempool = await this.adapter
      .rpc()
      .call('getmempoolentry', [newest.txid])
      .then(
        () => true,
        (err) => {
          if (err instanceof UtxoRpcError && err.code === RPC_CODES.INVALID_ADDRESS_OR_KEY) return false;
          throw err;
        },
      );
    if (!inMempool) {
      // Evicted, never arrived, or a reorg took it out of a block: the newest version again, as it is.
      this.deps.log.warn(
        { transferId: t.id, txid: newest.txid, chain: this.network.id },
        'utxo transfer not in the mempool; broadcasting it again',
      );
      if ((await this.send(newest.raw)) === 'in_chain') await this.lookBack(t, versions, tip);
      return 'wait';
    }
    const from = Number(t.broadcast_height ?? tip);
    if (tip - Number(t.bumped_height ?? from) >= this.settings.bumpAfterBlocks) return this.bump(t, newest, tip);
    return 'wait';
  }

  /**
   * The watcher's height (the blocks it has read and told the sender about); the node's tip before it ever ran.
   */
  private async height(): Promise<number> {
    const cursor = await this.deps.db
      .selectFrom('utxo_cursors')
      .select('height')
      .where('mode', '=', this.mode)
      .where('chain', '=', this.network.id)
      .executeTakeFirst();
    return cursor ? Number(cursor.height) : this.adapter.rpc().call<number>('getblockcount');
  }

  /**
   * The watcher read a block (inside the transaction that moves its cursor onto it): open transfers with a version
   * in it are marked mined there. One statement per block, whatever the number of open transfers.
   */
  async blockConnected(tx: Tx, height: number, txids: string[]): Promise<void> {
    if (txids.length === 0) return;
    const now = this.deps.clock.now();
    const mined = await sql`
      UPDATE utxo_transfers AS t SET txid = v.txid, block_height = ${height}, next_attempt_at = ${now}
      FROM utxo_transfer_txs AS v
      WHERE v.txid = ANY(${txids}::text[]) AND t.id = v.transfer_id
        AND t.mode = ${this.mode} AND t.chain = ${this.network.id} AND t.status IN ('signed', 'broadcast')`.execute(tx);
    // Their change is in a block now: transfers waiting for it are due.
    if ((mined.numAffectedRows ?? 0n) > 0n)
      await tx
        .updateTable('utxo_transfers')
        .set({ next_attempt_at: now })
        .where('mode', '=', this.mode)
        .where('chain', '=', this.network.id)
        .where('status', '=', 'pending')
        .where('waiting_since', 'is not', null)
        .execute();
  }

  /** A reorg removed the blocks from `height` up (in the watcher's transaction): what was mined there is not. */
  async blocksDisconnected(tx: Tx, height: number): Promise<void> {
    await tx
      .updateTable('utxo_transfers')
      .set({ block_height: null })
      .where('mode', '=', this.mode)
      .where('chain', '=', this.network.id)
      .where('status', 'in', ['signed', 'broadcast'])
      .where('block_height', '>=', BigInt(height))
      .execute();
  }

  /**
   * The node has a version in its chain that no block the watcher told of holds (it was mined before the watcher
   * reported blocks to the sender): the blocks from its broadcast up to the watcher's height are read once for it.
   */
  private async lookBack(t: Row, versions: Array<{ txid: string }>, tip: number): Promise<void> {
    const rpc = this.adapter.rpc();
    const txids = new Set(versions.map((v) => v.txid));
    for (let h = Number(t.broadcast_height ?? tip); h <= tip; h++) {
      const hash = await rpc.call<string>('getblockhash', [h]);
      const mined = (await rpc.call<{ tx: string[] }>('getblock', [hash, 1])).tx.filter((id) => txids.has(id));
      if (mined.length > 0) return withTx(this.deps.db, (tx) => this.blockConnected(tx, h, mined));
    }
  }

  /** Replaces a stuck version with one spending the same coins at a higher fee rate, stored before it is sent. */
  private async bump(
    t: Row,
    newest: { version: number; raw: string; fee_rate: bigint | string | number; fee: bigint | string | number },
    tip: number,
  ): Promise<StepResult> {
    const old = BigInt(newest.fee_rate);
    if (old >= this.settings.maxFeeRate) return 'wait';
    const estimate = await this.feeRate();
    // BIP-125: the replacement pays more in total and at least the relay fee for its own size on top.
    let rate = old + old / 4n + 1n;
    if (estimate > rate) rate = estimate;
    if (rate > this.settings.maxFeeRate) rate = this.settings.maxFeeRate;
    const coins = await this.deps.db.selectFrom('utxo_coins').selectAll().where('spent_by', '=', t.id).execute();
    const funded =
      t.purpose === 'sweep'
        ? new Map((await this.deps.fundedAddresses()).map((f) => [f.address.toLowerCase(), f.index]))
        : null;
    const inputs: Coin[] = coins.map((c) => ({
      txid: c.txid,
      vout: c.vout,
      address: c.address,
      amount: BigInt(c.amount),
      index: funded ? (funded.get(c.address) ?? null) : null,
    }));
    const built = this.build(inputs, t.destination, t.purpose === 'sweep' ? null : BigInt(t.amount), rate);
    const now = this.deps.clock.now();
    const replaced = await withTx(this.deps.db, async (tx) => {
      // Not once the watcher found a version in a block (it may have meanwhile).
      const r = await tx
        .updateTable('utxo_transfers')
        .set({ status: 'signed', txid: built.txid, fee: built.fee, amount: built.sent, next_attempt_at: now })
        .where('id', '=', t.id)
        .where('status', '=', 'broadcast')
        .where('block_height', 'is', null)
        .executeTakeFirst();
      if (r.numUpdatedRows === 0n) return false;
      await storeVersion(tx, t.id, newest.version + 1, built, rate, now);
      return true;
    });
    if (!replaced) return 'wait';
    this.deps.log.info(
      { transferId: t.id, from: old.toString(), to: rate.toString(), tip },
      'utxo transfer stuck; replaced with a higher fee',
    );
    return 'progress';
  }

  // ---- settling ----

  /**
   * Nothing of the transfer can still be mined (not signed yet, or its only version never handed to a node), so a
   * step failing for good fails it. A sweep never fails so: its coins are the merchants' deposits.
   */
  private async unsent(t: Row): Promise<boolean> {
    return (
      t.purpose !== 'sweep' &&
      (t.status === 'pending' ||
        (t.status === 'signed' && t.broadcast_height === null && (await this.versions(t.id)).length === 1))
    );
  }

  private async settle(
    id: string,
    status: 'sent' | 'failed',
    txid: string | null,
    error: string | null,
  ): Promise<void> {
    const now = this.deps.clock.now();
    await withTx(this.deps.db, async (tx) => {
      await tx
        .updateTable('utxo_transfers')
        .set({ status, txid, error, settled_at: now })
        .where('id', '=', id)
        .where('status', 'in', [...OPEN])
        .execute();
      // A failed transfer spent nothing: its coins are free again (only a transfer that never signed fails).
      if (status === 'failed')
        await tx.updateTable('utxo_coins').set({ spent_by: null }).where('spent_by', '=', id).execute();
    });
  }

  /** Unspent coins in blocks paying `addresses`, largest first. */
  private async unspent(addresses: string[], limit: number): Promise<Array<Omit<Coin, 'index'>>> {
    if (addresses.length === 0) return [];
    const rows = await this.deps.db
      .selectFrom('utxo_coins')
      .select(['txid', 'vout', 'address', 'amount'])
      .where('mode', '=', this.mode)
      .where('chain', '=', this.network.id)
      .where('spent_by', 'is', null)
      .where(
        'address',
        'in',
        addresses.map((a) => a.toLowerCase()),
      )
      .orderBy('amount', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ txid: r.txid, vout: r.vout, address: r.address, amount: BigInt(r.amount) }));
  }
}

/** Stores a signed version of a transfer (before it is ever broadcast). */
async function storeVersion(
  tx: Tx,
  id: string,
  version: number,
  built: { txid: string; raw: string; fee: bigint },
  rate: bigint,
  now: Date,
): Promise<void> {
  await tx
    .insertInto('utxo_transfer_txs')
    .values({
      transfer_id: id,
      version,
      txid: built.txid,
      raw: built.raw,
      fee: built.fee,
      fee_rate: rate,
      created_at: now,
    })
    .execute();
}

/** A wait in words ("60 minutes", "90 seconds"). */
function waited(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000} minutes` : `${Math.round(ms / 1000)} seconds`;
}
