/**
 * The Solana family's recurring charges (the capability of src/chains/charges.ts) as an SPL Token delegate: the
 * payer signs one `ApproveChecked` of the grant's total of the network's USDC to a delegate key Kasse derives for
 * these terms (keys.ts `grantDelegate`), with the hot wallet as fee payer, so the payer needs no SOL. `checkGrant`
 * takes that transaction only if it is exactly this approval (the payer's associated token account, the mint and
 * decimals, the delegate, the total; nothing else in it; the payer's signature verifies), then co-signs and
 * simulates it (gasless.ts `coSign`); `recordGrant` records it as a relay of the one transfer queue (sender.ts). A
 * charge is a `TransferChecked` of the amount by the delegate into the merchant's receiving token account, built,
 * signed and followed by the same queue; a revoke is the payer's signed `Revoke`, relayed the same way.
 *
 * Enforcement is `delegate`: the chain caps only the total (and the payer can revoke at any time, or approve another
 * delegate, which ends the grant: `check` finds the delegate gone). The amount per period, the period and the
 * receiver are kept by Kasse (the subscriptions module's period bookkeeping), not by the chain.
 *
 * The merchant's receiving address is a deposit key, remembered in `solana_addresses` and marked with each charge's
 * slot once it landed, so the sweeps move what it received to the treasury like any deposit.
 */
import { sql } from 'kysely';
import { address, createNoopSigner, type Address } from '@solana/kit';
import {
  AccountState,
  getApproveCheckedInstruction,
  getApproveCheckedInstructionDataDecoder,
  getRevokeInstruction,
  getTokenDecoder,
  identifyTokenInstruction,
  TokenInstruction,
} from '@solana-program/token';
import { ApiError, invalid } from '../../core/errors.ts';
import type { Mode } from '../../core/mode.ts';
import type { Tx } from '../../db/index.ts';
import {
  QueuedChargeScheme,
  type ChargeCheck,
  type ChargeKind,
  type ChargeScheme,
  type ChargeState,
  type Checked,
  type GrantTerms,
  type SigningRequest,
  type StoredGrant,
} from '../charges.ts';
import type { SolanaAdapter } from './adapter.ts';
import { coSign, readPayerSigned, unsignedTransaction, verifyPayerSigned, type PayerSigned } from './gasless.ts';
import type { SolanaKeys } from './keys.ts';
import type { SolanaSender } from './sender.ts';
import { associatedTokenAccount, TOKEN_ACCOUNT_SIZE, type RpcAccount } from './transactions.ts';

export interface SolanaChargesDeps {
  keys: SolanaKeys;
  adapter: (mode: Mode, chain: string) => SolanaAdapter | null;
  adapters: SolanaAdapter[];
}

/** The family's record of a grant: the delegate, the payer's token account and the terms the delegate derives from. */
interface SolanaGrantData {
  delegate: string;
  account: string;
  terms: string;
}

/** A co-signed relay, as checkGrant and checkRevoke hand it to be recorded. */
interface Relay {
  raw: string;
  signature: string;
  blockhash: string;
  last_valid_block_height: string;
}

const tokenDecoder = getTokenDecoder();

export class SolanaCharges extends QueuedChargeScheme implements ChargeScheme {
  protected readonly failure = 'the transaction failed';
  constructor(private readonly deps: SolanaChargesDeps) {
    super();
  }

  kinds(mode: Mode): ChargeKind[] {
    const kinds: ChargeKind[] = [];
    for (const a of this.deps.adapters) {
      if (a.mode !== mode || a.network.paused || !a.sender) continue;
      const token = a.network.tokens.find((t) => t.gasless && t.stable && t.kind === 'spl' && t.contract !== null);
      if (token) kinds.push({ chain: a.network.id, token, enforcement: 'delegate' });
    }
    return kinds;
  }

  /** A deposit key, remembered for sweeps like one (its token account is the charges' to open; none here). */
  async receiver(mode: Mode, chain: string, index: bigint): Promise<string> {
    const { adapter } = this.served(mode, chain);
    const key = this.deps.keys.deposit(mode, index).address;
    const token = this.kinds(mode).find((k) => k.chain === chain)?.token;
    if (!token)
      throw new ApiError('invalid_state', `${chain} takes no subscription grants in ${mode} mode.`, 'network');
    await adapter.deps.db
      .insertInto('solana_addresses')
      .values({
        mode,
        chain,
        address: key,
        address_index: index,
        token: token.id,
        token_account: null,
        created_at: adapter.deps.clock.now(),
      })
      .onConflict((oc) => oc.columns(['mode', 'chain', 'address']).doNothing())
      .execute();
    return key;
  }

  async offer(t: GrantTerms): Promise<SigningRequest> {
    const { adapter } = this.served(t.mode, t.chain);
    const mint = address(t.token.contract!);
    const account = await associatedTokenAccount(t.payer, mint);
    const delegate = this.delegate(t);
    const unsigned = await unsignedTransaction(
      adapter,
      [
        getApproveCheckedInstruction({
          source: account,
          mint,
          delegate,
          owner: createNoopSigner(address(t.payer)),
          amount: t.total,
          decimals: t.token.decimals,
        }),
      ],
      this.deps.keys.hotWallet().address,
    );
    return { ...unsigned, account, delegate, amount: t.total.toString() };
  }

  async checkGrant(t: GrantTerms, signed: Record<string, unknown>): Promise<Checked> {
    const { adapter } = this.served(t.mode, t.chain);
    const read = this.read(signed, 'the approval of the grant’s total');
    const refuse = (why: string) => invalid(`signatures.transaction ${why}`, 'signatures.transaction');
    let data: { amount: bigint; decimals: number };
    try {
      if (identifyTokenInstruction(read.ix.data ?? new Uint8Array()) !== TokenInstruction.ApproveChecked)
        throw new Error();
      data = getApproveCheckedInstructionDataDecoder().decode(read.ix.data!);
    } catch {
      throw refuse('must be an ApproveChecked instruction.');
    }
    if (read.accounts.length !== 4) throw refuse('must name exactly the approval’s four accounts.');
    const [source, mint, delegate, owner] = read.accounts.map((i) => read.keys[i]);
    const account = await associatedTokenAccount(t.payer, t.token.contract!);
    if (read.payer !== t.payer || owner !== t.payer) throw refuse(`must be signed by the payer ${t.payer}.`);
    if (source !== account) throw refuse(`must approve from the payer’s token account ${account}.`);
    if (mint !== t.token.contract || data.decimals !== t.token.decimals) throw refuse('approves another token.');
    const expected = this.delegate(t);
    if (delegate !== expected) throw refuse(`must approve the grant’s delegate ${expected}.`);
    if (data.amount !== t.total) throw refuse(`must approve exactly the grant’s total ${t.total}.`);
    await this.verified(read);
    const { raw, signature, lifetime } = await this.relayed(() => coSign(adapter, read, 'approval'));
    const relay: Relay = {
      raw,
      signature,
      blockhash: lifetime.blockhash,
      last_valid_block_height: lifetime.lastValidBlockHeight.toString(),
    };
    const grant: SolanaGrantData = { delegate: expected, account, terms: termsOf(t) };
    return { key: expected, data: { ...grant, relay } };
  }

  async recordGrant(tx: Tx, t: GrantTerms, checked: Checked, id: string): Promise<void> {
    const data = checked.data as unknown as SolanaGrantData & { relay: Relay };
    await this.relay(tx, t.mode, t.chain, id, data.relay, 'grant', {
      token: t.token.id,
      destination: data.delegate,
      amount: t.total,
    });
  }

  async revokeOffer(grant: StoredGrant): Promise<SigningRequest> {
    const { adapter } = this.served(grant.mode, grant.chain);
    const data = grant.data as unknown as SolanaGrantData;
    return unsignedTransaction(
      adapter,
      [getRevokeInstruction({ source: address(data.account), owner: createNoopSigner(address(grant.payer)) })],
      this.deps.keys.hotWallet().address,
    );
  }

  async checkRevoke(grant: StoredGrant, signed: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { adapter } = this.served(grant.mode, grant.chain);
    const data = grant.data as unknown as SolanaGrantData;
    const read = this.read(signed, 'the revoke');
    const refuse = (why: string) => invalid(`signatures.transaction ${why}`, 'signatures.transaction');
    if (identifyTokenInstruction(read.ix.data ?? new Uint8Array()) !== TokenInstruction.Revoke)
      throw refuse('must be a Revoke instruction.');
    const [source, owner] = read.accounts.map((i) => read.keys[i]);
    if (read.accounts.length !== 2 || source !== data.account || owner !== grant.payer || read.payer !== grant.payer)
      throw refuse(`must revoke the payer’s token account ${data.account}, signed by the payer.`);
    await this.verified(read);
    // Revoked already on chain (or another delegate approved since): nothing to relay.
    if ((await this.tokenAccount(adapter, data.account))?.delegate !== data.delegate) return { relay: null };
    const { raw, signature, lifetime } = await this.relayed(() => coSign(adapter, read, 'revoke'));
    return {
      relay: {
        raw,
        signature,
        blockhash: lifetime.blockhash,
        last_valid_block_height: lifetime.lastValidBlockHeight.toString(),
      } satisfies Relay,
    };
  }

  async recordRevoke(tx: Tx, grant: StoredGrant, checked: Record<string, unknown>, id: string): Promise<void> {
    if (!checked.relay) return;
    const data = grant.data as unknown as SolanaGrantData;
    await this.relay(tx, grant.mode, grant.chain, id, checked.relay as Relay, 'revoke', {
      token: grant.token.id,
      destination: data.delegate,
    });
  }

  async check(grant: StoredGrant, amount: bigint): Promise<ChargeCheck> {
    const { adapter } = this.served(grant.mode, grant.chain);
    const data = grant.data as unknown as SolanaGrantData;
    const account = await this.tokenAccount(adapter, data.account);
    if (!account || account.mint !== grant.token.contract || account.owner !== grant.payer)
      return { ok: false, reason: 'grant_revoked', message: 'The payer’s token account is closed.' };
    if (account.delegate !== data.delegate)
      return { ok: false, reason: 'grant_revoked', message: 'The payer revoked the approval on chain.' };
    if (account.delegatedAmount < amount)
      return {
        ok: false,
        reason: 'allowance_exhausted',
        message: `The approval has ${account.delegatedAmount} left, less than ${amount}.`,
      };
    if (account.frozen)
      return { ok: false, reason: 'insufficient_funds', message: 'The payer’s token account is frozen.' };
    if (account.amount < amount)
      return {
        ok: false,
        reason: 'insufficient_funds',
        message: `The payer holds ${account.amount}, less than ${amount}.`,
      };
    return { ok: true };
  }

  async recordCharge(tx: Tx, grant: StoredGrant, id: string, amount: bigint): Promise<void> {
    const data = grant.data as unknown as SolanaGrantData;
    await this.served(grant.mode, grant.chain).sender.recordCharge(tx, id, {
      kind: 'charge',
      token: grant.token.id,
      terms: data.terms,
      source: data.account,
      destination: grant.receiver,
      amount: amount.toString(),
    });
  }

  async chargeState(grant: StoredGrant, id: string, amount: bigint): Promise<ChargeState> {
    const state = await this.relayState(grant.mode, grant.chain, id);
    if (state.status !== 'done') return state;
    const { adapter, sender } = this.served(grant.mode, grant.chain);
    const slot = (await sender.get(id))?.slot ?? null;
    // Landed without error: the transfer is the receiver's token account's gain, at its position in the transaction.
    const to = await associatedTokenAccount(grant.receiver, grant.token.contract!);
    const landed = await adapter.rpc().request<{
      meta: { postTokenBalances: TokenBalance[]; preTokenBalances: TokenBalance[] } | null;
    } | null>('getTransaction', [
      state.transaction,
      { encoding: 'json', commitment: 'finalized', maxSupportedTransactionVersion: 0 },
    ]);
    const gain = (landed?.meta?.postTokenBalances ?? []).find(
      (b) => b.mint === grant.token.contract && b.owner === grant.receiver,
    );
    const before = (landed?.meta?.preTokenBalances ?? []).find((b) => b.accountIndex === gain?.accountIndex);
    const moved = gain ? BigInt(gain.uiTokenAmount.amount) - BigInt(before?.uiTokenAmount.amount ?? '0') : 0n;
    if (!landed) return { status: 'pending', transaction: state.transaction };
    if (!gain || moved !== amount)
      return {
        status: 'failed',
        message: `The transaction moved ${moved}, not ${amount}, into ${to}.`,
        transaction: state.transaction,
      };
    // The receiver is swept like a deposit address once this slot is final (sweep.ts).
    await adapter.deps.db
      .updateTable('solana_addresses')
      .set({ last_deposit_slot: sql`greatest(last_deposit_slot, ${String(slot)}::bigint)` })
      .where('mode', '=', grant.mode)
      .where('chain', '=', grant.chain)
      .where('address', '=', grant.receiver)
      .execute();
    return {
      status: 'succeeded',
      transaction: state.transaction,
      blockNumber: slot,
      blockHash: null,
      index: gain.accountIndex,
      from: grant.payer,
    };
  }

  /** The delegate key's address for these terms. */
  private delegate(t: GrantTerms): Address {
    return this.deps.keys.grantDelegate(t.mode, termsOf(t)).address;
  }

  /** The payer-signed transaction in `signed.transaction`, read as every relay of the hot wallet is. */
  private read(signed: Record<string, unknown>, what: string): PayerSigned {
    const base64 = signed.transaction;
    if (typeof base64 !== 'string' || base64.length === 0)
      throw invalid('signatures.transaction must be the signed transaction, base64.', 'signatures.transaction');
    return this.relayed(() => readPayerSigned(base64, this.deps.keys.hotWallet().address, what));
  }

  private async verified(read: PayerSigned): Promise<void> {
    await this.relayed(() => verifyPayerSigned(read));
  }

  /** Runs a relay check of gasless.ts, its refusals naming the field of the grant body. */
  private relayed<T>(check: () => T): T {
    const rename = (err: unknown) => {
      if (err instanceof ApiError && err.param === 'transaction')
        return new ApiError(
          err.code,
          err.message.replace(/^transaction/, 'signatures.transaction'),
          'signatures.transaction',
        );
      return err;
    };
    try {
      const out = check();
      if (out instanceof Promise) return out.catch((err: unknown) => Promise.reject(rename(err))) as T;
      return out;
    } catch (err) {
      throw rename(err);
    }
  }

  private async relay(
    tx: Tx,
    mode: Mode,
    chain: string,
    id: string,
    relay: Relay,
    purpose: 'grant' | 'revoke',
    what: { token: string; destination: string; amount?: bigint },
  ): Promise<void> {
    await this.served(mode, chain).sender.recordRelay(
      tx,
      id,
      {
        raw: relay.raw,
        signature: relay.signature,
        size: 0,
        blockhash: relay.blockhash,
        lastValidBlockHeight: BigInt(relay.last_valid_block_height),
      },
      what,
      purpose,
    );
  }

  private async tokenAccount(adapter: SolanaAdapter, account: string) {
    const r = await adapter
      .rpc()
      .request<{ value: RpcAccount | null }>('getAccountInfo', [
        account,
        { encoding: 'base64', commitment: 'confirmed' },
      ]);
    const bytes = r.value ? Buffer.from(r.value.data[0], 'base64') : null;
    if (!bytes || bytes.length !== TOKEN_ACCOUNT_SIZE) return null;
    const t = tokenDecoder.decode(bytes);
    return {
      mint: t.mint as string,
      owner: t.owner as string,
      amount: t.amount,
      delegate: t.delegate.__option === 'Some' ? (t.delegate.value as string) : null,
      delegatedAmount: t.delegatedAmount,
      frozen: t.state === AccountState.Frozen,
    };
  }

  protected sender(mode: Mode, chain: string): SolanaSender {
    return this.served(mode, chain).sender;
  }

  /** The network's adapter and sender; throws for a network that takes no grants. */
  private served(mode: Mode, chain: string): { adapter: SolanaAdapter; sender: SolanaSender } {
    const adapter = this.deps.adapter(mode, chain);
    if (!adapter?.sender)
      throw new ApiError('invalid_state', `${chain} takes no subscription grants in ${mode} mode.`, 'network');
    return { adapter, sender: adapter.sender };
  }
}

interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner?: string;
  uiTokenAmount: { amount: string };
}

/** The terms a delegate is derived from: the same terms (salt included) always give the same delegate. */
function termsOf(t: GrantTerms): string {
  return [
    t.chain,
    t.token.id,
    t.payer,
    t.receiver,
    t.amountPerPeriod,
    t.periodSeconds,
    t.start,
    t.end,
    t.total,
    t.salt.toLowerCase(),
  ].join('|');
}
