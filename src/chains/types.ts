/**
 * The one interface every chain plugs into (BTCPay's payment-method handler, reduced to what Kasse needs).
 *
 * The payments module knows networks and coins only through `NetworkConfig`/`TokenConfig` and talks to a chain only
 * through `ChainAdapter`; a watcher reports what it sees through `DepositSink`, which the payments module
 * implements. EVM, Solana and UTXO chains therefore add no code to the payments module.
 */

export type Mode = 'test' | 'live';

export interface TokenConfig {
  /** `<chain>:<symbol>` in lower case, e.g. `base:usdc`. */
  id: string;
  chain: string;
  /** Display symbol: the part after the colon in upper case. */
  symbol: string;
  name: string;
  decimals: number;
  /** `native` for the chain's own coin, `erc20` for a token contract (other kinds for other chains). */
  kind: 'native' | 'erc20' | 'spl' | 'utxo';
  /** Token contract address where `kind` has one. */
  contract: string | null;
  /** Smallest amount accepted, in smallest units. */
  minAmount: bigint;
  /** Priced at 1.00 USD (`rate_source` `peg`). */
  stable: boolean;
  /** Ids at the price providers (`coingecko` id, Binance USDT pair) for non-stable coins. */
  coingeckoId: string | null;
  binanceSymbol: string | null;
  /** USDC that can be paid by a signature alone, the gas or fee paid by Kasse (EIP-3009 on EVM, a fee-payer relay on Solana). */
  gasless: boolean;
}

export interface ConfirmationTier {
  /** Applies to deposits worth up to this many US cents; null = no upper bound. */
  maxUsdCents: number | null;
  confirmations: number;
}

export interface NetworkConfig {
  /** Network id, e.g. `base`. */
  id: string;
  name: string;
  /** Adapter family that serves it. */
  family: 'evm' | 'solana' | 'utxo' | 'none';
  chainId: number | null;
  rpcUrls: string[];
  explorerTxUrl: string | null;
  /** Confirmation tiers by amount, ascending by maxUsdCents. */
  confirmationTiers: ConfirmationTier[];
  /** Confirmations after which a deposit is `final` and reorgs are no longer watched for. */
  finalityConfirmations: number;
  pollIntervalMs: number;
  paused: boolean;
  tokens: TokenConfig[];
  /** Family `evm` only: the `evm` object of the networks file (src/chains/evm/config.ts, docs/evm.md). */
  evm?: EvmNetworkSettings;
  /** Family `solana` only: the `solana` object of the networks file (src/chains/solana/config.ts, docs/solana.md). */
  solana?: SolanaNetworkSettings;
}

/** Settings only Solana networks have. */
export interface SolanaNetworkSettings {
  /** Where sweeps send SOL and tokens; null = sweeps refuse to run. */
  treasury: string | null;
  /** First slot the watcher reads when it has no cursor yet; null = the confirmed tip at first start. */
  startSlot: bigint | null;
  rpcTimeoutMs: number;
  /** Blocks read per watcher tick at most (the loop runs again at once when behind). */
  maxSlotsPerTick: number;
  /** Seconds between automatic sweeps; 0 = only `kasse solana sweep`. */
  sweepIntervalSeconds: number;
  /** An unused token account Kasse opened is closed by a sweep this long after its coin choice. */
  ataCloseAfterSeconds: number;
}

/** Settings only EVM networks have. */
export interface EvmNetworkSettings {
  /** ForwarderFactory deployed with `kasse evm deploy-factory`; deposit addresses are its CREATE2 clones. */
  forwarderFactory: string | null;
  /** Default treasury for `kasse evm deploy-factory` (the deployed factory holds the one sweeps use). */
  treasury: string | null;
  /** First block the watcher scans when it has no cursor yet; null = the head at first start. */
  startBlock: bigint | null;
  /** Blocks per eth_getLogs range while catching up. */
  blocksPerBatch: number;
  rpcTimeoutMs: number;
  /** Hot-wallet sender (evm/sender.ts): cap on maxFeePerGas in wei (`max_fee_gwei`); absent = the sender's default. */
  maxFeePerGas?: bigint;
  /** Hot-wallet sender: blocks a broadcast transaction may stay unmined before it is replaced (`replace_after_blocks`). */
  replaceAfterBlocks?: number;
}

/** One transfer into a watched address, as a watcher sees it. */
export interface DepositObservation {
  chain: string;
  /** Deposit address as issued (adapters compare case-insensitively where the chain does). */
  address: string;
  token: string;
  txHash: string;
  /** Position inside the transaction (log index, output index); with txHash it identifies the transfer. */
  index: number;
  amount: bigint;
  from: string | null;
  blockNumber: bigint;
  blockHash: string;
  /**
   * When the block was produced, if the chain says. The deposit counts as seen no later than this, so a watcher
   * catching up after downtime does not turn payments made within the coin hold into late ones.
   */
  blockTime?: Date | null;
}

/** Implemented by the payments module; called by chain watchers. */
export interface DepositSink {
  /** Which of `addresses` are deposit addresses Kasse issued on `chain` (any case); returned in canonical form. */
  watchedAddresses(mode: Mode, chain: string, addresses: string[]): Promise<Map<string, string>>;
  /** Records transfers seen in blocks; idempotent on (chain, txHash, index). */
  recordDeposits(mode: Mode, deposits: DepositObservation[]): Promise<void>;
  /** The chain's head moved: recompute confirmations of deposits not yet final. */
  headAdvanced(mode: Mode, chain: string, head: bigint): Promise<void>;
  /** Blocks at or above `fromBlock` left the chain: their deposits become `orphaned`. */
  blocksRemoved(mode: Mode, chain: string, fromBlock: bigint): Promise<void>;
}

export interface RefundRequest {
  /** Id of the outgoing transfer (refund or payout); the sender is idempotent on it. */
  transferId: string;
  token: TokenConfig;
  destination: string;
  amount: bigint;
}

export interface ChainAdapter {
  readonly network: NetworkConfig;
  readonly mode: Mode;
  /** Deterministic deposit address number `index` derived from the operator's master seed. */
  deriveAddress(index: bigint): Promise<string>;
  /**
   * Payment URI (EIP-681, BIP-21, Solana Pay, …) or null when the chain has none. `context` carries what a wallet
   * may show the payer (the payment's description as `message`), for URI formats that have such fields.
   */
  paymentUri(token: TokenConfig, address: string, amount: bigint, context?: { label?: string | null; message?: string | null }): string | null;
  /**
   * A coin choice was issued on this network; called inside the transaction that stores it, so a family can record
   * durable per-address work with it (e.g. opening a token account for the address from the hot wallet).
   */
  addressIssued?(tx: import('../db/index.ts').Tx, issued: { token: TokenConfig; address: string; index: bigint }): Promise<void>;
  /** Whether `address` is a well-formed destination on this chain. */
  isValidAddress(address: string): boolean;
  explorerUrl(txHash: string): string | null;
  /** Starts watching (polling from its stored cursor); resolves stop() when asked. */
  startWatcher?(sink: DepositSink): { stop(): Promise<void> };
  /** Sends refunds and payouts from the hot wallet; absent where no sender runs for the chain. */
  readonly sender?: OutgoingSender;
}

/** How a refund or payout left (or failed to leave) the hot wallet; reported by a sender to the payments module. */
export interface TransferResult {
  transferId: string;
  status: 'sent' | 'failed';
  txHash: string | null;
  error: string | null;
}

/** Implemented by modules that create outgoing transfers (refunds now, payouts later). */
export interface TransferSink {
  transferSettled(mode: Mode, result: TransferResult): Promise<void>;
}

/**
 * A chain's hot-wallet sender. `enqueue` records the transfer durably in the caller's transaction (no network I/O);
 * the sender's own worker signs, broadcasts and confirms it, then reports through `TransferSink`.
 */
export interface OutgoingSender {
  enqueue(tx: import('../db/index.ts').Tx, request: RefundRequest & { mode: Mode; purpose: 'refund' | 'payout' }): Promise<void>;
}
