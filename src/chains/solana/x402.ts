/**
 * Solana's x402 capability (`LoadedFamily.x402`, ../x402.ts): `@x402/svm`'s `exact` scheme with Kasse's hot wallet
 * as the fee payer (`extra.feePayer`), settled through the fee-payer relay of the crash-safe sender.
 *
 * The payer's client builds a v0 transaction with the hot wallet as fee payer and signs it as the token authority
 * (the layout and every refusal: x402-check.ts). `verify` adds what only the chain knows: the merchant's token account
 * exists, the blockhash is still accepted, the transaction has not landed (its signature is the fee payer's,
 * deterministic for the message) and is not a relay Kasse recorded already, and a simulation co-signed by the hot
 * wallet succeeds (`insufficient_funds` when the payer lacks the amount) and costs the hot wallet only the fee.
 *
 * `settle` records the co-signed transaction under the facilitator's settlement id as a relay (stored before it is
 * sent, resent until its blockhash expires, never rebuilt: the payer signed it), so settling twice or in two processes
 * records one transaction, and after a crash the sender loop carries it on while `settlement` reports where it stands.
 * It answers once the transaction reaches the commitment of the amount's confirmation tier (1: confirmed; the
 * network's finality count: finalized) or the deadline passes. The merchant's receiving key (`payTo`) is a deposit
 * key of the master seed; its USDC token account is opened from the hot wallet when it is issued, like a coin
 * choice's, and sweeps collect it. A network the test-mode simulator serves checks the transaction and simulates
 * settlement. Rules: docs/solana.md ("x402").
 */
import {
  getBase64Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getSignatureFromTransaction,
  getTransactionDecoder,
  getTransactionEncoder,
  partiallySignTransaction,
} from '@solana/kit';
import { pollPause } from '../../core/clock.ts';
import { ImpossibleState } from '../../core/errors.ts';
import type { Mode } from '../../core/mode.ts';
import { withTx, isUniqueViolation } from '../../db/index.ts';
import { tokenAmountTier } from '../networks.ts';
import type { ChainRegistry } from '../registry.ts';
import { simulatedTxHash, type NetworkConfig, type TokenConfig } from '../types.ts';
import type { X402Kind, X402Request, X402Scheme, X402Settlement } from '../x402.ts';
import type { SolanaAdapter } from './adapter.ts';
import type { SolanaKeys } from './keys.ts';
import { keyPairOf } from './keys.ts';
import { LAMPORTS_PER_SIGNATURE } from './plans.ts';
import type { SolanaTransferRow } from './sender.ts';
import { associatedTokenAccount } from './transactions.ts';
import {
  checkX402Transaction,
  keyOf,
  MAX_PRIORITY_LAMPORTS,
  no,
  solanaCaip2,
  SVM_REASONS,
  type Checked,
  type Refusal,
} from './x402-check.ts';

export { SVM_REASONS, solanaCaip2 } from './x402-check.ts';

const POLL_MS = 400;
const b64 = getBase64Decoder();
const b64enc = getBase64Encoder();

/** The network's USDC: its gasless SPL coin named USDC with a mint. */
export function usdcOf(network: NetworkConfig): TokenConfig | null {
  return network.tokens.find((t) => t.kind === 'spl' && t.gasless && t.symbol === 'USDC' && t.contract) ?? null;
}

interface Inspected {
  checked: Checked;
  signed: { raw: string; signature: string };
}

/** The capability over the family's adapters (those of simulator-served networks are absent). */
export function solanaX402(deps: { chains: ChainRegistry; keys: SolanaKeys; adapters: SolanaAdapter[] }): X402Scheme {
  const adapterOf = (mode: Mode, chain: string) =>
    deps.adapters.find((a) => a.mode === mode && a.network.id === chain) ?? null;
  const feePayer = () => deps.keys.hotWallet().address;
  return {
    async kinds(mode) {
      const kinds: X402Kind[] = [];
      for (const network of deps.chains.networks(mode)) {
        const token = usdcOf(network);
        if (network.family !== 'solana' || !token) continue;
        const state = deps.chains.status(mode, network.id).state;
        if (state === 'paused') continue;
        const simulated = state === 'simulated' || !adapterOf(mode, network.id)?.sender;
        if (simulated && mode === 'live') continue;
        // One CAIP-2 id per mode: the first Solana network of the mode is the cluster.
        if (kinds.length > 0) break;
        kinds.push({
          network: solanaCaip2(mode),
          chain: network.id,
          token,
          extra: { feePayer: feePayer(), asset: token.contract!, decimals: token.decimals },
          simulated,
          codes: { recipient: SVM_REASONS.recipient, replay: SVM_REASONS.duplicate },
        });
      }
      return kinds;
    },

    async payTo(mode, chain, index) {
      const address = deps.keys.deposit(mode, index).address;
      const adapter = adapterOf(mode, chain);
      const token = adapter ? usdcOf(adapter.network) : null;
      // Opened from the hot wallet like a coin choice's token account; swept like one.
      if (adapter && token) await withTx(adapter.deps.db, (tx) => adapter.addressIssued(tx, { token, address, index }));
      return address;
    },

    // Receiving keys are the master seed's whatever serves the network; a node adds the opened token account.
    derivation: (mode, chain) => (adapterOf(mode, chain)?.sender ? 'node' : 'simulator'),

    key: (request) => keyOf(request.payload.transaction),

    async verify(request) {
      const adapter = adapterOf(request.mode, request.kind.chain);
      const r = adapter?.sender
        ? await new SolanaX402(adapter).inspect(request)
        : await staticCheck(request, feePayer());
      if ('reason' in r) return { valid: false, reason: r.reason, message: r.message, payer: r.payer };
      return { valid: true, payer: r.checked.payer, key: r.checked.key };
    },

    async settle(request, id, deadline) {
      const adapter = adapterOf(request.mode, request.kind.chain);
      if (!adapter?.sender) {
        const r = await staticCheck(request, feePayer());
        if ('reason' in r) return { status: 'failed', reason: r.reason, message: r.message, transaction: null };
        return {
          status: 'settled',
          transaction: simulatedTxHash(),
          blockNumber: null,
          blockHash: null,
          index: r.checked.index,
          simulated: true,
        };
      }
      return new SolanaX402(adapter).settle(request, id, deadline);
    },

    async settlement(mode, chain, id) {
      const adapter = adapterOf(mode, chain);
      // A simulated settlement ends inside its settle; until then (and after a restart, which settles again) it waits.
      if (!adapter?.sender) return { status: 'pending', transaction: null };
      return new SolanaX402(adapter).settlement(id, null);
    },
  };
}

type Verdict = (Refusal & { payer: string }) | Inspected;

/** The checks that need no node (a simulator-served network). */
async function staticCheck(
  request: X402Request,
  hot: string,
): Promise<(Refusal & { payer: string }) | { checked: Checked }> {
  const r = await checkTransaction(request, hot);
  return 'reason' in r ? { ...r, payer: '' } : { checked: r };
}

async function checkTransaction(request: X402Request, hot: string): Promise<Checked | Refusal> {
  const req = request.requirements;
  const token = request.kind.token;
  if (req.extra?.feePayer === undefined) return no(SVM_REASONS.missingFeePayer, 'extra.feePayer is missing.');
  if (req.extra.feePayer !== hot)
    return no(SVM_REASONS.feePayerNotManaged, `extra.feePayer must be Kasse's fee payer ${hot}.`);
  if (req.asset !== token.contract)
    return no(SVM_REASONS.mint, `The asset must be the network's USDC ${token.contract}.`);
  return checkX402Transaction(request.payload.transaction, {
    feePayer: hot,
    token,
    destination: await associatedTokenAccount(request.payTo, token.contract!),
    amount: request.amount,
    memo: typeof req.extra?.memo === 'string' ? req.extra.memo : undefined,
  });
}

/** The scheme on one network with a running sender. */
export class SolanaX402 {
  constructor(private readonly adapter: SolanaAdapter) {}

  private get sender() {
    return this.adapter.sender!;
  }

  /** Every check of `verify`; on success also the transaction co-signed by the hot wallet. */
  async inspect(request: X402Request): Promise<Verdict> {
    const hot = this.adapter.deps.keys.hotWallet();
    const checked = await checkTransaction(request, hot.address);
    if ('reason' in checked) return { ...checked, payer: '' };
    const refuse = (r: Refusal) => ({ ...r, payer: checked.payer });
    const signedTx = await partiallySignTransaction([await keyPairOf(hot)], checked.tx);
    const signed = {
      raw: b64.decode(getTransactionEncoder().encode(signedTx)),
      signature: getSignatureFromTransaction(signedTx),
    };
    const rpc = this.adapter.rpc();
    const destination = await associatedTokenAccount(request.payTo, request.kind.token.contract!);
    const [valid, seen, account] = await Promise.all([
      rpc.request<{ value: boolean }>('isBlockhashValid', [checked.blockhash, { commitment: 'confirmed' }]),
      rpc.request<{ value: unknown[] }>('getSignatureStatuses', [
        [signed.signature],
        { searchTransactionHistory: true },
      ]),
      rpc.request<{ value: unknown }>('getAccountInfo', [destination, { encoding: 'base64', commitment: 'confirmed' }]),
    ]);
    if (seen.value[0] || (await this.relayOf(signed.signature)))
      return refuse(no(SVM_REASONS.duplicate, 'This transaction was settled already.'));
    if (!valid.value) return refuse(no(SVM_REASONS.simulation, 'The blockhash has expired; sign a new transaction.'));
    if (account.value === null) {
      // Its opening is recorded with the receiving key; make sure it is on its way.
      await this.sender.push(`ata_${request.payTo}`).catch(() => {});
      return refuse(
        no(SVM_REASONS.simulation, "The merchant's USDC token account is being opened; pay again in a few seconds."),
      );
    }
    const spend = await this.simulate(signed.raw, hot.address);
    return spend ? refuse(spend) : { checked, signed };
  }

  /** Simulates the co-signed transaction: it must succeed and cost the hot wallet no more than the fee. */
  private async simulate(raw: string, hot: string): Promise<Refusal | null> {
    const rpc = this.adapter.rpc();
    const [sim, before] = await Promise.all([
      rpc.request<{ value: { err: unknown; logs: string[] | null; accounts: Array<{ lamports: number } | null> } }>(
        'simulateTransaction',
        [
          raw,
          {
            encoding: 'base64',
            sigVerify: true,
            commitment: 'confirmed',
            accounts: { encoding: 'base64', addresses: [hot] },
          },
        ],
      ),
      rpc.request<{ value: number }>('getBalance', [hot, { commitment: 'confirmed' }]),
    ]);
    if (sim.value.err !== null) {
      if (/insufficient funds/i.test((sim.value.logs ?? []).join('\n')))
        return no(SVM_REASONS.insufficientFunds, "The payer's token account does not hold the amount.");
      return no(SVM_REASONS.simulation, `The transfer would fail on chain: ${JSON.stringify(sim.value.err)}.`);
    }
    const after = sim.value.accounts?.[0]?.lamports;
    const most = 2n * LAMPORTS_PER_SIGNATURE + MAX_PRIORITY_LAMPORTS;
    if (after === undefined || BigInt(before.value) - BigInt(after) > most)
      return no(SVM_REASONS.feePayerTransferring, 'The transaction would spend more of the fee payer than the fee.');
    return null;
  }

  /** The relay Kasse recorded with this transaction signature, if any. */
  private async relayOf(signature: string): Promise<boolean> {
    const row = await this.adapter.deps.db
      .selectFrom('solana_transfer_txs')
      .select('transfer_id')
      .where('signature', '=', signature)
      .executeTakeFirst();
    return row !== undefined;
  }

  async settle(request: X402Request, id: string, deadline: Date): Promise<X402Settlement> {
    if (!(await this.sender.get(id))) {
      const r = await this.inspect(request);
      // A refusal stands unless a concurrent settle of the same id recorded the transaction meanwhile.
      if ('reason' in r && !(await this.sender.get(id)))
        return { status: 'failed', reason: r.reason, message: r.message, transaction: null };
      if (!('reason' in r)) await this.record(id, r, request);
    }
    const finalized =
      tokenAmountTier(this.adapter.network, request.kind.token, request.amount).confirmations >=
      this.adapter.network.finalityConfirmations;
    const { clock } = this.adapter.deps;
    for (;;) {
      const now = clock.now();
      const s = await this.settlement(id, finalized);
      if (s.status !== 'pending' || now >= deadline) return s;
      await pollPause(clock, POLL_MS, deadline);
    }
  }

  /** Records the co-signed relay as transfer `id` (once, also across processes) and sends it. */
  private async record(id: string, r: Inspected, request: X402Request): Promise<void> {
    const adapter = this.adapter;
    const latest = await adapter
      .rpc()
      .request<{ value: { lastValidBlockHeight: number } }>('getLatestBlockhash', [{ commitment: 'confirmed' }]);
    try {
      await withTx(adapter.deps.db, (tx) =>
        this.sender.recordRelay(
          tx,
          id,
          {
            ...r.signed,
            size: 0,
            blockhash: r.checked.blockhash,
            lastValidBlockHeight: BigInt(latest.value.lastValidBlockHeight),
          },
          { token: request.kind.token.id, destination: request.payTo, amount: request.amount },
        ),
      );
    } catch (err) {
      // Another settle of the same id recorded it first: follow that one.
      if (!isUniqueViolation(err)) throw err;
      return;
    }
    adapter.deps.log.info(
      { transferId: id, chain: adapter.network.id, mode: adapter.mode, signature: r.signed.signature },
      'solana x402 payment accepted',
    );
    await this.sender
      .push(id)
      .catch((err: unknown) =>
        adapter.deps.log.error(
          { err: err instanceof Error ? err.message : String(err), transferId: id },
          'solana x402 relay could not be sent now; the sender carries it on',
        ),
      );
  }

  /**
   * Where relay `id` stands; drives the sender's send step meanwhile (guarded by its lease, like the sender loop).
   * `finalized`: whether only finalized counts (null: read from the recorded amount's tier).
   */
  async settlement(id: string, finalized: boolean | null): Promise<X402Settlement> {
    let row = await this.sender.get(id);
    // Not recorded (yet): the settle that claimed it is still checking it, or died before it sent anything.
    if (!row) return { status: 'pending', transaction: null };
    if (row.status === 'pending' || row.status === 'signed') row = await this.sender.push(id).catch(() => row!);
    const transaction = row.signature;
    if (row.status === 'failed')
      return {
        status: 'failed',
        reason: SVM_REASONS.failed,
        message: row.error ?? 'The transaction failed.',
        transaction,
      };
    if (row.status === 'sent') return this.settled(row, row.slot);
    if (row.status !== 'broadcast' || !transaction) return { status: 'pending', transaction };
    const s = await this.adapter
      .rpc()
      .request<{ value: Array<{ slot: number; err: unknown; confirmationStatus: string | null } | null> }>(
        'getSignatureStatuses',
        [[transaction], { searchTransactionHistory: true }],
      );
    const st = s.value[0];
    if (!st) return { status: 'pending', transaction };
    if (st.err !== null)
      return {
        status: 'failed',
        reason: SVM_REASONS.failed,
        message: `The transaction failed on chain: ${JSON.stringify(st.err)}`,
        transaction,
      };
    const needFinal = finalized ?? this.finalizedOnly(row);
    if (st.confirmationStatus === 'finalized' || (!needFinal && st.confirmationStatus === 'confirmed'))
      return this.settled(row, BigInt(st.slot));
    return { status: 'pending', transaction };
  }

  /**
   * Whether a stored relay counts only once finalized: its amount's confirmation tier, read from the row. A relay is
   * stored with its coin and amount, and the coin must still be configured: neither is guessed.
   */
  private finalizedOnly(row: SolanaTransferRow): boolean {
    const ids = { settlement: row.id, transaction: row.signature };
    if (row.amount === null) throw new ImpossibleState('a stored x402 relay has no amount to set its tier by', ids);
    const token = this.adapter.network.tokens.find((t) => t.id === row.token);
    if (!token)
      throw new ImpossibleState(
        `a stored x402 relay's coin ${row.token} is not configured on ${this.adapter.network.id}, so its tier is unknown`,
        ids,
      );
    const tier = tokenAmountTier(this.adapter.network, token, BigInt(row.amount));
    return tier.confirmations >= this.adapter.network.finalityConfirmations;
  }

  private async settled(row: SolanaTransferRow, slot: bigint | null): Promise<X402Settlement> {
    const [version] = await this.sender.versions(row.id);
    const tx = getTransactionDecoder().decode(b64enc.encode(version!.raw));
    const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
    if (message.version !== 'legacy' && message.version !== 0) throw new Error('x402 relay of an unknown version');
    // The stored relay passed the layout check: its third instruction is the transfer, its third account ours.
    const index = message.instructions[2]?.accountIndices?.[2];
    if (index === undefined)
      throw new ImpossibleState('the stored x402 relay has no transfer to a token account as its third instruction', {
        settlement: row.id,
        transaction: row.signature,
      });
    return {
      status: 'settled',
      transaction: row.signature!,
      blockNumber: slot,
      blockHash: null,
      index,
      simulated: false,
    };
  }
}
