/**
 * The Solana hot-wallet sender of one network in one mode: refunds and payouts (`OutgoingSender`), the associated
 * token accounts of USDC coin choices, sweeps, and relayed USDC payments leave through here.
 *
 * A transfer is a row in `solana_transfers` with a plan (what to build) and moves `pending` → `signed` →
 * `broadcast` → `sent` | `failed`, each step a short database write between RPC calls (never a transaction held
 * across one):
 *   pending    the plan is built against a recent blockhash and balances are checked (an underfunded hot wallet
 *              waits); the signed transaction is STORED as a version (signature, raw bytes, blockhash,
 *              last valid block height) before anything is sent.
 *   signed     the newest version is sent byte for byte (also after a crash): preflight refusals keep it here and
 *              retry; "already processed" and "blockhash not found" move on to the check.
 *   broadcast  the signatures of every version are looked up (with history). One that landed settles the transfer
 *              at `finalized`: `sent`, or `failed` with the chain's error. None landed: while the newest version's
 *              blockhash can still land (finalized block height ≤ its last valid height) the same bytes are sent
 *              again; only after it expired is the plan rebuilt with a new blockhash (a new version). So two
 *              versions can never both land, and one request is never paid twice. A relayed payment cannot be
 *              rebuilt (the payer signed it): it fails when it expires.
 * The transfers queue (../queue.ts) leases the rows, drives these steps, applies the failure rule (a refusal no retry
 * cures fails a transfer nothing of which can land; the rest waits a backoff) and reports settled refunds and payouts
 * to the `TransferSink`; this file supplies the steps and the versions, plans.ts the instructions a plan becomes.
 */
import type { Selectable } from 'kysely';
import type { Address } from '@solana/kit';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import { withTx, type Db, type Tx } from '../../db/index.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { OutgoingSender, TransferRequest, TransferSink } from '../ports.ts';
import { QueuedSender, TransferQueue, type QueueOptions, type StepOutcome, type StepResult } from '../queue.ts';
import type { NetworkConfig } from '../types.ts';
import type { SolanaTransfersTable, SolanaTransferTxsTable } from './schema.ts';
import type { SolanaKeys } from './keys.ts';
import { SolanaRpcError, type SolanaRpc } from './rpc.ts';
import { planInstructions, type Plan, type PlanContext } from './plans.ts';
import {
  MAX_TRANSACTION_BYTES,
  signerOf,
  signInstructions,
  type Lifetime,
  type SignedTransaction,
} from './transactions.ts';

export type SolanaPurpose = 'refund' | 'payout' | 'account' | 'sweep' | 'gasless' | 'grant' | 'revoke' | 'charge';
export type SolanaTransferRow = Selectable<SolanaTransfersTable>;
export type { StepResult };

export interface SolanaSenderDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  metrics?: Metrics;
  keys: SolanaKeys;
  /** Where refunds and payouts (transfers of the transfers module) settle. */
  sink: TransferSink;
}

export type SolanaSenderOptions = Partial<QueueOptions>;

const QUEUE_DEFAULTS: QueueOptions = { batch: 50, leaseMs: 60_000, retryBaseMs: 2_000, retryMaxMs: 300_000 };

export class SolanaSender
  extends QueuedSender<SolanaTransferRow, Selectable<SolanaTransferTxsTable>>
  implements OutgoingSender
{
  readonly network: NetworkConfig;
  readonly mode: Mode;
  protected readonly queue: TransferQueue<SolanaTransferRow>;
  private readonly plans: PlanContext;

  constructor(
    private readonly chain: { network: NetworkConfig; mode: Mode; rpc(): SolanaRpc },
    private readonly deps: SolanaSenderDeps,
    options: SolanaSenderOptions = {},
  ) {
    super();
    this.network = chain.network;
    this.mode = chain.mode;
    this.plans = { network: chain.network, mode: chain.mode, keys: deps.keys, log: deps.log, rpc: () => chain.rpc() };
    this.queue = new TransferQueue<SolanaTransferRow>(
      'solana',
      chain,
      deps,
      { ...QUEUE_DEFAULTS, ...options },
      {
        sign: (row) => this.build(row, 'pending'),
        broadcast: (row) => this.send(row),
        follow: (row) => this.check(row),
        // Not sent yet, or rebuilt and refused by preflight (an earlier version cannot land once it was rebuilt); a
        // relayed payment the payer signed ends only when it expires.
        unsent: async (row) =>
          row.status === 'pending' || (row.status === 'signed' && (row.plan as Plan).kind !== 'relay'),
        fail: async (row, reason) =>
          void (await this.settle(row, row.status, { status: 'failed', signature: null, slot: null, error: reason })),
        describe: (row, _err, failure) => (row.status === 'signed' ? `send: ${failure.reason}` : failure.reason),
        hash: (row) => row.signature,
      },
    );
  }

  /** The hot wallet's address. */
  get address(): Address {
    return this.deps.keys.hotWallet().address;
  }

  private rpc(): SolanaRpc {
    return this.chain.rpc();
  }

  /** Records a refund or payout in the caller's transaction; idempotent on `transferId`. */
  async enqueue(tx: Tx, request: TransferRequest): Promise<void> {
    if (request.purpose !== 'refund' && request.purpose !== 'payout')
      throw new Error(`SolanaSender cannot send transfers of purpose "${request.purpose}"`);
    if (request.mode !== this.mode || request.token.chain !== this.network.id)
      throw new Error(
        `SolanaSender(${this.mode}:${this.network.id}) cannot send ${request.token.id} in ${request.mode} mode`,
      );
    if (request.amount <= 0n) throw new Error('an outgoing transfer moves a positive amount');
    await this.record(
      tx,
      request.transferId,
      request.purpose,
      {
        kind: 'transfer',
        token: request.token.id,
        destination: request.destination,
        amount: request.amount.toString(),
      },
      { token: request.token.id, destination: request.destination, amount: request.amount },
    );
  }

  /** Opens `owner`'s associated token account of `mint` from the hot wallet (one transfer per owner). */
  async openTokenAccount(tx: Tx, owner: string, mint: string): Promise<void> {
    await this.record(tx, `ata_${owner}`, 'account', { kind: 'account', owner, mint }, { destination: owner });
  }

  /** Records a sweep of deposit keys to `treasury`. */
  async recordSweep(
    tx: Tx,
    id: string,
    treasury: string,
    items: Array<{ index: bigint; address: string }>,
  ): Promise<void> {
    await this.record(
      tx,
      id,
      'sweep',
      { kind: 'sweep', treasury, items: items.map((i) => ({ index: i.index.toString(), address: i.address })) },
      { destination: treasury },
    );
  }

  /** Records a subscription charge (a transfer by the grant's delegate) in the caller's transaction. */
  async recordCharge(tx: Tx, id: string, plan: Extract<Plan, { kind: 'charge' }>): Promise<void> {
    await this.record(tx, id, 'charge', plan, {
      token: plan.token,
      destination: plan.destination,
      amount: BigInt(plan.amount),
    });
  }

  /**
   * Records a payer-signed, hot-wallet co-signed transaction as version 0 of a transfer (status signed): a gasless
   * payment, or a subscription grant's approval or revoke.
   */
  async recordRelay(
    tx: Tx,
    id: string,
    signed: SignedTransaction & Lifetime,
    what: { token: string; destination: string; amount?: bigint },
    purpose: 'gasless' | 'grant' | 'revoke' = 'gasless',
  ): Promise<void> {
    const now = this.deps.clock.now();
    await this.record(tx, id, purpose, { kind: 'relay' }, what, { status: 'signed', signature: signed.signature });
    await tx
      .insertInto('solana_transfer_txs')
      .values({
        transfer_id: id,
        version: 0,
        signature: signed.signature,
        raw: signed.raw,
        blockhash: signed.blockhash,
        last_valid_block_height: signed.lastValidBlockHeight,
        created_at: now,
      })
      .execute();
  }

  private async record(
    tx: Tx,
    id: string,
    purpose: SolanaPurpose,
    plan: Plan,
    what: { token?: string; destination?: string; amount?: bigint },
    initial: { status: 'pending' | 'signed'; signature?: string } = { status: 'pending' },
  ): Promise<void> {
    const columns = {
      purpose,
      plan: JSON.stringify(plan),
      token: what.token ?? null,
      destination: what.destination ?? null,
      amount: what.amount?.toString() ?? null,
      signature: initial.signature ?? null,
    };
    await this.enqueued(tx, id, columns, initial.status);
  }

  private async lifetime(): Promise<Lifetime> {
    const r = await this.rpc().request<{ value: { blockhash: string; lastValidBlockHeight: number } }>(
      'getLatestBlockhash',
      [{ commitment: 'confirmed' }],
    );
    return { blockhash: r.value.blockhash, lastValidBlockHeight: BigInt(r.value.lastValidBlockHeight) };
  }

  /** Builds, signs and stores a new version of `row`'s plan (from `pending`, or `broadcast` after an expiry). */
  private async build(row: SolanaTransferRow, from: 'pending' | 'signed' | 'broadcast'): Promise<StepOutcome> {
    const plan = row.plan as Plan;
    if (plan.kind === 'relay')
      return this.settle(row, from, {
        status: 'failed',
        signature: null,
        slot: null,
        error: 'the payer-signed transaction expired before it landed; sign a new one',
      });
    const hot = await signerOf(this.deps.keys.hotWallet());
    const lifetime = await this.lifetime();
    const built = await planInstructions(this.plans, plan, hot);
    if ('wait' in built) return { retry: built.wait };
    if ('skip' in built) {
      if (built.summary)
        await this.deps.db
          .updateTable('solana_transfers')
          .set({ plan: JSON.stringify({ ...plan, built: built.summary }) })
          .where('id', '=', row.id)
          .where('status', '=', from)
          .execute();
      return this.settle(row, from, {
        status: built.ok ? 'sent' : 'failed',
        signature: null,
        slot: null,
        error: built.ok ? null : built.skip,
      });
    }
    const signed = await signInstructions(hot, built.instructions, lifetime);
    if (signed.size > MAX_TRANSACTION_BYTES)
      return this.settle(row, from, {
        status: 'failed',
        signature: null,
        slot: null,
        error: `the transaction is ${signed.size} bytes, over Solana's ${MAX_TRANSACTION_BYTES}`,
      });
    const now = this.deps.clock.now();
    const stored = await withTx(this.deps.db, async (tx) => {
      const current = await tx
        .selectFrom('solana_transfers')
        .select(['status', 'signature'])
        .where('id', '=', row.id)
        .forUpdate()
        .executeTakeFirst();
      if (!current || current.status !== from || current.signature !== row.signature) return false;
      const last = await tx
        .selectFrom('solana_transfer_txs')
        .select('version')
        .where('transfer_id', '=', row.id)
        .orderBy('version', 'desc')
        .limit(1)
        .executeTakeFirst();
      await tx
        .insertInto('solana_transfer_txs')
        .values({
          transfer_id: row.id,
          version: last ? last.version + 1 : 0,
          signature: signed.signature,
          raw: signed.raw,
          blockhash: lifetime.blockhash,
          last_valid_block_height: lifetime.lastValidBlockHeight,
          created_at: now,
        })
        .execute();
      await tx
        .updateTable('solana_transfers')
        .set({
          status: 'signed',
          signature: signed.signature,
          signed_at: now,
          error: null,
          tries: 0,
          next_attempt_at: now,
          ...(built.summary ? { plan: JSON.stringify({ ...plan, built: built.summary }) } : {}),
        })
        .where('id', '=', row.id)
        .execute();
      return true;
    });
    if (stored)
      this.deps.log.info(
        {
          transferId: row.id,
          purpose: row.purpose,
          chain: this.network.id,
          mode: this.mode,
          signature: signed.signature,
          rebuilt: from === 'broadcast',
        },
        'solana transfer signed',
      );
    return 'progress';
  }

  /** signed → broadcast: sends the newest stored version exactly as stored. */
  private async send(row: SolanaTransferRow): Promise<StepOutcome> {
    const newest = await this.newestVersion(row.id);
    if (row.tries > 0 && (await this.expiredUnseen(row))) return this.expired(row);
    try {
      await this.rpc().request('sendTransaction', [
        newest.raw,
        { encoding: 'base64', preflightCommitment: 'confirmed', maxRetries: 0 },
      ]);
    } catch (err) {
      const landedOrStale =
        err instanceof SolanaRpcError &&
        err.code === -32002 &&
        ['AlreadyProcessed', 'BlockhashNotFound'].includes(String((err.data as { err?: unknown } | undefined)?.err));
      // Refused by preflight, it was not forwarded: the queue retries it, or fails it when no retry can cure it.
      if (!landedOrStale) throw err;
    }
    if (await this.queue.broadcasted(row.id, ['signature', newest.signature]))
      this.deps.log.info(
        {
          transferId: row.id,
          chain: this.network.id,
          mode: this.mode,
          signature: newest.signature,
          version: newest.version,
        },
        'solana transfer sent',
      );
    return 'progress';
  }

  /** broadcast → sent | failed at finalized, a resend of the same bytes, or a rebuild after expiry. */
  private async check(row: SolanaTransferRow): Promise<StepOutcome> {
    const versions = await this.versions(row.id);
    const r = await this.rpc().request<{
      value: Array<{ slot: number; err: unknown; confirmationStatus: string | null } | null>;
    }>('getSignatureStatuses', [versions.map((v) => v.signature), { searchTransactionHistory: true }]);
    const i = r.value.findIndex((s) => s !== null);
    if (i >= 0) {
      const s = r.value[i]!;
      if (s.confirmationStatus !== 'finalized') return 'wait';
      return this.settle(row, 'broadcast', {
        status: s.err === null ? 'sent' : 'failed',
        signature: versions[i]!.signature,
        slot: BigInt(s.slot),
        error: s.err === null ? null : `the transaction failed on chain: ${JSON.stringify(s.err)}`,
      });
    }
    if (await this.expiredUnseen(row, versions)) return this.expired(row);
    const newest = versions[versions.length - 1]!;
    await this.rpc()
      .request('sendTransaction', [newest.raw, { encoding: 'base64', skipPreflight: true, maxRetries: 0 }])
      .catch(() => {});
    return 'wait';
  }

  /** True when no version landed and the newest one's blockhash can no longer land (finalized height past it). */
  private async expiredUnseen(
    row: SolanaTransferRow,
    versions?: Awaited<ReturnType<SolanaSender['versions']>>,
  ): Promise<boolean> {
    const all = versions ?? (await this.versions(row.id));
    if (all.length === 0) return false;
    const height = BigInt(await this.rpc().request<number>('getBlockHeight', [{ commitment: 'finalized' }]));
    if (height <= BigInt(all[all.length - 1]!.last_valid_block_height)) return false;
    if (!versions) {
      const r = await this.rpc().request<{ value: unknown[] }>('getSignatureStatuses', [
        all.map((v) => v.signature),
        { searchTransactionHistory: true },
      ]);
      if (r.value.some((s) => s !== null)) return false;
    }
    return true;
  }

  private async expired(row: SolanaTransferRow): Promise<StepOutcome> {
    this.deps.log.warn(
      { transferId: row.id, chain: this.network.id, mode: this.mode, signature: row.signature },
      'solana transfer expired unseen; rebuilding with a new blockhash',
    );
    return this.build(row, row.status as 'pending' | 'signed' | 'broadcast');
  }

  private async settle(
    row: SolanaTransferRow,
    from: SolanaTransferRow['status'],
    result: { status: 'sent' | 'failed'; signature: string | null; slot: bigint | null; error: string | null },
  ): Promise<StepResult> {
    const now = this.deps.clock.now();
    const settled = await withTx(this.deps.db, async (tx) => {
      const s = await tx
        .updateTable('solana_transfers')
        .set({
          status: result.status,
          signature: result.signature,
          slot: result.slot,
          error: result.error,
          settled_at: now,
        })
        .where('id', '=', row.id)
        .where('status', '=', from)
        .returningAll()
        .executeTakeFirst();
      if (!s) return null;
      const plan = s.plan as Plan;
      if (s.purpose === 'gasless' && result.status === 'failed')
        await tx.updateTable('solana_gasless').set({ active: false }).where('transfer_id', '=', s.id).execute();
      if (plan.kind === 'sweep' && result.status === 'sent' && result.slot !== null) {
        const addresses = plan.items.map((i) => i.address);
        await tx
          .updateTable('solana_addresses')
          .set({ swept_slot: result.slot })
          .where('mode', '=', this.mode)
          .where('chain', '=', this.network.id)
          .where('address', 'in', addresses)
          .execute();
        const closed = plan.built?.closed ?? [];
        if (closed.length > 0)
          await tx
            .updateTable('solana_addresses')
            .set({ closed: true })
            .where('mode', '=', this.mode)
            .where('chain', '=', this.network.id)
            .where('token_account', 'in', closed)
            .execute();
      }
      return s;
    });
    if (!settled) return 'progress';
    const log =
      result.status === 'sent' ? this.deps.log.info.bind(this.deps.log) : this.deps.log.warn.bind(this.deps.log);
    log(
      {
        transferId: row.id,
        purpose: row.purpose,
        chain: this.network.id,
        mode: this.mode,
        status: result.status,
        signature: result.signature,
        error: result.error,
      },
      'solana transfer settled',
    );
    return 'done';
  }
}
