/**
 * The chain family plugin contract (BTCPay's payment-method handler, reduced to what Kasse needs).
 *
 * A family is one folder under `src/chains/<family>/` whose `index.ts` default-exports one `ChainFamily`; Kasse
 * finds the folders itself (families.ts), so adding a family edits nothing outside its folder. The family object
 * says, offline, how its networks are configured and what its addresses look like (enough for the test-mode
 * simulator to serve a network with no adapter running), and, when Kasse opens, `load` registers what runs: an
 * adapter per configured network, the workers role's loops (watchers, senders), payer-facing checkout extensions
 * (wallet buttons with their script, relay endpoints); `commands` adds operator commands to the `kasse` CLI.
 *
 * A family reaches payment data only through the ports it is given (`FamilyContext`, ports.ts): it reports deposits
 * to the DepositSink, reads coin choices and funded addresses through the PaymentsPort, and its senders receive
 * transfers from the transfers module (`OutgoingSender.enqueue`) and report them to the TransferSink. It imports
 * nothing from src/modules or src/web. How to write one: docs/ARCHITECTURE.md ("How to add a chain family").
 */
import type { Migration } from 'kysely';
import type { TSchema } from 'typebox';
import type { Clock } from '../core/clock.ts';
import type { Flags } from '../core/flags.ts';
import type { Logger } from '../core/log.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Mode } from '../core/mode.ts';
import type { Locale } from '../core/i18n/index.ts';
import type { Secrets } from '../core/secrets.ts';
import type { Db, Tx } from '../db/index.ts';
import type { NetworkHealth } from './health.ts';
import type { DepositSink, HoldsPort, HoldTerms, OutgoingSender, PaymentsPort, TransferSink } from './ports.ts';
import type { ChainRegistry } from './registry.ts';
import type { NetworkConfig, TokenConfig } from './types.ts';
import type { X402Scheme } from './x402.ts';

export type * from './x402.ts';

/** What a family's addresses look like; used for every network of the family, with or without a running adapter. */
export interface AddressFormat {
  /**
   * Whether `address` is a well-formed destination on the family's chains; on `network` when it is given (families
   * whose address encoding differs between networks check it).
   */
  isValidAddress(address: string, network?: NetworkConfig): boolean;
  /**
   * A keyless address in the family's format made from 32 pseudo-random bytes: what the test-mode simulator issues
   * on a network that has no adapter running (nobody holds its key), encoded for `network` when given.
   */
  addressFromBytes(bytes: Uint8Array, network?: NetworkConfig): string;
  /** Payment URI (EIP-681, Solana Pay, BIP-21, …) asking for `amount` of `token` at `address`, or null. */
  paymentUri(
    network: NetworkConfig,
    token: TokenConfig,
    address: string,
    amount: bigint,
    context?: PaymentUriContext,
  ): string | null;
}

/** What a wallet may show the payer beside a payment URI, for URI formats that carry it (Solana Pay's label, message). */
export interface PaymentUriContext {
  /** Who is paid: the merchant's display name. */
  label?: string | null;
  /** What for: the payment's description. */
  message?: string | null;
}

/** A hot-wallet key format a family accepts. */
export interface HotWalletKeyFormat {
  /** What a valid key looks like, completing "KASSE_HOT_WALLET_KEY must be …". */
  description: string;
  isValid(key: string): boolean;
}

/** A coin choice just issued on an adapter's network (`ChainAdapter.addressIssued`). */
export interface IssuedAddress {
  token: TokenConfig;
  address: string;
  /** Derivation index the address was made with. */
  index: bigint;
}

/** How the family's networks are read from the networks files (src/chains/networks.ts). */
export interface NetworkRules {
  /** Networks of the family must have a `chain_id`. */
  requiresChainId?: boolean;
  /** Token contracts: the canonical spelling of a valid one, or null; `name` completes "… is not <name>". */
  contract?: { canonical(value: string): string | null; name: string };
  /**
   * Parses the network's settings object named after the family (`"<family>": { … }`; undefined when absent) into
   * `NetworkConfig.settings`. Throws ConfigError naming `at` for a bad value.
   */
  settings?(raw: unknown, at: string): unknown;
}

/** The ports and services Kasse gives a family when it loads it. */
export interface FamilyContext {
  db: Db;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  /** The master seed and hot-wallet key; never logged. */
  secrets: Secrets;
  /** Configured networks and coins of both modes, and the adapters registered so far. */
  chains: ChainRegistry;
  /** Whether each network's nodes answer: watchers report every pass to it; operator commands read it. */
  health: NetworkHealth;
  /** Where watchers report deposits. */
  deposits: DepositSink;
  /** Read-only payment data. */
  payments: PaymentsPort;
  /** Where senders report how transfers ended. */
  transfers: TransferSink;
  /** Where a checkout hands over a hold its payer signed (hold and capture). */
  holds: HoldsPort;
}

/** One network in one mode behind the family. */
export interface ChainAdapter {
  readonly network: NetworkConfig;
  readonly mode: Mode;
  /** Deterministic deposit address number `index` derived from the operator's master seed. */
  deriveAddress(index: bigint): Promise<string>;
  /** Payment URI (EIP-681, BIP-21, Solana Pay, …) or null when the chain has none. */
  paymentUri(token: TokenConfig, address: string, amount: bigint, context?: PaymentUriContext): string | null;
  /**
   * Optional: a coin choice was issued on this network. Called inside the transaction that stores it, so the family
   * can record durable work for the address in its own tables (e.g. opening a token account for it from the hot
   * wallet, for its sender to do); no network I/O here.
   */
  addressIssued?(tx: Tx, issued: IssuedAddress): Promise<void>;
  /** Whether `address` is a well-formed destination on this chain. */
  isValidAddress(address: string): boolean;
  explorerUrl(txHash: string): string | null;
  /** Sends refunds and payouts from the hot wallet; absent where no sender runs for the network. */
  readonly sender?: OutgoingSender;
  /** Hold and capture through an escrow on this network (docs/capture.md); absent where none is configured. */
  readonly holds?: HoldAdapter;
}

/**
 * Hold and capture on a network: an escrow Kasse operates (`HoldOperation`s leave through the network's sender). The
 * terms of a hold are the family's own (for EVM, the escrow's `PaymentInfo`); modules keep them as they got them.
 */
export interface HoldAdapter {
  /** Whether `token` can be held here: the escrow is configured and the payer can sign for it without gas. */
  canHold(token: TokenConfig): boolean;
  /** Where captured money is paid: an address of Kasse's on the network (it is the held coin choice's `address`). */
  readonly receiver: string;
  /** What the escrow holds under `terms` now, in the token's smallest unit (RPC; never inside a transaction). */
  held(terms: unknown): Promise<{ capturable: bigint; refundable: bigint }>;
}

/** Something the workers role runs until it stops: a watcher, a sender loop. */
export interface FamilyWorker {
  start(): unknown;
  /** Resolves once the worker's current pass has finished. */
  stop(): Promise<void>;
}

/** A coin choice the checkout shows, for a family to offer wallet buttons for. */
export interface WalletChoice {
  /** The page's language: button labels come from its catalog (src/core/i18n). */
  locale: Locale;
  mode: Mode;
  network: NetworkConfig;
  token: TokenConfig;
  paymentId: string;
  attemptId: string;
  address: string;
  /** What to send now (the pay amount, or what is missing of it), smallest units. */
  amount: bigint;
  /** End of the price hold. */
  expiresAt: Date;
  /** A manual payment's hold terms: the payer authorizes a hold instead of sending (docs/capture.md); else null. */
  hold: HoldTerms | null;
}

/**
 * A button the checkout renders (hidden, as a `<button type="button">`) for the family's script to reveal and
 * handle: its label and `data-*` attributes (names of lower-case letters, digits and dashes; values are escaped).
 */
export interface WalletButton {
  label: string;
  data: Record<string, string>;
}

/** A payer-facing endpoint on the checkout host: `POST /p/<payment_id>/<path>`, JSON in and out, no key. */
export interface CheckoutEndpoint {
  path: string;
  /** The JSON body's schema (validated strictly; refusals are 400 Error bodies naming the field). */
  body: TSchema;
  /** Submissions one client address may make per minute (429 `rate_limited` beyond), and what the refusal says. */
  limit: { perMinute: number; message: (retryInSeconds: number) => string };
  /** Status of a successful answer. */
  status: number;
  /** Answers the request; throws ApiError (400/404/422) to refuse it. */
  handle(paymentId: string, body: never): Promise<unknown>;
}

/** What a family adds to the hosted checkout. */
export interface CheckoutExtension {
  /**
   * A browser script (ES5, no dependencies) every checkout page loads after the page's own script. It reveals and
   * handles the family's wallet buttons through `window.kassePage` (`onRender(fn)`, `say(text)`); see pay.js.
   */
  script?: URL;
  /** Wallet buttons for a coin choice shown on the checkout (none: the payer copies the address or scans the QR). */
  walletButtons?(choice: WalletChoice): WalletButton[];
  endpoints?: CheckoutEndpoint[];
}

/** What `load` registers. */
export interface LoadedFamily {
  /** Adapters for configured networks the family serves now (others fall back to the simulator's addresses). */
  adapters: ChainAdapter[];
  /** Loops the workers role runs (created on demand: the API role and the CLI run none). */
  workers?(): FamilyWorker[];
  checkout?: CheckoutExtension;
  /** The family's x402 `exact` scheme, where its networks can take USDC from an x402 client (x402.ts). */
  x402?: X402Scheme;
  /** Its x402 `auth-capture` scheme, where its networks have an escrow (a hold the merchant captures). */
  x402Hold?: X402Scheme;
}

/** An operator command, `kasse <name> …` (names start with the family's name). */
export interface FamilyCommand {
  name: string;
  usage: string;
  flags: Record<string, { type: 'string' | 'boolean' }>;
  /** Throws UsageError (core/flags.ts) for bad flags; the result is printed as JSON. */
  run(ctx: FamilyContext, flags: Flags, positionals: string[]): Promise<unknown>;
}

export interface ChainFamily {
  /** The `family` value of its networks in the networks files; also its folder's name. */
  readonly name: string;
  readonly format: AddressFormat;
  readonly networks?: NetworkRules;
  /** Its token standards: the `kind` values its networks' tokens may have besides `native` (e.g. a contract standard). */
  readonly tokenKinds?: readonly string[];
  /** The explicit hot-wallet key it accepts (`KASSE_HOT_WALLET_KEY`), where its hot wallet can take one. */
  readonly hotWalletKey?: HotWalletKeyFormat;
  /**
   * The family's own tables, merged into Kasse's migrations. New ones are named in the family's namespace,
   * `<family>/<NNNN>_<what>`, numbered within the family; they run after every pending module migration, in name order
   * (src/db/migrate.ts). Names a database has already recorded never change.
   */
  readonly migrations?: Record<string, Migration>;
  readonly commands?: FamilyCommand[];
  /** Its senders pay out disbursements (a merchant's payout coin must be on such a family). */
  readonly payouts?: boolean;
  /** Registers adapters, workers and checkout extensions for the configured networks. */
  load?(ctx: FamilyContext): LoadedFamily;
}
