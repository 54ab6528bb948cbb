/**
 * The payments module as the rest of Kasse sees it. This file creates payments and issues coin choices (attempts),
 * reads and lists them, cancels and accepts them; the module's other parts hang off it: the coin catalogue
 * (catalogue.ts), balances (balance.ts), the due work (due.ts), the deposit sink chain watchers report to
 * (deposits.ts) and read-only access for pages and chain families (reader.ts). Prices are fetched and deposit
 * addresses derived before a transaction opens (never network I/O inside one); every state change goes through
 * `PaymentEngine`, which the refunds and simulator modules drive too. Rules and decisions: docs/payments.md.
 */
import type { TokenConfig } from '../../chains/types.ts';
import type { Mode } from '../../core/mode.ts';
import type { Tenant } from '../../core/tenant.ts';
import { pageOf } from '../../core/cursor.ts';
import { ApiError, invalid, invalidState, notFound } from '../../core/errors.ts';
import { assertHttpUrl } from '../../core/urls.ts';
import { localeParam } from '../../core/i18n/index.ts';
import type { DbOrTx, Tx } from '../../db/index.ts';
import { writeTogether } from '../../db/statement.ts';
import { writeCoalesced } from '../../db/coalesce.ts';
import { newId } from '../../core/ids.ts';
import { once, requestHash, storedResponse, validateKey } from '../idempotency/index.ts';
import type { Actor } from '../audit/index.ts';
import { createPaymentsIn, paymentSummaries, type IssuedPaymentInput, type PaymentSummary } from './batch.ts';
import { merchantName } from '../merchants/index.ts';
import { merchantBalance } from './balance.ts';
import { Catalogue, type CoinChoiceInput, type PricedCoin } from './catalogue.ts';
import { DepositRecorder } from './deposits.ts';
import { PaymentDue, type DueResult } from './due.ts';
import { PaymentEngine, type PaymentDeps } from './engine.ts';
import { COIN_HOLD_MS, MAX_ATTEMPTS, PAYMENT_LIFETIME_MS, type CaptureMethod, type PaymentStatus } from './model.ts';
import { holdTerms } from './hold.ts';
import { PaymentsReader } from './reader.ts';
import { PaymentReports } from './reports.ts';
import type { Payment } from './schema.ts';
import { isFinal, TransitionError, type Trigger } from './state.ts';
import { recordExternal, settleCharged, type ChargeSettlement, type ExternalSettlement } from './external.ts';
import { AddressIndexes, insertRows, newAttemptRow, newPaymentRow } from './store/create.ts';
import { loadPayment, loadPayments, type AttemptRow, type Loaded } from './store/payments.ts';
import { listPaymentIds } from './store/reads.ts';

/** NOTE: spec limit "metadata up to 4 kB", measured as the UTF-8 bytes of its JSON text. */
export const METADATA_MAX_BYTES = 4096;
export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;

export interface CreatePaymentInput {
  price_amount: number;
  price_currency: 'USD';
  order_id: string;
  description?: string;
  chain?: string;
  token?: string;
  success_url?: string;
  cancel_url?: string;
  webhook_url?: string;
  /** The payer's language: a tag from LOCALES (src/core/i18n). */
  locale?: string;
  metadata?: Record<string, unknown>;
  /** `manual`: a hold the merchant captures later (docs/capture.md). */
  capture_method?: CaptureMethod;
  /** A manual payment's capture deadline (ISO 8601); default HOLD_DEFAULT_DAYS after creation. */
  capture_before?: string;
}

export interface ListQuery {
  order_id?: string;
  status?: PaymentStatus;
  source?: 'x402';
  cursor?: string;
  limit?: number;
}

/** A priced coin choice with its freshly derived deposit address. */
interface Issued extends PricedCoin {
  index: bigint;
  address: string;
  uri: string | null;
  /** Paid by Kasse's own transactions (a hold's captures), not watched. */
  external: boolean;
}

export class PaymentService {
  readonly engine: PaymentEngine;
  /** Coins of each mode, estimates, and the pricing of coin choices. */
  readonly catalogue: Catalogue;
  /** The DepositSink chain watchers report to. */
  readonly deposits: DepositRecorder;
  /** Read-only access for the checkout pages, and the PaymentsPort chain families get. */
  readonly reader: PaymentsReader;
  /** Dashboard reads: search by date and coin, paid volume per day. */
  readonly reports: PaymentReports;
  private readonly due: PaymentDue;
  private readonly addressIndexes: AddressIndexes;

  constructor(private readonly deps: PaymentDeps) {
    this.engine = new PaymentEngine(deps);
    this.catalogue = new Catalogue(deps);
    this.deposits = new DepositRecorder(this.engine);
    this.reader = new PaymentsReader(this.engine);
    this.reports = new PaymentReports(this.engine);
    this.due = new PaymentDue(this.engine, this.deposits);
    this.addressIndexes = new AddressIndexes(deps.db);
  }

  /**
   * One pass over due work (due.ts): what the workers run every few seconds, and what tests run after moving the
   * fake clock.
   */
  runDue(): Promise<DueResult> {
    return this.due.run();
  }

  /** The tenant's balance (balance.ts). */
  balance(tenant: Tenant) {
    return merchantBalance(this.deps, tenant);
  }

  /**
   * Creates a payment (201), or replays the first answer for a repeated Idempotency-Key with the same body (200).
   * With `token` (and optionally `chain`) the first coin choice is issued in the same statement.
   *
   * The hot path of the API, so it is one round trip to the database: ids and times are made here, the answer is
   * rendered from the rows before they are written, and the payment, its coin choice, its audit row and its key
   * (with that answer) are written by one statement (db/statement.ts, idempotency `once`), shared under load with
   * the creations waiting at the same time (db/coalesce.ts). A coin choice also takes
   * an address index, from a block the process holds. `merchantName` (what a wallet shows as the payee) is the
   * caller's when it has the merchant at hand; otherwise it is read.
   */
  async create(
    tenant: Tenant,
    input: CreatePaymentInput,
    idempotencyKey: string | undefined,
    actor: Actor,
    merchantName?: string,
  ): Promise<{ status: number; payment: Payment }> {
    const { mode, merchantId } = tenant;
    const key = validateKey(idempotencyKey);
    for (const field of ['success_url', 'cancel_url', 'webhook_url'] as const) {
      const url = input[field];
      if (url !== undefined) assertHttpUrl(url, field, mode === 'live');
    }
    const locale = input.locale === undefined ? null : localeParam(input.locale);
    const metadata = input.metadata ?? {};
    const metadataJson = JSON.stringify(metadata);
    if (Buffer.byteLength(metadataJson, 'utf8') > METADATA_MAX_BYTES) {
      throw invalid(`metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON`, 'metadata');
    }
    const now = this.deps.clock.now();
    const manual = input.capture_method === 'manual';
    const terms = holdTerms(manual, input.capture_before, now);
    const coin = this.catalogue.resolve(mode, input);
    if (coin && manual && !this.deps.chains.holdable(mode, coin.id))
      throw invalid(
        `${coin.id} cannot be held, so a payment with capture_method manual cannot be paid in it; GET /currencies says which coins can (holdable).`,
        'capture_method',
      );
    const request = { key, hash: requestHash('POST', '/v1/payments', input) };
    let issued: Issued | null = null;
    if (coin) {
      try {
        issued = await this.issue(mode, coin, input.price_amount, {
          merchantId,
          merchantName,
          description: input.description ?? null,
          manual,
        });
      } catch (err) {
        // A retry of a request that succeeded gets its answer even when the coin cannot be priced now.
        const prior = err instanceof ApiError ? await storedResponse<Payment>(this.deps.db, tenant, request) : null;
        if (prior) return { status: 200, payment: prior };
        throw err;
      }
    }
    const row = newPaymentRow(newId('pay'), {
      merchant_id: merchantId,
      mode,
      status: 'waiting',
      price_amount: input.price_amount,
      price_currency: 'USD',
      order_id: input.order_id,
      description: input.description ?? null,
      success_url: input.success_url ?? null,
      cancel_url: input.cancel_url ?? null,
      webhook_url: input.webhook_url ?? null,
      locale,
      metadata,
      expires_at: new Date(now.getTime() + PAYMENT_LIFETIME_MS),
      created_at: now,
      updated_at: now,
      capture_method: manual ? 'manual' : 'automatic',
      capture_before: terms?.captureBefore ?? null,
      refund_before: terms?.refundBefore ?? null,
    });
    const attempts = issued ? [this.attemptRow(row.id, mode, issued, now)] : [];
    const payment = this.engine.json({ row, attempts, deposits: [] });
    const result = await once(this.deps.db, tenant, request, 201, payment, async (keyRow) => {
      const writes = insertRows(row, attempts);
      if (keyRow) writes.push(keyRow);
      writes.push(
        ...this.deps.audit.writes(
          tenant,
          actor,
          'payment.create',
          { type: 'payment', id: row.id },
          { order_id: input.order_id, price_amount: input.price_amount },
        ),
      );
      const hook = issued && !issued.external && this.deps.chains.adapter(mode, issued.network.id).addressIssued;
      if (!hook) return writeCoalesced(this.deps.db, writes, key === null ? '' : `${merchantId} ${mode} ${key}`);
      // A network that records work for a new address does so in the same transaction.
      await this.deps.db.transaction().execute(async (tx) => {
        await this.addressIssued(tx, mode, issued!);
        await writeTogether(tx, writes);
      });
    });
    return { status: result.status, payment: result.body };
  }

  /**
   * Creates payments inside the caller's transaction, without coin choice or key (batch.ts): for modules that issue
   * payments as part of their own change, such as subscription invoices.
   */
  createIn(db: DbOrTx, mode: Mode, items: readonly IssuedPaymentInput[]): Promise<Payment[]> {
    return createPaymentsIn(this.engine, db, mode, items);
  }

  /** Records an authorization the x402 facilitator settled as a `paid` payment, inside `tx` (external.ts). */
  recordExternal(tx: Tx, settlement: ExternalSettlement): Promise<Payment> {
    return recordExternal(this.engine, tx, settlement);
  }

  /**
   * Records a subscription's charge that landed as the payment of waiting payment `paymentId`, inside `tx`
   * (external.ts); null when the payment is no longer waiting (nothing written).
   */
  settleCharged(tx: Tx, tenant: Tenant, paymentId: string, settlement: ChargeSettlement): Promise<Payment | null> {
    return settleCharged(this.engine, tx, tenant, paymentId, settlement);
  }

  /** A fresh derivation index from the deposit addresses' sequence (never derived for anything else). */
  nextAddressIndex(): Promise<bigint> {
    return this.addressIndexes.next();
  }

  /** Status, amount, times and checkout URL of many payments of `mode`, in one query (batch.ts). */
  summaries(db: DbOrTx, mode: Mode, ids: readonly string[]): Promise<Map<string, PaymentSummary>> {
    return paymentSummaries(this.engine, db, mode, ids);
  }

  async get(tenant: Tenant, id: string): Promise<Payment> {
    const l = await loadPayment(this.deps.db, tenant, id);
    if (!l) throw notFound('payment');
    return this.engine.json(l);
  }

  /** Newest first; `next_cursor` is opaque and null on the last page. */
  async list(tenant: Tenant, q: ListQuery): Promise<{ data: Payment[]; next_cursor: string | null }> {
    const limit = q.limit ?? LIST_LIMIT_DEFAULT;
    const ids = await listPaymentIds(this.deps.db, tenant, { ...q, limit });
    const { page, next_cursor } = pageOf(ids, limit, (id) => id);
    const loaded = await loadPayments(this.deps.db, tenant, page);
    return {
      data: loaded.map((l) => this.engine.json(l)),
      next_cursor,
    };
  }

  /**
   * Issues a coin choice (a deposit address and an exact amount held for 10 minutes) on a payment: by the merchant
   * (API), or by its payer on the checkout (`payerActor`), the tenant then being the payment's own.
   */
  async createAttempt(tenant: Tenant, id: string, choice: CoinChoiceInput, actor: Actor): Promise<Payment> {
    const { mode } = tenant;
    const l = await loadPayment(this.deps.db, tenant, id);
    if (!l) throw notFound('payment');
    const coin = this.catalogue.resolve(mode, choice);
    if (!coin) throw invalid('token is required', 'token');
    const manual = l.row.capture_method === 'manual';
    if (manual && !this.deps.chains.holdable(mode, coin.id))
      throw invalid(
        `This payment is held and captured later (capture_method manual), and ${coin.id} cannot be held; GET /currencies says which coins can (holdable).`,
        'token',
      );
    assertCanAddAttempt(l);
    const issued = await this.issue(mode, coin, l.row.price_amount, {
      merchantId: l.row.merchant_id,
      description: l.row.description,
      manual,
    });
    const payment = await this.engine.locked(tenant, id, async (tx, locked) => {
      assertCanAddAttempt(locked);
      await this.addressIssued(tx, mode, issued);
      const attempt = this.attemptRow(id, mode, issued, this.deps.clock.now());
      await writeTogether(tx, insertRows(null, [attempt]));
      await this.deps.audit.record(
        tx,
        tenant,
        actor,
        'payment.attempt',
        { type: 'payment', id },
        { token: attempt.token, attempt_id: attempt.id },
      );
      return this.engine.json({ ...locked, attempts: [...locked.attempts, attempt] });
    });
    if (!payment) throw notFound('payment');
    return payment;
  }

  /** Cancels a waiting payment before any money is seen. */
  async cancel(tenant: Tenant, id: string, actor: Actor): Promise<Payment> {
    return this.trigger(tenant, id, { kind: 'cancel' }, actor);
  }

  /** Marks an underpaid or late payment paid (the merchant accepts what arrived). */
  async accept(tenant: Tenant, id: string, actor: Actor): Promise<Payment> {
    return this.trigger(tenant, id, { kind: 'accept' }, actor);
  }

  private async trigger(tenant: Tenant, id: string, trigger: Trigger, actor: Actor): Promise<Payment> {
    const result = await this.engine.locked(tenant, id, async (tx, l) => {
      try {
        const applied = await this.engine.apply(tx, l, trigger);
        await this.deps.audit.record(
          tx,
          tenant,
          actor,
          `payment.${trigger.kind}`,
          { type: 'payment', id },
          { from: l.row.status, to: applied.payment.status },
        );
        return applied.payment;
      } catch (err) {
        throw err instanceof TransitionError ? invalidState(err.message) : err;
      }
    });
    if (!result) throw notFound('payment');
    return result;
  }

  /**
   * A priced coin choice plus a fresh deposit address (index from the sequence, derived by the chain's adapter).
   * The payment URI may carry what a wallet shows the payer: the merchant's name and the payment's description.
   */
  private async issue(
    mode: Mode,
    token: TokenConfig,
    priceCents: number,
    payee: { merchantId: string; merchantName?: string; description: string | null; manual: boolean },
  ): Promise<Issued> {
    const priced = await this.catalogue.price(mode, token, priceCents);
    const [index, label] = await Promise.all([
      this.addressIndexes.next(),
      payee.merchantName ?? merchantName(this.deps.db, payee.merchantId),
    ]);
    const adapter = this.deps.chains.adapter(mode, token.chain);
    // A held coin choice is paid by captures to the escrow's receiver (on the simulator, a keyless address): nobody
    // sends money to it, so it has no payment URI and no watcher follows it (`external`).
    if (payee.manual) {
      const address = adapter.holds?.receiver ?? (await adapter.deriveAddress(index));
      return { ...priced, index, address, uri: null, external: true };
    }
    const address = await adapter.deriveAddress(index);
    return {
      ...priced,
      index,
      address,
      uri: adapter.paymentUri(token, address, priced.payAmount, { label, message: payee.description }),
      external: false,
    };
  }

  /** Lets the coin choice's network record work for its new address, in the transaction that stores the choice. */
  private async addressIssued(tx: Tx, mode: Mode, c: Issued): Promise<void> {
    if (c.external) return;
    await this.deps.chains
      .adapter(mode, c.network.id)
      .addressIssued?.(tx, { token: c.token, address: c.address, index: c.index });
  }

  private attemptRow(paymentId: string, mode: Mode, c: Issued, now: Date): AttemptRow {
    return newAttemptRow(
      newId('att'),
      {
        payment_id: paymentId,
        mode,
        chain: c.network.id,
        token: c.token.id,
        address: c.address,
        address_index: c.index,
        pay_amount: c.payAmount.toString(),
        rate: c.quote.rate,
        rate_source: c.quote.source,
        status: 'waiting',
        confirmation_tier: c.tier,
        confirmations_required: c.confirmations,
        expires_at: new Date(now.getTime() + COIN_HOLD_MS),
        uri: c.uri,
        created_at: now,
      },
      c.external,
    );
  }
}

function assertCanAddAttempt(l: Loaded): void {
  if (isFinal(l.row.status)) throw invalidState(`This payment is ${l.row.status}; no new coin can be chosen.`);
  if (l.attempts.length >= MAX_ATTEMPTS) {
    throw new ApiError(
      'too_many_attempts',
      `A payment has at most ${MAX_ATTEMPTS} coin choices; this one already has ${l.attempts.length}.`,
    );
  }
}
