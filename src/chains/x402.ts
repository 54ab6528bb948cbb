/**
 * The x402 capability of the family contract (`LoadedFamily.x402`): what a chain family does so Kasse's facilitator
 * (src/modules/x402, docs/x402.md) can take USDC from x402 clients on its networks.
 *
 * The split: the x402 module does everything that is the same on every chain — the merchant's API key and mode,
 * the request's shape, that `paymentRequirements.payTo` is the merchant's x402 address of the network and its asset
 * the network's USDC, idempotency across processes (one settlement row per authorization, claimed in PostgreSQL
 * before the family is asked to settle), recording the `paid` Payment with its ledger credit and webhook, and
 * resuming settlements a crash interrupted. The family does only its chain's part: which networks it offers
 * (`kinds`), the merchant's receiving address (`payTo`, derived from the master seed like deposit addresses and swept
 * like them), checking a payload (signature, recipient, amount, validity window, nonce unused on chain and in its
 * own tables, the payer's balance, a simulation), submitting it through its relayer (the hot wallet pays the fee)
 * and following it to the network's confirmations. On a network the test-mode simulator serves (no adapter), checks
 * that need no node are still made and settlement is simulated (`simulated: true`, a `0xsim…` hash).
 *
 * Every method is given the module's settlement id; `settle` and `settlement` are idempotent on it, so two processes
 * settling one authorization, or a process resuming after kill -9, end at one transaction.
 */
import type { Mode } from '../core/mode.ts';
import type { TokenConfig } from './types.ts';

/** One `{x402Version: 2, scheme, network}` the family offers, with the Kasse network behind it. */
export interface X402Kind {
  /** The x402 scheme: `exact` when absent, `auth-capture` for a hold in an escrow (docs/x402.md). */
  scheme?: string;
  /** CAIP-2 id (`eip155:8453`, `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp`). */
  network: string;
  /** Kasse's network id (`base`). */
  chain: string;
  /** The network's USDC (the asset every requirement on this network must name). */
  token: TokenConfig;
  /** What a client needs beside payTo (e.g. the EIP-712 domain's `name` and `version`, `feePayer`). */
  extra: Record<string, unknown>;
  /** Settlement on this network is simulated (the test-mode simulator serves it). */
  simulated: boolean;
  /** The official codes of the refusals the module makes for the scheme on this network. */
  codes: {
    /** `payTo` is not the merchant's x402 address. */
    recipient: string;
    /** The authorization was already settled (or is being settled) by Kasse. */
    replay: string;
  };
}

/** `paymentRequirements` of x402 v2, as the module validated them (strings as sent). */
export interface X402Requirements {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra?: Record<string, unknown>;
}

/** What a family is asked to check or settle: one payment payload against requirements the module already matched. */
export interface X402Request {
  mode: Mode;
  kind: X402Kind;
  /** The merchant's x402 address on the network (= `requirements.payTo`, checked by the module). */
  payTo: string;
  /** Smallest units of `kind.token` (= `requirements.amount`). */
  amount: bigint;
  requirements: X402Requirements;
  /** `paymentPayload.payload`: the scheme's own object (an EIP-3009 authorization and signature, a transaction). */
  payload: Record<string, unknown>;
}

/** A payload that passed every check: who pays, and what identifies the authorization on its network. */
export interface X402Valid {
  valid: true;
  payer: string;
  /** Unique per authorization on the network (e.g. `<asset>:<from>:<nonce>`): the key of settlement idempotency. */
  key: string;
}

/** A refusal with the official facilitator's `invalidReason` code and a sentence for people. */
export interface X402Invalid {
  valid: false;
  reason: string;
  message: string;
  payer?: string;
}

export type X402Verdict = X402Valid | X402Invalid;

/** Where a settlement stands. */
export type X402Settlement =
  | { status: 'pending'; transaction: string | null }
  | { status: 'failed'; reason: string; message: string; transaction: string | null }
  | {
      status: 'settled';
      transaction: string;
      /** The transfer inside the transaction (its block and position), for the Payment's deposit. */
      blockNumber: bigint | null;
      blockHash: string | null;
      index: number;
      simulated: boolean;
    };

/**
 * What an `auth-capture` payment locked or charged in the escrow is (read from the stored request): `authorize` made a
 * hold the merchant captures (a manual-capture Payment), `charge` paid it at once.
 */
export interface X402Hold {
  flow: 'authorize' | 'charge';
  payer: string;
  /** The hold's id on its chain (the escrow's payment-info hash). */
  reference: string;
  /** The family's terms of the hold (handed back with every operation on it). */
  terms: unknown;
  captureBefore: Date;
  refundBefore: Date;
}

export interface X402Scheme {
  /** For a scheme that holds money in an escrow: what the settled request locked or charged there. */
  hold?(request: X402Request): X402Hold;
  /** The kinds the family offers in `mode` (networks with a USDC the scheme can take; simulator-served ones too). */
  kinds(mode: Mode): Promise<X402Kind[]>;
  /**
   * The merchant's receiving address on `chain`, made from derivation index `index` (the module allots it) under the
   * network's current configuration, with whatever the family does for a new receiving address (idempotent: the
   * module asks again for the same index when the configuration changed).
   */
  payTo(mode: Mode, chain: string, index: bigint): Promise<string>;
  /**
   * What `payTo` derives from on `chain` now (the forwarder factory, say), or `simulator` on a network the test-mode
   * simulator serves: an address derived under another value is derived again and the old one retired, so only
   * addresses the family can sweep are given out (under `simulator` addresses are kept as they are).
   */
  derivation(mode: Mode, chain: string): string;
  /** The authorization's key (as `X402Valid.key`) read from the payload alone, or null when it is malformed. */
  key(request: X402Request): string | null;
  /** Checks the payload; never writes. */
  verify(request: X402Request): Promise<X402Verdict>;
  /**
   * Submits the authorization as settlement `id` (idempotent on it: recorded once, however often or concurrently it
   * is called) and follows it until it has the network's confirmations or `deadline` passes (then `pending`).
   */
  settle(request: X402Request, id: string, deadline: Date): Promise<X402Settlement>;
  /** Where settlement `id` stands now, without submitting anything (resuming after a crash). */
  settlement(mode: Mode, chain: string, id: string): Promise<X402Settlement>;
}
