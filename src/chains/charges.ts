/**
 * The recurring-charges capability of the family contract (`LoadedFamily.charges`): what a chain family does so a
 * subscription can charge itself each period under a grant its payer signed once (src/modules/subscriptions,
 * docs/subscriptions.md "Charged automatically").
 *
 * The split: the subscriptions module decides everything that is the same on every chain — the terms (receiver,
 * token, amount per period, period, start, end, total), when a period is charged, retries, what a failure means for
 * the subscription, and recording a charge that landed as the period's `paid` payment. It records each grant and
 * each charge attempt in its own tables before it asks the family for anything, under an id the family uses as its
 * transfer's id. The family does only its chain's part: what the payer signs for these terms (`offer`), checking
 * and relaying the signed grant and a signed revoke through its one transfer queue (the hot wallet pays the fee),
 * reading a grant's state on chain and whether a charge would go through now (`check`), recording a charge's
 * transfer in the module's transaction (no network I/O) and following it to the network's confirmations.
 *
 * Every method that submits is idempotent on the module's id, so two processes, or one resuming after kill -9, end
 * at one transaction; a transfer that may have been sent is followed to its outcome, never sent again.
 */
import type { Mode } from '../core/mode.ts';
import type { Tx } from '../db/index.ts';
import type { QueuedSender, QueuedTransfer } from './queue.ts';
import type { TokenConfig } from './types.ts';

/** A network on which the family takes grants, with its token. */
export interface ChargeKind {
  /** Kasse's network id (`base`). */
  chain: string;
  /** The network's USDC. */
  token: TokenConfig;
  /**
   * `contract`: the amount per period, the period, the receiver and the total are all enforced on chain.
   * `delegate`: the chain caps only the total (a token delegate); the per-period limit is Kasse's.
   */
  enforcement: 'contract' | 'delegate';
}

/** The terms of a grant as the module decides them (amounts in the token's smallest unit, times in Unix seconds). */
export interface GrantTerms {
  mode: Mode;
  chain: string;
  token: TokenConfig;
  /** The payer's address (their wallet). */
  payer: string;
  /** The merchant's receiving address on the network (`ChargeScheme.receiver`). */
  receiver: string;
  amountPerPeriod: bigint;
  periodSeconds: number;
  /** First instant a charge may happen, and the end (nothing at or after it). */
  start: number;
  end: number;
  /** What the payer allows in all. */
  total: bigint;
  /** 32 bytes, 0x-hex: the same terms granted again need another salt. */
  salt: string;
}

/** A grant as the module stored it: its terms, the key the chain knows it by, and the family's own record. */
export interface StoredGrant extends GrantTerms {
  key: string;
  data: Record<string, unknown>;
}

/** What the payer's wallet is asked to sign for a grant or a revoke (typed data, a transaction to sign, …). */
export type SigningRequest = Record<string, unknown>;

/** Where a relayed transfer (a grant, a revoke) stands. */
export type RelayState =
  | { status: 'pending'; transaction: string | null }
  | { status: 'done'; transaction: string }
  | { status: 'failed'; message: string; transaction: string | null };

/** What stands in the way of a charge now; `not_started`: the chain takes it a little later. */
export type ChargeRefusal =
  | 'insufficient_funds'
  | 'allowance_exhausted'
  | 'grant_revoked'
  | 'grant_expired'
  | 'not_started'
  | 'already_charged';

export type ChargeCheck = { ok: true } | { ok: false; reason: ChargeRefusal; message: string };

/** Where a charge stands. */
export type ChargeState =
  | { status: 'pending'; transaction: string | null }
  | { status: 'failed'; message: string; transaction: string | null }
  | {
      status: 'succeeded';
      transaction: string;
      /** The token transfer inside it (its block and position), for the payment's deposit. */
      blockNumber: bigint | null;
      blockHash: string | null;
      index: number;
      from: string;
    };

/** A signed grant or revoke the family checked (nothing recorded yet): its key on chain and its own record. */
export interface Checked {
  key: string;
  data: Record<string, unknown>;
}

/**
 * What every family's scheme does alike: the transfers it records (relays, charges) are rows of its network's one
 * transfer queue, pushed and read through the network's sender.
 */
export abstract class QueuedChargeScheme {
  /** The sender of `chain` in `mode`; throws an ApiError when the family takes no grants there. */
  protected abstract sender(
    mode: Mode,
    chain: string,
  ): Pick<QueuedSender<QueuedTransfer>, 'relayState' | 'pushOrLeave' | 'withdraw'>;
  /** The reason given for a failed transfer that stored none. */
  protected abstract readonly failure: string;

  /** `ChargeScheme.relayState`, and where a charge's transfer stands until the family reads what it moved. */
  relayState(mode: Mode, chain: string, id: string): Promise<RelayState> {
    return this.sender(mode, chain).relayState(id, this.failure);
  }

  /** `ChargeScheme.withdrawCharge`. */
  withdrawCharge(tx: Tx, grant: StoredGrant, id: string, reason: string): Promise<boolean> {
    return this.sender(grant.mode, grant.chain).withdraw(tx, id, reason);
  }

  /** `ChargeScheme.push`. */
  async push(mode: Mode, chain: string, id: string): Promise<void> {
    await this.sender(mode, chain).pushOrLeave(id);
  }
}

export interface ChargeScheme {
  /** The networks of `mode` the family takes grants on now. */
  kinds(mode: Mode): ChargeKind[];
  /** The merchant's receiving address on `chain`, made from derivation index `index` (swept like a deposit address). */
  receiver(mode: Mode, chain: string, index: bigint): Promise<string>;
  /** What the payer signs to grant `terms` (reads the chain: a permit's nonce, the token's domain). */
  offer(terms: GrantTerms): Promise<SigningRequest>;
  /**
   * Checks the payer's signatures (`signed`, the family's own fields) over `terms` without writing anything. Throws
   * an ApiError (400 naming the field under `signatures.`, 422) for a grant that cannot go through.
   */
  checkGrant(terms: GrantTerms, signed: Record<string, unknown>): Promise<Checked>;
  /** Records the relay of a checked grant as transfer `id` in the caller's transaction (no network I/O). */
  recordGrant(tx: Tx, terms: GrantTerms, checked: Checked, id: string): Promise<void>;
  /** What the payer signs to revoke the grant (null: they revoke in their wallet only). */
  revokeOffer(grant: StoredGrant): Promise<SigningRequest | null>;
  /** Checks a signed revoke without writing anything; throws ApiError when refused. */
  checkRevoke(grant: StoredGrant, signed: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Records the relay of a checked revoke as transfer `id` in the caller's transaction (no network I/O). */
  recordRevoke(tx: Tx, grant: StoredGrant, checked: Record<string, unknown>, id: string): Promise<void>;
  /** Where the relay of a grant or revoke (transfer `id`) stands. */
  relayState(mode: Mode, chain: string, id: string): Promise<RelayState>;
  /**
   * Whether a charge of `amount` under the grant would go through now (the grant on chain, balance, allowance); `at`
   * is Kasse's time for it (the chain's latest block may be a little behind: the period due then is `not_started`
   * there, not already charged).
   */
  check(grant: StoredGrant, amount: bigint, at: Date): Promise<ChargeCheck>;
  /** Records the charge's transfer `id` in the caller's transaction (no network I/O); idempotent on `id`. */
  recordCharge(tx: Tx, grant: StoredGrant, id: string, amount: bigint): Promise<void>;
  /**
   * Withdraws charge `id`'s transfer in the caller's transaction if nothing of it was signed yet (it ends `failed`
   * with `reason`, never to be sent); false when it was signed already (it may land: follow it).
   */
  withdrawCharge(tx: Tx, grant: StoredGrant, id: string, reason: string): Promise<boolean>;
  /** Sends a recorded transfer now where it can (best effort: the family's sender loop carries it on otherwise). */
  push(mode: Mode, chain: string, id: string): Promise<void>;
  /** Where charge `id` stands, without sending anything. */
  chargeState(grant: StoredGrant, id: string, amount: bigint): Promise<ChargeState>;
}
