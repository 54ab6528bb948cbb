/**
 * The EVM family's recurring charges (the capability of src/chains/charges.ts) through the SubscriptionCollector a
 * network names (`evm.subscription_collector`, contracts/SubscriptionCollector.sol, docs/contracts.md), with the
 * hot wallet as the terms' operator: the only address that may charge.
 *
 * The payer grants with two EIP-712 signatures and no gas: the EIP-2612 `Permit` letting the collector spend the
 * grant's total of the network's USDC on top of what it may spend already (a permit SETS the allowance, and the one
 * collector serves every grant of the payer: the value asked is the allowance read at offer time plus the total, so
 * an earlier grant keeps its own), and the `Terms` (payer, token, receiver, operator, amount per period, period,
 * start, end, salt). `checkGrant` verifies both before anything is written — each signature recovers to the payer
 * (a smart wallet, with code, is left to the simulation), the permit's deadline is ahead and its value at least
 * the allowance now plus the total,
 * and an `eth_call` of `grantWithPermit` from the hot wallet goes through — and `recordGrant` records that call as a
 * transfer of the one queue (sender.ts), so it is signed, sent and followed like every transfer of the hot wallet. A
 * signed `Revoke` goes the same way (`revokeWithSignature`). A charge is `charge(terms, amount)` from the hot wallet,
 * recorded in the subscriptions module's transaction; `check` reads beforehand what would refuse it (the
 * collector's `chargeError`, the payer's balance and allowance), so a charge that cannot go through costs no gas and
 * fails with its reason. `chargeError` runs at the latest block, whose time may still be before a due time Kasse's
 * clock has passed: a refusal as already charged while that block is in an earlier period than Kasse's time is
 * "not yet" (the period's slot opens with the next block), never a failure. A charge that landed is found by the token's Transfer log in its receipt.
 */
import {
  maxUint256,
  decodeErrorResult,
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  hashTypedData,
  isHex,
  parseSignature,
  recoverTypedDataAddress,
  size,
  toFunctionSelector,
  type Address,
  type Hex,
} from 'viem';
import type { Clock } from '../../core/clock.ts';
import { ApiError, invalid } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
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
import type { ChainRegistry } from '../registry.ts';
import { EvmAdapter } from './adapter.ts';
import { evmSettings } from './config.ts';
import { erc20Abi, subscriptionCollectorAbi } from './contracts.ts';
import { revertReason } from './gasless.ts';
import { revertData } from './transfer.ts';
import type { EvmSender } from './sender.ts';
import { permitTypedData, revokeTypedData, termsTypedData, type SubscriptionTerms } from './subscription-collector.ts';
import { TokenDomains } from './token-domain.ts';
import { TRANSFER_TOPIC } from './watcher.ts';

/** NOTE: a permit signed for a grant is good for this long; the payer signs again after that. */
export const PERMIT_VALID_S = 60 * 60;
/** A permit whose deadline is closer than this is refused (it could expire before its relay is mined). */
const PERMIT_MARGIN_S = 60;

const selector = (error: string) => toFunctionSelector(`${error}()`);
const REFUSALS: Record<string, ChargeCheck & { ok: false }> = {
  [selector('UnknownGrant')]: { ok: false, reason: 'grant_revoked', message: 'The grant is not active on chain.' },
  [selector('GrantRevoked')]: { ok: false, reason: 'grant_revoked', message: 'The payer revoked the grant on chain.' },
  [selector('NotStarted')]: { ok: false, reason: 'not_started', message: 'The grant has not started on chain yet.' },
  [selector('Ended')]: { ok: false, reason: 'grant_expired', message: 'The grant has ended.' },
  [selector('AlreadyChargedThisPeriod')]: {
    ok: false,
    reason: 'already_charged',
    message: 'The grant was already charged in this period on chain.',
  },
};

export interface EvmChargesDeps {
  clock: Clock;
  log: Logger;
  chains: ChainRegistry;
}

/** The family's record of a grant: the Terms as signed and the collector holding them. */
interface EvmGrantData {
  collector: Address;
  terms: Record<keyof SubscriptionTerms, string>;
}

interface Receipt {
  status: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  logs: Array<{ address: Hex; topics: Hex[]; data: Hex; logIndex: Hex }>;
}

/** The permit a grant asks for: the payer's allowance to the collector kept, plus the grant's total, at most uint256's. */
function permitValue(allowance: bigint, total: bigint): bigint {
  const sum = allowance + total;
  if (sum > maxUint256) return maxUint256; // an "unlimited" allowance stays unlimited
  return sum;
}

export class EvmCharges extends QueuedChargeScheme implements ChargeScheme {
  protected readonly failure = 'the transaction reverted';
  private readonly domains = new TokenDomains();

  constructor(private readonly deps: EvmChargesDeps) {
    super();
  }

  kinds(mode: Mode): ChargeKind[] {
    const kinds: ChargeKind[] = [];
    for (const network of this.deps.chains.networks(mode)) {
      if (network.family !== 'evm' || network.paused || !evmSettings(network).subscriptionCollector) continue;
      const token = network.tokens.find((t) => t.gasless && t.stable && t.kind === 'erc20' && t.contract !== null);
      if (token && this.adapter(mode, network.id)) kinds.push({ chain: network.id, token, enforcement: 'contract' });
    }
    return kinds;
  }

  async receiver(mode: Mode, chain: string, index: bigint): Promise<string> {
    return getAddress(await this.deployed(mode, chain).adapter.deriveAddress(index));
  }

  async offer(t: GrantTerms): Promise<SigningRequest> {
    const { adapter, collector, chainId } = this.deployed(t.mode, t.chain);
    const terms = this.terms(t);
    const token = getAddress(t.token.contract!);
    const domain = await this.domains.of(adapter, t.token);
    const nonce = await this.read(adapter, token, 'nonces', [terms.payer]);
    const deadline = BigInt(Math.floor(this.deps.clock.now().getTime() / 1000) + PERMIT_VALID_S);
    const value = permitValue(await this.read(adapter, token, 'allowance', [terms.payer, collector]), t.total);
    const permit = permitTypedData(
      chainId,
      { address: token, ...domain },
      { owner: terms.payer, spender: collector, value, nonce, deadline },
    );
    return {
      chain_id: `0x${chainId.toString(16)}`,
      terms: json(termsTypedData(chainId, collector, terms)),
      permit: json(permit),
      permit_deadline: deadline.toString(),
      permit_value: value.toString(),
    };
  }

  async checkGrant(t: GrantTerms, signed: Record<string, unknown>): Promise<Checked> {
    const { adapter, collector, chainId, sender } = this.deployed(t.mode, t.chain);
    const terms = this.terms(t);
    const termsSig = hexField(signed, 'terms');
    const permitSig = hexField(signed, 'permit');
    const deadline = uintField(signed, 'permit_deadline');
    const now = BigInt(Math.floor(this.deps.clock.now().getTime() / 1000));
    if (deadline < now + BigInt(PERMIT_MARGIN_S))
      throw invalid('The permit has expired (its deadline has passed); sign again.', 'signatures.permit_deadline');
    const typed = termsTypedData(chainId, collector, terms);
    const key = hashTypedData(typed as never);
    const token = getAddress(t.token.contract!);
    // The permit replaces the payer's allowance to the collector: it must keep what the payer's other grants may
    // spend and add this grant's total. A charge between offer and submit leaves the value above that by what it
    // took (a small over-allowance; each grant is still bounded by its own terms on chain).
    const value = signed.permit_value === undefined ? t.total : bigField(signed, 'permit_value');
    const needed = permitValue(await this.read(adapter, token, 'allowance', [terms.payer, collector]), t.total);
    if (value < needed)
      throw invalid(
        `signatures.permit_value must be at least ${needed}: the allowance the payer gives the collector now plus this grant's total; sign again.`,
        'signatures.permit_value',
      );
    const ecdsa = size(termsSig) === 65 && size(permitSig) === 65;
    if (ecdsa) {
      if ((await recover(typed, termsSig)) !== terms.payer)
        throw invalid('signatures.terms is not the payer’s signature of these terms.', 'signatures.terms');
      const domain = await this.domains.of(adapter, t.token);
      const nonce = await this.read(adapter, token, 'nonces', [terms.payer]);
      const permit = permitTypedData(
        chainId,
        { address: token, ...domain },
        { owner: terms.payer, spender: collector, value, nonce, deadline },
      );
      if ((await recover(permit, permitSig)) !== terms.payer)
        throw invalid(
          'signatures.permit is not the payer’s permit of permit_value to the collector (or it was used).',
          'signatures.permit',
        );
    } else if ((await adapter.rpc().request<Hex>('eth_getCode', [terms.payer, 'latest'])) === '0x') {
      throw invalid('The signatures are not 65-byte signatures of the payer.', 'signatures.terms');
    }
    if (!ecdsa) throw invalid('A permit signature is 65 bytes (v, r, s).', 'signatures.permit');
    const { v, r, s, yParity } = parseSignature(permitSig);
    const data = encodeFunctionData({
      abi: subscriptionCollectorAbi,
      functionName: 'grantWithPermit',
      args: [terms, termsSig, value, deadline, v !== undefined ? Number(v) : yParity + 27, r, s],
    });
    try {
      await adapter.rpc().request('eth_call', [{ from: sender.address, to: collector, data }, 'latest']);
    } catch (err) {
      const reason = collectorRevert(err);
      if (reason === null) throw err;
      throw grantRefusal(reason);
    }
    return { key, data: { collector, terms: strings(terms), call: data } };
  }

  async recordGrant(tx: Tx, t: GrantTerms, checked: Checked, id: string): Promise<void> {
    const { sender, collector } = this.deployed(t.mode, t.chain);
    await sender.record(tx, {
      id,
      purpose: 'grant',
      to: collector,
      value: 0n,
      data: checked.data.call as Hex,
      token: t.token.id,
      destination: getAddress(t.receiver),
      amount: t.total,
    });
  }

  async revokeOffer(grant: StoredGrant): Promise<SigningRequest> {
    const { chainId } = this.deployed(grant.mode, grant.chain);
    const data = grant.data as unknown as EvmGrantData;
    return {
      chain_id: `0x${chainId.toString(16)}`,
      revoke: json(revokeTypedData(chainId, data.collector, grant.key as Hex)),
    };
  }

  async checkRevoke(grant: StoredGrant, signed: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { adapter, chainId, sender } = this.deployed(grant.mode, grant.chain);
    const data = grant.data as unknown as EvmGrantData;
    const signature = hexField(signed, 'revoke');
    const terms = termsOf(data);
    if (size(signature) === 65) {
      if ((await recover(revokeTypedData(chainId, data.collector, grant.key as Hex), signature)) !== terms.payer)
        throw invalid('signatures.revoke is not the payer’s revoke of this grant.', 'signatures.revoke');
    }
    const call = encodeFunctionData({
      abi: subscriptionCollectorAbi,
      functionName: 'revokeWithSignature',
      args: [terms, signature],
    });
    try {
      await adapter.rpc().request('eth_call', [{ from: sender.address, to: data.collector, data: call }, 'latest']);
    } catch (err) {
      const reason = collectorRevert(err);
      if (reason === null) throw err;
      // Revoked already (on chain, directly): nothing to relay.
      if (/GrantRevoked/.test(reason)) return { call: null };
      throw invalid(`The revoke would fail on chain: ${reason}`, 'signatures.revoke');
    }
    return { call };
  }

  async recordRevoke(tx: Tx, grant: StoredGrant, checked: Record<string, unknown>, id: string): Promise<void> {
    if (checked.call === null) return;
    await this.recordCollectorCall(tx, grant, id, 'revoke', checked.call as Hex, 0n);
  }

  /** Records the relay of `call` to the grant's collector, moving `amount` of its token to the receiver. */
  private async recordCollectorCall(
    tx: Tx,
    grant: StoredGrant,
    id: string,
    purpose: 'revoke' | 'charge',
    call: Hex,
    amount: bigint,
  ): Promise<void> {
    const { sender } = this.deployed(grant.mode, grant.chain);
    await sender.record(tx, {
      id,
      purpose,
      to: (grant.data as unknown as EvmGrantData).collector,
      value: 0n,
      data: call,
      token: grant.token.id,
      destination: getAddress(grant.receiver),
      amount,
    });
  }

  async check(grant: StoredGrant, amount: bigint, at: Date): Promise<ChargeCheck> {
    const { adapter, sender } = this.deployed(grant.mode, grant.chain);
    const data = grant.data as unknown as EvmGrantData;
    const terms = termsOf(data);
    const err = await this.read(adapter, data.collector, 'chargeError', [terms, amount, sender.address]);
    if (err !== '0x00000000') {
      const refusal = REFUSALS[err];
      if (!refusal)
        throw new Error(
          `the collector refuses charge ${amount} of grant ${grant.key} with ${err}: the terms are wrong`,
        );
      if (refusal.reason === 'already_charged') {
        // Read at the latest block: if its time is in an earlier period than `at`, the period due has not begun on
        // chain yet — it opens with the next block.
        const block = await adapter.rpc().request<{ timestamp: Hex }>('eth_getBlockByNumber', ['latest', false]);
        const slot = (s: number) => Math.floor((s - terms.start) / terms.period);
        if (slot(Number(BigInt(block.timestamp))) < slot(Math.floor(at.getTime() / 1000)))
          return {
            ok: false,
            reason: 'not_started',
            message: 'The latest block is still in the period before; the period due opens with the next block.',
          };
      }
      return refusal;
    }
    const held = await this.read(adapter, terms.token, 'balanceOf', [terms.payer]);
    if (held < amount)
      return { ok: false, reason: 'insufficient_funds', message: `The payer holds ${held}, less than ${amount}.` };
    const allowed = await this.read(adapter, terms.token, 'allowance', [terms.payer, data.collector]);
    if (allowed < amount)
      return {
        ok: false,
        reason: 'allowance_exhausted',
        message: `The payer's allowance to the collector is ${allowed}, less than ${amount}.`,
      };
    return { ok: true };
  }

  async recordCharge(tx: Tx, grant: StoredGrant, id: string, amount: bigint): Promise<void> {
    const data = grant.data as unknown as EvmGrantData;
    const call = encodeFunctionData({
      abi: subscriptionCollectorAbi,
      functionName: 'charge',
      args: [termsOf(data), amount],
    });
    await this.recordCollectorCall(tx, grant, id, 'charge', call, amount);
  }

  async chargeState(grant: StoredGrant, id: string, amount: bigint): Promise<ChargeState> {
    const state = await this.relayState(grant.mode, grant.chain, id);
    if (state.status !== 'done') return state;
    const { adapter } = this.deployed(grant.mode, grant.chain);
    const receipt = await adapter.rpc().request<Receipt | null>('eth_getTransactionReceipt', [state.transaction]);
    if (!receipt) return { status: 'pending', transaction: state.transaction };
    const token = getAddress(grant.token.contract!).toLowerCase();
    const log = receipt.logs.find(
      (l) =>
        l.address.toLowerCase() === token &&
        l.topics[0] === TRANSFER_TOPIC &&
        topicAddress(l.topics[1]) === grant.payer.toLowerCase() &&
        topicAddress(l.topics[2]) === grant.receiver.toLowerCase() &&
        BigInt(l.data) === amount,
    );
    if (!log)
      return { status: 'failed', message: 'The transaction moved no such transfer.', transaction: state.transaction };
    return {
      status: 'succeeded',
      transaction: state.transaction,
      blockNumber: BigInt(receipt.blockNumber),
      blockHash: receipt.blockHash,
      index: Number(BigInt(log.logIndex)),
      from: getAddress(grant.payer),
    };
  }

  /** The Terms struct of the module's terms, with the hot wallet as operator. */
  private terms(t: GrantTerms): SubscriptionTerms {
    if (!isHex(t.salt) || size(t.salt) !== 32) throw invalid('terms.salt must be 32 bytes, 0x-hex.', 'terms.salt');
    return {
      payer: getAddress(t.payer),
      token: getAddress(t.token.contract!),
      receiver: getAddress(t.receiver),
      operator: this.deployed(t.mode, t.chain).sender.address,
      amountPerPeriod: t.amountPerPeriod,
      period: t.periodSeconds,
      start: t.start,
      end: t.end,
      salt: t.salt as Hex,
    };
  }

  private adapter(mode: Mode, chain: string): EvmAdapter | null {
    if (!this.deps.chains.hasAdapter(mode, chain)) return null;
    const adapter = this.deps.chains.adapter(mode, chain);
    return adapter instanceof EvmAdapter && adapter.sender ? adapter : null;
  }

  protected sender(mode: Mode, chain: string): EvmSender {
    return this.deployed(mode, chain).sender;
  }

  /** The network's adapter, hot-wallet sender and collector; throws for a network that takes no grants. */
  private deployed(mode: Mode, chain: string) {
    const adapter = this.adapter(mode, chain);
    const collector = adapter ? evmSettings(adapter.network).subscriptionCollector : undefined;
    if (!adapter || !collector || adapter.network.chainId === null)
      throw new ApiError('invalid_state', `${chain} takes no subscription grants in ${mode} mode.`, 'network');
    return {
      adapter,
      sender: adapter.sender as EvmSender,
      collector: getAddress(collector),
      chainId: adapter.network.chainId,
    };
  }

  private async read<F extends 'nonces' | 'balanceOf' | 'allowance' | 'chargeError'>(
    adapter: EvmAdapter,
    to: Address,
    functionName: F,
    args: readonly unknown[],
  ) {
    const abi = functionName === 'chargeError' ? subscriptionCollectorAbi : erc20Abi;
    const data = encodeFunctionData({ abi, functionName, args } as never);
    const out = await adapter.rpc().request<Hex>('eth_call', [{ to, data }, 'latest']);
    return decodeFunctionResult({ abi, functionName, data: out } as never) as F extends 'chargeError' ? Hex : bigint;
  }
}

/** Typed data as JSON a wallet's `eth_signTypedData_v4` takes (numbers as decimal strings). */
function json(typed: { domain: object; types: object; primaryType: string; message: object }) {
  const types = {
    EIP712Domain: [
      { name: 'name', type: 'string' },
      { name: 'version', type: 'string' },
      { name: 'chainId', type: 'uint256' },
      { name: 'verifyingContract', type: 'address' },
    ],
    ...typed.types,
  };
  return JSON.parse(
    JSON.stringify({ ...typed, types }, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
  ) as SigningRequest;
}

function strings(t: SubscriptionTerms): Record<keyof SubscriptionTerms, string> {
  return {
    payer: t.payer,
    token: t.token,
    receiver: t.receiver,
    operator: t.operator,
    amountPerPeriod: t.amountPerPeriod.toString(),
    period: String(t.period),
    start: String(t.start),
    end: String(t.end),
    salt: t.salt,
  };
}

function termsOf(data: EvmGrantData): SubscriptionTerms {
  const t = data.terms;
  return {
    payer: getAddress(t.payer),
    token: getAddress(t.token),
    receiver: getAddress(t.receiver),
    operator: getAddress(t.operator),
    amountPerPeriod: BigInt(t.amountPerPeriod),
    period: Number(t.period),
    start: Number(t.start),
    end: Number(t.end),
    salt: t.salt as Hex,
  };
}

async function recover(typed: object, signature: Hex): Promise<Address | null> {
  return recoverTypedDataAddress({ ...typed, signature } as never).catch(() => null);
}

function hexField(signed: Record<string, unknown>, name: string): Hex {
  const v = signed[name];
  if (typeof v !== 'string' || !/^0x([0-9a-fA-F]{2}){65,2048}$/.test(v))
    throw invalid(`signatures.${name} must be a signature, 0x-hex.`, `signatures.${name}`);
  return v as Hex;
}

function bigField(signed: Record<string, unknown>, name: string): bigint {
  const v = signed[name];
  if (typeof v !== 'string' || !/^\d{1,78}$/.test(v) || BigInt(v) >= 2n ** 256n)
    throw invalid(`signatures.${name} must be a whole number of the token's smallest unit.`, `signatures.${name}`);
  return BigInt(v);
}

function uintField(signed: Record<string, unknown>, name: string): bigint {
  const v = signed[name];
  if ((typeof v !== 'string' || !/^\d{1,20}$/.test(v)) && !(typeof v === 'number' && Number.isSafeInteger(v) && v >= 0))
    throw invalid(`signatures.${name} must be Unix seconds.`, `signatures.${name}`);
  return BigInt(v);
}

/** The collector's error a reverted call names (its custom errors first), or null when it did not revert. */
function collectorRevert(err: unknown): string | null {
  const data = revertData(err);
  if (data && data.length >= 10) {
    try {
      return decodeErrorResult({ abi: subscriptionCollectorAbi, data }).errorName;
    } catch {
      // not one of the collector's own errors (the token's, say)
    }
  }
  return revertReason(err);
}

/** What a reverted `grantWithPermit` simulation means for the request. */
function grantRefusal(reason: string): ApiError {
  const text = `The grant would fail on chain: ${reason}`;
  if (/PermitFailed|ERC2612|permit/i.test(reason)) return invalid(text, 'signatures.permit');
  if (/InvalidSignature/.test(reason)) return invalid(text, 'signatures.terms');
  if (/Ended|InvalidTerms/.test(reason)) return invalid(text, 'terms.end');
  return new ApiError('invalid_state', text, null);
}

const topicAddress = (topic: Hex | undefined): string | null => (topic ? `0x${topic.slice(26)}`.toLowerCase() : null);
