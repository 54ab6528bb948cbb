/**
 * The EVM family's x402 `exact` scheme (the capability of src/chains/x402.ts): EIP-3009 `transferWithAuthorization`
 * of the network's USDC, signed in USDC's own EIP-712 domain, relayed by the hot wallet (it pays the gas) through
 * the one transfer queue (sender.ts), so a settlement is recorded before it is signed and carried on by the sender
 * loop after a crash.
 *
 * `verify` checks, before anything is written: the payload's shape, the EIP-712 domain the requirements name, the
 * recipient (the merchant's x402 address) and the exact value, the validity window against Kasse's clock (valid
 * before at least 6 seconds ahead, as the official facilitator asks), the signature (recovered against the token's
 * DOMAIN_SEPARATOR read from the chain; on a simulator network against its domain in the networks file), and on a
 * network with a node: the nonce unused on chain, the payer's balance and an `eth_call` of the exact transaction
 * from the hot wallet. Refusals carry the official `invalid_exact_evm_*` codes. `settle` records the transfer under
 * the module's settlement id (idempotent), pushes it and follows it to the network's confirmations; on a simulator
 * network it answers a simulated hash derived from the id. Rules: docs/x402.md.
 */
import { createHash } from 'node:crypto';
import {
  decodeFunctionResult,
  domainSeparator,
  encodeFunctionData,
  getAddress,
  isAddress,
  isHex,
  parseAbi,
  recoverAddress,
  size,
  type Address,
  type Hex,
} from 'viem';
import { pollPause, type Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import { withTx, type Db } from '../../db/index.ts';
import type { ChainRegistry } from '../registry.ts';
import { SIMULATED_TX_PREFIX, type NetworkConfig, type TokenConfig } from '../types.ts';
import type { X402Kind, X402Request, X402Scheme, X402Settlement, X402Verdict } from '../x402.ts';
import { EvmAdapter } from './adapter.ts';
import { evmSettings } from './config.ts';
import { erc20Abi } from './contracts.ts';
import { authorizationDigest, eip3009Abi, encodeVrs, revertReason, type Authorization } from './gasless.ts';
import type { EvmSender } from './sender.ts';
import { TRANSFER_TOPIC } from './watcher.ts';

/** The official facilitator's refusal codes (`@x402/evm`'s exact facilitator). */
export const X402_EVM_ERRORS = {
  payload: 'unsupported_payload_type',
  domain: 'invalid_exact_evm_missing_eip712_domain',
  recipient: 'invalid_exact_evm_recipient_mismatch',
  signature: 'invalid_exact_evm_signature',
  validBefore: 'invalid_exact_evm_payload_authorization_valid_before',
  validAfter: 'invalid_exact_evm_payload_authorization_valid_after',
  value: 'invalid_exact_evm_authorization_value',
  nonce: 'invalid_exact_evm_nonce_already_used',
  balance: 'invalid_exact_evm_insufficient_balance',
  simulation: 'invalid_exact_evm_transaction_simulation_failed',
  failed: 'invalid_exact_evm_transaction_failed',
  event: 'invalid_exact_evm_transfer_event_mismatch',
} as const;

/** Recovered signers of recent authorizations (verify, then settle of the same payload, recovers once). */
const RECOVERED_MAX = 4096;
/** The official facilitator refuses an authorization that expires within this many seconds. */
const MIN_VALIDITY_SECONDS = 6n;
/** How often `settle` looks at its transfer on the node while following it (real time; its deadline is the clock's). */
const FOLLOW_EVERY_MS = 200;

const domainAbi = parseAbi([
  'function eip712Domain() view returns (bytes1 fields, string name, string version, uint256 chainId, address verifyingContract, bytes32 salt, uint256[] extensions)',
  'function name() view returns (string)',
]);

export interface EvmX402Deps {
  db: Db;
  clock: Clock;
  log: Logger;
  chains: ChainRegistry;
}

export interface ReceiptLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  logIndex: Hex;
}
interface Receipt {
  status: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  logs: ReceiptLog[];
}

export class EvmX402 implements X402Scheme {
  private readonly domains = new Map<string, { name: string; version: string }>();
  private readonly recovered = new Map<string, Address | null>();
  private readonly separators = new Map<string, Hex>();

  constructor(protected readonly deps: EvmX402Deps) {}

  async kinds(mode: Mode): Promise<X402Kind[]> {
    const kinds: X402Kind[] = [];
    for (const network of this.deps.chains.networks(mode)) {
      if (network.family !== 'evm' || network.chainId === null || network.paused) continue;
      const token = network.tokens.find(isUsdc);
      if (!token) continue;
      const adapter = this.adapter(mode, network.id);
      if (!adapter && mode === 'live') continue;
      const domain = adapter ? await this.domain(adapter, token).catch(() => null) : configuredDomain(network, token);
      if (!domain) continue;
      kinds.push({
        network: `eip155:${network.chainId}`,
        chain: network.id,
        token,
        extra: { ...domain, asset: getAddress(token.contract!), decimals: token.decimals },
        simulated: !adapter,
        codes: { recipient: X402_EVM_ERRORS.recipient, replay: X402_EVM_ERRORS.nonce },
      });
    }
    return kinds;
  }

  async payTo(mode: Mode, chain: string, index: bigint): Promise<string> {
    return getAddress(await this.deps.chains.adapter(mode, chain).deriveAddress(index));
  }

  derivation(mode: Mode, chain: string): string {
    const adapter = this.deps.chains.hasAdapter(mode, chain) ? this.deps.chains.adapter(mode, chain) : null;
    return adapter instanceof EvmAdapter ? `factory:${adapter.factory.toLowerCase()}` : 'simulator';
  }

  key(r: X402Request): string | null {
    const a = authorizationOf(r.payload);
    return a ? authorizationKey(getAddress(r.kind.token.contract!), a) : null;
  }

  async verify(r: X402Request): Promise<X402Verdict> {
    const a = authorizationOf(r.payload);
    if (!a) return refuse(X402_EVM_ERRORS.payload, 'The payload is not an EIP-3009 authorization with its signature.');
    const payer = a.from;
    const no = (reason: string, message: string): X402Verdict => ({ valid: false, reason, message, payer });
    const name = r.requirements.extra?.name;
    const version = r.requirements.extra?.version;
    if (typeof name !== 'string' || typeof version !== 'string')
      return no(X402_EVM_ERRORS.domain, 'The requirements name no EIP-712 domain (extra.name and extra.version).');
    if (a.to !== getAddress(r.payTo))
      return no(X402_EVM_ERRORS.recipient, `The authorization pays ${a.to}, not the merchant's ${r.payTo}.`);
    if (a.value !== r.amount)
      return no(X402_EVM_ERRORS.value, `The authorization moves ${a.value}, not the ${r.amount} required.`);
    const now = BigInt(Math.floor(this.deps.clock.now().getTime() / 1000));
    if (a.validBefore < now + MIN_VALIDITY_SECONDS)
      return no(X402_EVM_ERRORS.validBefore, 'The authorization has expired (validBefore).');
    if (a.validAfter > now) return no(X402_EVM_ERRORS.validAfter, 'The authorization is not valid yet (validAfter).');

    const contract = getAddress(r.kind.token.contract!);
    const network = this.deps.chains.network(r.mode, r.kind.chain)!;
    const adapter = this.adapter(r.mode, r.kind.chain);
    const separator = adapter
      ? await this.call(adapter, contract, encodeFunctionData({ abi: eip3009Abi, functionName: 'DOMAIN_SEPARATOR' }))
      : this.simulatorSeparator(network, r.kind.token);
    const signer = size(a.signature) === 65 ? await this.signer(authorizationDigest(separator, a), a.signature) : null;
    if (signer !== a.from && !adapter)
      return no(X402_EVM_ERRORS.signature, 'The signature is not a TransferWithAuthorization signed by from.');
    if (!adapter) return { valid: true, payer, key: authorizationKey(contract, a) };

    const rpc = adapter.rpc();
    if (signer !== a.from) {
      // Only a smart wallet (code at `from`, ERC-1271) may sign otherwise; the simulation below decides for it.
      const code = await rpc.request<Hex>('eth_getCode', [a.from, 'latest']);
      if (!code || code === '0x')
        return no(X402_EVM_ERRORS.signature, 'The signature is not a TransferWithAuthorization signed by from.');
    }
    const used = decodeFunctionResult({
      abi: erc20Abi,
      functionName: 'authorizationState',
      data: await this.call(
        adapter,
        contract,
        encodeFunctionData({ abi: erc20Abi, functionName: 'authorizationState', args: [a.from, a.nonce] }),
      ),
    });
    if (used) return no(X402_EVM_ERRORS.nonce, 'The nonce was already used or cancelled on chain.');
    const balance = decodeFunctionResult({
      abi: erc20Abi,
      functionName: 'balanceOf',
      data: await this.call(
        adapter,
        contract,
        encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [a.from] }),
      ),
    });
    if (balance < a.value)
      return no(X402_EVM_ERRORS.balance, `The payer holds ${balance}, less than the ${a.value} authorized.`);
    const sender = adapter.sender as EvmSender | undefined;
    if (!sender) return no(X402_EVM_ERRORS.simulation, 'No hot wallet relays on this network.');
    try {
      await rpc.request('eth_call', [{ from: sender.address, to: contract, data: callData(a) }, 'latest']);
    } catch (err) {
      const reason = revertReason(err);
      if (reason === null) throw err;
      return no(X402_EVM_ERRORS.simulation, `The transfer would fail on chain: ${reason}`);
    }
    return { valid: true, payer, key: authorizationKey(contract, a) };
  }

  async settle(r: X402Request, id: string, deadline: Date): Promise<X402Settlement> {
    const adapter = this.adapter(r.mode, r.kind.chain);
    if (!adapter) return simulatedSettlement(id);
    const sender = adapter.sender as EvmSender;
    const relay = this.relay(r);
    await withTx(this.deps.db, (tx) =>
      sender.record(tx, { id, purpose: 'x402', value: 0n, token: r.kind.token.id, ...relay }),
    );
    try {
      await sender.push(id);
    } catch (err) {
      // Recorded: the sender loop carries it on.
      this.deps.log.warn({ err: errText(err), transferId: id }, 'x402 settlement could not be pushed now');
    }
    for (;;) {
      const now = this.deps.clock.now();
      const state = await this.settlement(r.mode, r.kind.chain, id);
      if (state.status !== 'pending' || now >= deadline) return state;
      const row = await sender.get(id);
      if (row?.status === 'broadcast' || row?.status === 'signed') await sender.step(id).catch(() => 'wait');
      await pollPause(this.deps.clock, FOLLOW_EVERY_MS, deadline);
    }
  }

  async settlement(mode: Mode, chain: string, id: string): Promise<X402Settlement> {
    const adapter = this.adapter(mode, chain);
    if (!adapter) return simulatedSettlement(id);
    const row = await (adapter.sender as EvmSender).get(id);
    if (!row || row.status === 'pending') return { status: 'pending', transaction: null };
    if (row.status === 'signed' || row.status === 'broadcast') return { status: 'pending', transaction: row.tx_hash };
    if (row.status === 'failed')
      return {
        status: 'failed',
        reason: X402_EVM_ERRORS.failed,
        message: `The transfer failed: ${row.error ?? 'reverted'}`,
        transaction: row.tx_hash,
      };
    const receipt = await adapter.rpc().request<Receipt | null>('eth_getTransactionReceipt', [row.tx_hash]);
    if (!receipt) return { status: 'pending', transaction: row.tx_hash };
    const log = receipt.logs.find((l) => this.landed(l, row));
    if (!log)
      return {
        status: 'failed',
        reason: X402_EVM_ERRORS.event,
        message: 'The transaction moved no such transfer.',
        transaction: row.tx_hash,
      };
    return {
      status: 'settled',
      transaction: row.tx_hash!,
      blockNumber: BigInt(receipt.blockNumber),
      blockHash: receipt.blockHash,
      index: Number(BigInt(log.logIndex)),
      simulated: false,
    };
  }

  /** The hot wallet's call that settles the request: the token's `transferWithAuthorization`. */
  protected relay(r: X402Request): { to: Address; data: Hex; destination: string; amount: bigint } {
    const a = authorizationOf(r.payload)!;
    return { to: getAddress(r.kind.token.contract!), data: callData(a), destination: a.to, amount: a.value };
  }

  /** The log of the settling receipt that shows the relay did what it was recorded for: the token's Transfer. */
  protected landed(l: ReceiptLog, row: { to_address: string; destination: string | null; amount: string }): boolean {
    return (
      l.address.toLowerCase() === row.to_address.toLowerCase() &&
      l.topics[0] === TRANSFER_TOPIC &&
      topicAddress(l.topics[2]) === row.destination?.toLowerCase() &&
      BigInt(l.data) === BigInt(row.amount)
    );
  }

  /** The token's domain separator on a network without a node: of its configured domain (the chain's own). */
  private simulatorSeparator(network: NetworkConfig, token: TokenConfig): Hex {
    const key = `${network.id}:${token.id}`;
    let separator = this.separators.get(key);
    if (!separator) {
      const domain = {
        ...configuredDomain(network, token),
        chainId: network.chainId!,
        verifyingContract: getAddress(token.contract!),
      };
      separator = domainSeparator({ domain });
      this.separators.set(key, separator);
    }
    return separator;
  }

  /** Who signed `hash` (an ECDSA signature), remembered for the next request about the same authorization. */
  protected async signer(hash: Hex, signature: Hex): Promise<Address | null> {
    const key = hash + signature.slice(2);
    if (this.recovered.has(key)) return this.recovered.get(key)!;
    const signer = await recoverAddress({ hash, signature }).catch(() => null);
    if (this.recovered.size >= RECOVERED_MAX) this.recovered.clear();
    this.recovered.set(key, signer);
    return signer;
  }

  /** The network's adapter with a hot-wallet sender, or null on a simulator network. */
  protected adapter(mode: Mode, chain: string): EvmAdapter | null {
    if (!this.deps.chains.hasAdapter(mode, chain)) return null;
    const adapter = this.deps.chains.adapter(mode, chain);
    return adapter instanceof EvmAdapter && adapter.sender ? adapter : null;
  }

  protected async call(adapter: EvmAdapter, to: Address, data: Hex): Promise<Hex> {
    return adapter.rpc().request<Hex>('eth_call', [{ to, data }, 'latest']);
  }

  /** The token's EIP-712 name and version (EIP-5267 `eip712Domain`, else `name` and version "2"), read once. */
  protected async domain(adapter: EvmAdapter, token: TokenConfig): Promise<{ name: string; version: string }> {
    const key = `${adapter.mode}:${token.id}`;
    const known = this.domains.get(key);
    if (known) return known;
    const contract = getAddress(token.contract!);
    let domain: { name: string; version: string };
    try {
      const out = decodeFunctionResult({
        abi: domainAbi,
        functionName: 'eip712Domain',
        data: await this.call(adapter, contract, encodeFunctionData({ abi: domainAbi, functionName: 'eip712Domain' })),
      });
      domain = { name: out[1], version: out[2] };
    } catch {
      const name = decodeFunctionResult({
        abi: domainAbi,
        functionName: 'name',
        data: await this.call(adapter, contract, encodeFunctionData({ abi: domainAbi, functionName: 'name' })),
      });
      domain = { name, version: '2' };
    }
    this.domains.set(key, domain);
    return domain;
  }
}

/**
 * A token's EIP-712 domain on a network without a node: the networks file's (`evm.eip712_domains`), else its name
 * with version "2" (FiatToken's).
 */
function configuredDomain(network: NetworkConfig, token: TokenConfig): { name: string; version: string } {
  return evmSettings(network).eip712Domains[token.id.split(':')[1]!] ?? { name: token.name, version: '2' };
}

/** The network's USDC: a gasless ERC-20 (EIP-3009) with a contract. */
export const isUsdc = (t: TokenConfig): boolean => t.gasless && t.kind === 'erc20' && t.contract !== null;

export function authorizationKey(contract: Address, a: Authorization): string {
  return `${contract.toLowerCase()}:${a.from.toLowerCase()}:${a.nonce.toLowerCase()}`;
}

const refuse = (reason: string, message: string): X402Verdict => ({ valid: false, reason, message });

/** `{signature, authorization: {from, to, value, validAfter, validBefore, nonce}}`, parsed; null when malformed. */
export function authorizationOf(payload: Record<string, unknown>): (Authorization & { signature: Hex }) | null {
  const auth = payload.authorization as Record<string, unknown> | undefined;
  const signature = payload.signature;
  if (!auth || typeof auth !== 'object' || typeof signature !== 'string' || !isHex(signature)) return null;
  const { from, to, value, validAfter, validBefore, nonce } = auth;
  const uint = (v: unknown) => (typeof v === 'string' && /^[0-9]{1,78}$/.test(v) ? BigInt(v) : null);
  if (typeof from !== 'string' || !isAddress(from, { strict: false })) return null;
  if (typeof to !== 'string' || !isAddress(to, { strict: false })) return null;
  if (typeof nonce !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(nonce)) return null;
  const [v, after, before] = [uint(value), uint(validAfter), uint(validBefore)];
  if (v === null || after === null || before === null) return null;
  return {
    from: getAddress(from),
    to: getAddress(to),
    value: v,
    validAfter: after,
    validBefore: before,
    nonce: nonce.toLowerCase() as Hex,
    signature,
  };
}

function callData(a: Authorization & { signature: Hex }): Hex {
  return size(a.signature) === 65
    ? encodeVrs(a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, a.signature)
    : encodeFunctionData({
        abi: erc20Abi,
        functionName: 'transferWithAuthorization',
        args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, a.signature],
      });
}

/** A simulator network settles at once, with a hash derived from the settlement id (the same on every call). */
function simulatedSettlement(id: string): X402Settlement {
  const hash = SIMULATED_TX_PREFIX + createHash('sha256').update(`x402|${id}`).digest('hex').slice(0, 61);
  return { status: 'settled', transaction: hash, blockNumber: null, blockHash: null, index: 0, simulated: true };
}

const topicAddress = (topic: Hex | undefined): string | null => (topic ? `0x${topic.slice(26)}`.toLowerCase() : null);
const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
