/**
 * The life of an x402 settlement after its claim (service.ts claims it): driving it (the claimant) or watching it
 * (another request given the authorization's answer) to where it ends, recording a settled one as a `paid` Payment
 * in the transaction that marks its row settled — only a pending row is, so of two recordings (a request's and the
 * workers') one commits and the other rolls back: it is credited once —, ending one that cannot be
 * recorded `failed` with its reason, and resuming in the workers role what a crash or an expired wait left pending.
 * A settlement whose network does not answer is looked at again later, less and less often; one that cannot be
 * recorded is never retried.
 */
import type { X402Kind, X402Request, X402Scheme, X402Settlement } from '../../chains/x402.ts';
import type { Clock } from '../../core/clock.ts';
import { ApiError } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import { tenantOf, type Tenant } from '../../core/tenant.ts';
import { formatUnits } from '../../core/money.ts';
import type { Mode } from '../../core/mode.ts';
import { withTx, type Db, type Tx } from '../../db/index.ts';
import type { CaptureService } from '../capture/index.ts';
import type { PaymentService } from '../payments/index.ts';
import type { X402Discovery } from './discovery.ts';
import type { PayToBook } from './payto.ts';
import type { Stored, X402Sale } from './service.ts';
import {
  addToTotal,
  getSettlement,
  endSettlement,
  notePending,
  type SettlementEnd,
  releaseAnswer,
  resumeLater,
  stalledSettlements,
  type SettlementRow,
} from './store.ts';
import type { SettleResponse } from './wire.ts';

/** How long `settle` waits for the network's confirmations before answering `settlement_pending`. */
export const SETTLE_WAIT_MS = 60_000;
/** A pending settlement this old is resumed by the workers role (its request is over or its process died). */
export const RESUME_AFTER_MS = SETTLE_WAIT_MS + 5_000;
/** How long a settlement whose network did not answer waits before it is looked at again, at first and at most. */
const RESUME_BACKOFF_MS = { first: 5_000, most: 60 * 60_000 };
/** Millionths of a dollar per cent (the sub-cent carry, docs/x402.md). */
const MICRO_PER_CENT = 10_000n;
/** Rolls back a recording another request or process made first (its row was no longer pending). */
const ALREADY_RECORDED = new Error('x402 settlement recorded elsewhere');

export interface SettlementDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  payments: PaymentService;
  holds: Pick<CaptureService, 'recordAuthorizedHold'>;
  payTos: PayToBook;
  discovery: X402Discovery;
  /** A sale's settlement ended failed: give back what the sale held (a payment link's use), in `tx`. */
  saleFailed(tx: Tx, tenant: Tenant, sale: X402Sale): Promise<void>;
  /** Every kind of the mode with the scheme offering it. */
  kinds(mode: Mode): Promise<Array<{ kind: X402Kind; scheme: X402Scheme }>>;
}

export class Settlements {
  /** Catalogue recordings under way (`catalogue`). */
  private readonly cataloguing = new Set<Promise<void>>();
  /** Requests of this process waiting for a settlement to end, by settlement id. */
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(private readonly deps: SettlementDeps) {}

  /**
   * Settles what a crash or an expired wait left pending: submits each again (idempotent in the family), and
   * records the ones that landed. Answers how many it looked at.
   */
  async resume(limit = 50): Promise<number> {
    const now = this.deps.clock.now();
    const before = new Date(now.getTime() - RESUME_AFTER_MS);
    const rows = await stalledSettlements(this.deps.db, before, now, limit);
    for (const row of rows) {
      try {
        const found = await this.kindOf(row);
        if (!found) {
          await this.fail(
            row,
            'invalid_network',
            `${row.network} is no longer offered in ${row.mode} mode, so Kasse cannot follow this settlement.`,
          );
          continue;
        }
        const request = this.storedRequest(row, found.kind);
        await this.finish(row, await found.scheme.settle(request, row.id, this.deps.clock.now()));
      } catch (err) {
        const wait = Math.min(RESUME_BACKOFF_MS.first * 2 ** row.resume_tries, RESUME_BACKOFF_MS.most);
        await resumeLater(this.deps.db, row.id, new Date(now.getTime() + wait)).catch(() => {});
        this.deps.log.error(
          { err: errText(err), settlementId: row.id, retryInMs: wait },
          'x402 settlement could not be resumed now',
        );
      }
    }
    return rows.length;
  }

  private storedRequest(row: SettlementRow, kind: X402Kind): X402Request {
    const stored = row.request as Stored;
    return {
      mode: row.mode,
      kind,
      payTo: row.pay_to,
      amount: BigInt(row.amount),
      requirements: stored.requirements,
      payload: stored.payload,
    };
  }

  /**
   * Drives (`submit`: the claimant) or watches (anyone else) a settlement to its answer, for `me`, who holds the
   * authorization's success: a request that can only answer `settlement_pending` gives it back.
   */
  async follow(
    scheme: X402Scheme,
    row: SettlementRow,
    request: X402Request,
    me: string,
    submit = true,
  ): Promise<SettleResponse> {
    if (row.status !== 'pending') return this.answer(row);
    const deadline = new Date(this.deps.clock.millis() + SETTLE_WAIT_MS);
    let state: X402Settlement;
    if (submit) state = await scheme.settle(request, row.id, deadline);
    else {
      const now = await this.endOf(row.id, deadline);
      if (now && now.status !== 'pending') return this.answer(now);
      // Still pending at the deadline: where its transfer stands decides (it may have landed while whoever submitted
      // it is gone, and is then recorded here).
      state = await scheme.settlement(row.mode, row.chain, row.id);
    }
    let final: SettlementRow;
    try {
      final = await this.finish(row, state);
    } catch (err) {
      // Not recorded now for a passing reason: the workers record it later.
      this.deps.log.warn({ err: errText(err), settlementId: row.id }, 'x402 settlement not recorded yet');
      final = { ...row, status: 'pending', transaction: state.transaction ?? row.transaction };
    }
    if (final.status === 'pending' && me.startsWith('req:')) await releaseAnswer(this.deps.db, row.id, me);
    return this.answer(final);
  }

  /** A settlement ended (announced by any process, this one included): wakes the requests waiting for it here. */
  ended(id: string): void {
    for (const wake of this.waiting.get(id) ?? []) wake();
  }

  /**
   * The settlement once it ends, or as it stands when the clock reaches `deadline`: no polling, the statement that
   * ends a settlement announces it (store.ts), wherever it runs.
   */
  private async endOf(id: string, deadline: Date): Promise<SettlementRow | undefined> {
    const stop = new AbortController();
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const waiting = this.waiting.get(id) ?? new Set();
    this.waiting.set(id, waiting.add(wake));
    try {
      // Listening before reading: an end between the two is not missed.
      const row = await getSettlement(this.deps.db, id);
      if (!row || row.status !== 'pending') return row;
      await Promise.race([woken, this.deps.clock.until(deadline, stop.signal)]);
      return await getSettlement(this.deps.db, id);
    } finally {
      stop.abort();
      waiting.delete(wake);
      if (waiting.size === 0) this.waiting.delete(id);
    }
  }

  /**
   * Records where a settlement ended: the paid Payment (once, under the row's lock), or its failure. A settlement
   * that cannot be recorded (refused by the payments module or the database's checks) ends failed with the reason;
   * anything else is thrown, to be tried again.
   */
  private async finish(row: SettlementRow, state: X402Settlement): Promise<SettlementRow> {
    let now: SettlementRow | undefined;
    let failed: string | undefined;
    if (state.status === 'failed') failed = `${state.reason}: ${state.message}`;
    else if (state.status === 'settled') {
      try {
        now = await this.record(row, state);
      } catch (err) {
        if (!cannotRecord(err)) throw err;
        this.deps.log.error({ err: errText(err), settlementId: row.id }, 'x402 settlement cannot be recorded');
        failed = `unexpected_settle_error: the transfer ${state.transaction} could not be recorded as a payment (${errText(err)})`;
      }
    } else if (state.transaction && state.transaction !== row.transaction) {
      // Still waiting for its confirmations: the answer names the transaction it waits for.
      return (
        (await notePending(this.deps.db, row.id, state.transaction)) ??
        (await getSettlement(this.deps.db, row.id)) ??
        row
      );
    } else return row;
    if (failed !== undefined) {
      const end: SettlementEnd = { status: 'failed', transaction: state.transaction, error: failed };
      now = await this.endFailed(row, end);
    }
    // Announced to every process; this one is told at once, also without a LISTEN connection.
    if (now) this.ended(row.id);
    // Not awaited: the catalogue asks the merchant's server, which may be waiting for this very settle to answer.
    if (now?.status === 'settled') this.catalogue(now);
    // Nothing changed here: another request or process ended it first.
    return now ?? (await getSettlement(this.deps.db, row.id)) ?? row;
  }

  /**
   * The settled authorization as a `paid` Payment, with its row marked settled, in one transaction: the row as it is
   * then, or nothing when another request or process recorded it first (this transaction is then rolled back).
   */
  private async record(
    row: SettlementRow,
    state: Extract<X402Settlement, { status: 'settled' }>,
  ): Promise<SettlementRow | undefined> {
    const now = this.deps.clock.now();
    return withTx(this.deps.db, async (tx) => {
      const found = await this.kindOf(row);
      if (!found) throw new ApiError('invalid_state', `${row.network} is no longer offered`);
      const payTo = await this.deps.payTos.get(tenantOf(row), found.kind, found.scheme);
      const amount = BigInt(row.amount);
      const decimals = found.kind.token.decimals;
      const micro = decimals <= 6 ? amount * 10n ** BigInt(6 - decimals) : amount / 10n ** BigInt(decimals - 6);
      const sale = (row.request as Stored).sale;
      const hold = found.scheme.hold?.(this.storedRequest(row, found.kind));
      // A hold counts its whole cents (the scheme takes no other amount); only what is paid outright carries.
      const total =
        hold?.flow === 'authorize' ? { before: 0n, after: micro } : await addToTotal(tx, tenantOf(row), micro);
      const settlement: Parameters<PaymentService['recordExternal']>[1] = {
        mode: row.mode,
        merchantId: row.merchant_id,
        chain: row.chain,
        token: row.token,
        address: row.pay_to,
        // A retired address (settled before the network's configuration changed) has the same index.
        addressIndex: payTo.index,
        amount,
        priceCents: Number(total.after / MICRO_PER_CENT - total.before / MICRO_PER_CENT),
        orderId: sale?.orderId ?? `x402:${row.id}`,
        description: sale?.description ?? row.description,
        ...(sale ? { metadata: sale.metadata } : {}),
        x402: {
          resource: row.resource,
          description: row.description,
          payer: row.payer,
          network: row.network,
          transaction: state.transaction,
          simulated: state.simulated,
          amount_usd: formatUnits(amount, decimals),
        },
        transfer: {
          txHash: state.transaction,
          index: state.index,
          blockNumber: state.blockNumber,
          blockHash: state.blockHash,
          from: row.payer,
        },
      };
      const payment =
        hold?.flow === 'authorize'
          ? await this.deps.holds.recordAuthorizedHold(tx, { ...settlement, ...hold })
          : await this.deps.payments.recordExternal(tx, settlement);
      const end: SettlementEnd = { status: 'settled', transaction: state.transaction, paymentId: payment.id };
      const settled = await endSettlement(tx, row.id, end, now);
      if (!settled) throw ALREADY_RECORDED;
      const linkId = sale?.metadata.link_id;
      if (linkId && row.resource) await this.deps.discovery.linkPaid(tx, tenantOf(row), linkId, row.resource, now);
      this.deps.log.info(
        { settlementId: row.id, paymentId: payment.id, mode: row.mode, chain: row.chain },
        'x402 payment settled',
      );
      return settled;
    }).catch((err: unknown) => {
      if (err === ALREADY_RECORDED) return undefined;
      throw err;
    });
  }

  /** The kind a settlement was made under (its network and scheme), with the scheme offering it. */
  private async kindOf(row: SettlementRow) {
    const scheme = (row.request as Stored).requirements.scheme;
    return (await this.deps.kinds(row.mode)).find(
      (k) => k.kind.chain === row.chain && (k.kind.scheme ?? 'exact') === scheme,
    );
  }

  private async fail(row: SettlementRow, reason: string, message: string): Promise<void> {
    const end: SettlementEnd = { status: 'failed', transaction: row.transaction, error: `${reason}: ${message}` };
    if (await this.endFailed(row, end)) this.ended(row.id);
    this.deps.log.error({ settlementId: row.id, reason }, 'x402 settlement failed');
  }

  /** Catalogues a recorded settlement's resource in the background (`catalogued` waits for it). */
  private catalogue(row: SettlementRow): void {
    const work: Promise<void> = this.paidFor(row)
      .catch((err: unknown) =>
        this.deps.log.warn({ err: errText(err), settlementId: row.id }, 'x402 resource not catalogued'),
      )
      .finally(() => this.cataloguing.delete(work));
    this.cataloguing.add(work);
  }

  /** Resolves once the resources of the settlements recorded so far are catalogued. */
  async catalogued(): Promise<void> {
    while (this.cataloguing.size > 0) await Promise.all([...this.cataloguing]);
  }

  /**
   * A settlement recorded here (by whichever request or worker recorded it: once): the resource it declared is
   * catalogued as paid.
   */
  private async paidFor(row: SettlementRow): Promise<void> {
    const { requirements, payload, declared } = row.request as Stored;
    if (!declared) return;
    const paymentPayload = {
      x402Version: 2,
      resource: declared.resource,
      accepted: requirements,
      payload,
      extensions: { bazaar: declared.bazaar },
    };
    await this.deps.discovery.paid(tenantOf(row), {
      x402Version: 2,
      paymentPayload,
      paymentRequirements: requirements,
    });
  }

  /**
   * Ends a pending settlement failed and, in the same transaction, gives back what its sale held (a link's use): the
   * row, or nothing when it was no longer pending.
   */
  private endFailed(row: SettlementRow, end: SettlementEnd): Promise<SettlementRow | undefined> {
    const sale = (row.request as Stored).sale;
    return withTx(this.deps.db, async (tx) => {
      const ended = await endSettlement(tx, row.id, end, this.deps.clock.now());
      if (ended && sale) await this.deps.saleFailed(tx, tenantOf(row), sale);
      return ended;
    });
  }

  /** The answer to every other request for an authorization: a duplicate, as the official facilitator says it. */
  duplicate(request: X402Request, payer: string): SettleResponse {
    return {
      success: false,
      errorReason: request.kind.codes.replay,
      errorMessage:
        'This authorization was settled for another request; each payment is answered success once. Retry with the same payment identifier to get that answer again.',
      payer,
      transaction: '',
      network: request.kind.network,
    };
  }

  /** The SettleResponse for a settlement row as it stands. */
  answer(row: SettlementRow): SettleResponse {
    const base = { payer: row.payer, network: row.network, transaction: row.transaction ?? '' };
    if (row.status === 'settled')
      return {
        success: true,
        ...base,
        amount: BigInt(row.amount).toString(),
        extra: { payment_id: row.payment_id, simulated: row.simulated },
      };
    if (row.status === 'failed') {
      const [reason, ...message] = (row.error ?? 'invalid_transaction_state').split(': ');
      return { success: false, ...base, errorReason: reason!, errorMessage: message.join(': ') || undefined };
    }
    return {
      success: false,
      ...base,
      errorReason: 'settlement_pending',
      errorMessage: 'The transfer is submitted and not yet confirmed; Kasse records the payment when it is.',
    };
  }
}

/**
 * A settlement's recording failed for good: the payments module refused it, or the database refused its values (data
 * exceptions, integrity constraints: SQLSTATE classes 22 and 23). Connection and other passing failures are not.
 */
function cannotRecord(err: unknown): boolean {
  if (err instanceof ApiError || err instanceof RangeError || err instanceof TypeError) return true;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code);
}

const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
