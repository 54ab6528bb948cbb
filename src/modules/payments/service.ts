/**
 * Payments: creating them, issuing coin choices (attempts), reading and listing them, cancel and accept, the coin
 * catalogue and estimates, balances, and the due-work pass the workers run. Prices are fetched and deposit addresses
 * derived before a transaction opens (never network I/O inside one); every state change goes through
 * `PaymentEngine`. Rules and decisions: docs/payments.md.
 */
import { sql, type RawBuilder } from 'kysely';
import type { Mode, NetworkConfig, TokenConfig } from '../../chains/types.ts';
import { confirmationTier } from '../../chains/networks.ts';
import { decodeCursor, encodeCursor } from '../../core/cursor.ts';
import { ApiError, invalid, invalidState, notFound } from '../../core/errors.ts';
import { ID_PATTERNS, newId } from '../../core/ids.ts';
import { centsToUnits, formatUnits } from '../../core/money.ts';
import { withTx, type DbOrTx, type Tx } from '../../db/index.ts';
import { idempotent, requestHash, validateKey } from '../idempotency/idempotency.ts';
import { assertHttpUrl } from '../merchants/service.ts';
import type { PriceQuote } from '../prices/index.ts';
import { DepositRecorder } from './deposits.ts';
import { PaymentEngine, type PaymentDeps } from './engine.ts';
import { COIN_HOLD_MS, LATE_ACCEPT_WINDOW_MS, MAX_ATTEMPTS, PAYMENT_LIFETIME_MS, type PaymentStatus } from './model.ts';
import { RefundService } from './refunds.ts';
import { Simulator } from './simulator.ts';
import { isFinal, TransitionError, type Trigger } from './state.ts';
import { loadPayment, loadPayments, lockPayment, type AttemptRow, type Loaded, type PaymentJson, type PaymentScope } from './store.ts';

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
  metadata?: Record<string, unknown>;
}

export interface ListQuery {
  order_id?: string;
  status?: PaymentStatus;
  cursor?: string;
  limit?: number;
}

export interface CoinChoice {
  chain?: string;
  token?: string;
}

/** A priced coin choice, computed before any transaction opens. */
interface Prepared {
  network: NetworkConfig;
  token: TokenConfig;
  quote: PriceQuote;
  payAmount: bigint;
  tier: number;
  confirmations: number;
}

/** A prepared choice with its freshly derived deposit address. */
interface Issued extends Prepared {
  index: bigint;
  address: string;
  uri: string | null;
}

export class PaymentService {
  readonly engine: PaymentEngine;
  /** The DepositSink chain watchers report to. */
  readonly deposits: DepositRecorder;
  /** Refunds; also the TransferSink hot-wallet senders report to. */
  readonly refunds: RefundService;
  /** The test-mode simulator. */
  readonly simulator: Simulator;

  constructor(private readonly deps: PaymentDeps) {
    this.engine = new PaymentEngine(deps);
    this.deposits = new DepositRecorder(this.engine);
    this.refunds = new RefundService(this.engine);
    this.simulator = new Simulator(this.engine, this);
  }

  /**
   * Creates a payment (201), or replays the first answer for a repeated Idempotency-Key with the same body (200).
   * With `token` (and optionally `chain`) the first coin choice is issued in the same transaction.
   */
  async create(mode: Mode, merchantId: string, input: CreatePaymentInput, idempotencyKey?: string): Promise<{ status: number; payment: PaymentJson }> {
    const key = validateKey(idempotencyKey);
    for (const field of ['success_url', 'cancel_url', 'webhook_url'] as const) {
      const url = input[field];
      if (url !== undefined) assertHttpUrl(url, field, mode === 'live');
    }
    const metadata = input.metadata ?? {};
    if (Buffer.byteLength(JSON.stringify(metadata), 'utf8') > METADATA_MAX_BYTES) {
      throw invalid(`metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON`, 'metadata');
    }
    const coin = this.resolveCoin(mode, input);
    const scope = { merchantId, mode, key, hash: requestHash('POST', '/v1/payments', input) };
    if (key !== null) {
      const prior = await this.deps.db
        .selectFrom('idempotency_keys')
        .select(['request_hash', 'response_body'])
        .where('merchant_id', '=', merchantId)
        .where('mode', '=', mode)
        .where('key', '=', key)
        .executeTakeFirst();
      if (prior && prior.request_hash !== scope.hash) {
        throw new ApiError('idempotency_conflict', 'This Idempotency-Key was already used with a different request.', 'Idempotency-Key');
      }
      if (prior?.response_body) return { status: 200, payment: prior.response_body as PaymentJson };
    }
    const issued = coin ? await this.issue(mode, coin, input.price_amount, { merchantId, description: input.description ?? null }) : null;
    const now = this.deps.clock.now();
    const insert = async (db: DbOrTx): Promise<PaymentJson> => {
      const row = await db
        .insertInto('payments')
        .values({
          id: newId('pay'),
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
          metadata: JSON.stringify(metadata),
          expires_at: new Date(now.getTime() + PAYMENT_LIFETIME_MS),
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      const attempts = issued ? [await this.insertAttempt(db as Tx, row.id, mode, issued, now)] : [];
      return this.engine.json({ row, attempts, deposits: [] });
    };
    // One INSERT is atomic on its own; a key or a coin choice needs the transaction.
    if (key === null && !issued) return { status: 201, payment: await insert(this.deps.db) };
    const result = await idempotent(this.deps.db, scope, 201, insert);
    return { status: result.status, payment: result.body };
  }

  async get(scope: PaymentScope, id: string): Promise<PaymentJson> {
    const l = await loadPayment(this.deps.db, scope, id);
    if (!l) throw notFound('payment');
    return this.engine.json(l);
  }

  /**
   * A payment by id in either mode, for pages that act for no merchant (hosted checkout, link pages). Continue with
   * `createAttempt({ mode, merchantId: null }, id, choice)` to issue the payer's coin choice.
   */
  async findForCheckout(id: string): Promise<{ mode: Mode; merchantId: string; payment: PaymentJson } | null> {
    const row = await this.deps.db.selectFrom('payments').select(['mode', 'merchant_id']).where('id', '=', id).executeTakeFirst();
    if (!row) return null;
    const l = await loadPayment(this.deps.db, { mode: row.mode, merchantId: row.merchant_id }, id);
    return l ? { mode: row.mode, merchantId: row.merchant_id, payment: this.engine.json(l) } : null;
  }

  /** Newest first; `next_cursor` is opaque and null on the last page. */
  async list(mode: Mode, merchantId: string, q: ListQuery): Promise<{ data: PaymentJson[]; next_cursor: string | null }> {
    const limit = q.limit ?? LIST_LIMIT_DEFAULT;
    let query = this.deps.db.selectFrom('payments').select('id').where('merchant_id', '=', merchantId).where('mode', '=', mode);
    if (q.order_id !== undefined) query = query.where('order_id', '=', q.order_id);
    if (q.status !== undefined) query = query.where('status', '=', q.status);
    if (q.cursor !== undefined) query = query.where('id', '<', decodeCursor(q.cursor, new RegExp(ID_PATTERNS.pay)));
    const rows = await query.orderBy('id', 'desc').limit(limit + 1).execute();
    const page = rows.slice(0, limit).map((r) => r.id);
    const loaded = await loadPayments(this.deps.db, { mode, merchantId }, page);
    return { data: loaded.map((l) => this.engine.json(l)), next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1]!) : null };
  }

  /** Issues a coin choice (a deposit address and an exact amount held for 10 minutes) on a payment. */
  async createAttempt(scope: PaymentScope, id: string, choice: CoinChoice): Promise<PaymentJson> {
    const l = await loadPayment(this.deps.db, scope, id);
    if (!l) throw notFound('payment');
    const coin = this.resolveCoin(scope.mode, choice);
    if (!coin) throw invalid('token is required', 'token');
    assertCanAddAttempt(l);
    const issued = await this.issue(scope.mode, coin, l.row.price_amount, { merchantId: l.row.merchant_id, description: l.row.description });
    const payment = await this.engine.locked(scope, id, async (tx, locked) => {
      assertCanAddAttempt(locked);
      await this.insertAttempt(tx, id, scope.mode, issued, this.deps.clock.now());
      return this.engine.json(await this.engine.reload(tx, locked));
    });
    if (!payment) throw notFound('payment');
    return payment;
  }

  /** Cancels a waiting payment before any money is seen. */
  async cancel(scope: PaymentScope, id: string): Promise<PaymentJson> {
    return this.trigger(scope, id, { kind: 'cancel' });
  }

  /** Marks an underpaid or late payment paid (the merchant accepts what arrived). */
  async accept(scope: PaymentScope, id: string): Promise<PaymentJson> {
    return this.trigger(scope, id, { kind: 'accept' });
  }

  private async trigger(scope: PaymentScope, id: string, trigger: Trigger): Promise<PaymentJson> {
    const result = await this.engine.locked(scope, id, async (tx, l) => {
      try {
        return (await this.engine.apply(tx, l, trigger)).payment;
      } catch (err) {
        throw err instanceof TransitionError ? invalidState(err.message) : err;
      }
    });
    if (!result) throw notFound('payment');
    return result;
  }

  /** What paying `priceCents` in `token` would cost now; the same checks as issuing a coin choice. */
  async estimate(mode: Mode, q: { price_amount: number; price_currency: 'USD'; token: string }) {
    const coin = this.resolveCoin(mode, { token: q.token })!;
    const p = await this.prepare(mode, coin, q.price_amount);
    return {
      token: p.token.id,
      price_amount: q.price_amount,
      price_currency: q.price_currency,
      pay_amount: p.payAmount.toString(),
      pay_amount_display: formatUnits(p.payAmount, p.token.decimals),
      rate: p.quote.rate,
      rate_source: p.quote.source,
      expires_at: new Date(this.deps.clock.now().getTime() + COIN_HOLD_MS).toISOString(),
    };
  }

  /** Every configured coin of the mode with its current rate (null without a fresh one) and whether it is paused. */
  async currencies(mode: Mode) {
    const { chains, prices } = this.deps;
    const tokens = chains.tokens(mode);
    const cold = tokens.filter((t) => !prices.quote(t));
    if (cold.length > 0) await prices.refresh(cold);
    return tokens.map((t) => {
      const q = prices.quote(t);
      return {
        token: t.id,
        chain: t.chain,
        symbol: t.symbol,
        name: t.name,
        decimals: t.decimals,
        min_amount: t.minAmount.toString(),
        min_amount_display: formatUnits(t.minAmount, t.decimals),
        rate: q?.rate ?? null,
        rate_source: q?.source ?? null,
        paused: !chains.available(mode, t.chain),
        gasless: t.gasless,
      };
    });
  }

  /** The merchant's balance: credited US cents, cents on the way, and coins held for it. */
  async balance(mode: Mode, merchantId: string) {
    const { availableUsdCents, custody } = await this.deps.ledger.merchantBalance(mode, merchantId);
    const pending = await this.deps.db
      .selectFrom('payments')
      .select(sql<string>`coalesce(sum(price_amount), 0)`.as('sum'))
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode)
      .where('status', 'in', ['detected', 'confirming'])
      .executeTakeFirstOrThrow();
    return {
      available_usd_cents: Number(availableUsdCents),
      pending_usd_cents: Number(pending.sum),
      custody: custody.map((c) => {
        const t = this.deps.chains.token(mode, c.token);
        const decimals = t?.decimals ?? 0;
        return { token: c.token, chain: c.token.split(':')[0]!, symbol: t?.symbol ?? c.token.split(':')[1]!.toUpperCase(), amount: c.amount.toString(), amount_display: formatUnits(c.amount, decimals) };
      }),
    };
  }

  /**
   * One pass over due work, selected from PostgreSQL with `FOR UPDATE SKIP LOCKED` so several workers share it:
   * expiries (payments after 24 hours, coin holds after 10 minutes), late auto-acceptance, and test-mode simulated
   * refunds. Tests call it after moving the fake clock.
   */
  async runDue(): Promise<{ ticked: number; refunds: number }> {
    const ticked = (await this.deposits.settleMarked()) + (await this.tickDue()) + (await this.tickLate());
    return { ticked, refunds: await this.refunds.settleSimulated() };
  }

  /** Ticks payments whose lifetime or a coin hold ran out. */
  async tickDue(): Promise<number> {
    const now = this.deps.clock.now();
    return this.drain(
      (skip) => sql<{ id: string; mode: Mode }>`
        SELECT p.id, p.mode FROM payments p
        WHERE p.status = 'waiting' AND p.expires_at <= ${now} AND p.id <> ALL(${skip}::text[])
        ORDER BY p.expires_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
      (skip) => sql<{ id: string; mode: Mode }>`
        SELECT p.id, p.mode FROM attempts a JOIN payments p ON p.id = a.payment_id
        WHERE a.status = 'waiting' AND a.expires_at <= ${now} AND p.id <> ALL(${skip}::text[])
        ORDER BY a.expires_at LIMIT 1 FOR UPDATE OF p SKIP LOCKED`,
    );
  }

  /**
   * Ticks late payments whose money may still be auto-accepted (until 24 hours after the payment's lifetime).
   * NOTE: a late payment with a refund requested is the merchant's decision and is never auto-accepted.
   */
  async tickLate(): Promise<number> {
    const since = new Date(this.deps.clock.now().getTime() - LATE_ACCEPT_WINDOW_MS);
    return this.drain(
      (skip) => sql<{ id: string; mode: Mode }>`
        SELECT p.id, p.mode FROM payments p
        WHERE p.status = 'late' AND p.expires_at > ${since} AND p.id <> ALL(${skip}::text[])
          AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = p.id AND r.status <> 'failed')
        ORDER BY p.expires_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
    );
  }

  /** Runs `tick` on each payment the queries yield, one transaction per payment, each payment once per pass. */
  private async drain(...queries: Array<(skip: string[]) => RawBuilder<{ id: string; mode: Mode }>>): Promise<number> {
    const seen: string[] = [];
    for (const query of queries) {
      for (;;) {
        let current: string | null = null;
        try {
          const found = await withTx(this.deps.db, async (tx) => {
            const row = (await query(seen).execute(tx)).rows[0];
            if (!row) return false;
            current = row.id;
            const l = (await lockPayment(tx, { mode: row.mode, merchantId: null }, row.id))!;
            await this.engine.apply(tx, l, { kind: 'tick' });
            return true;
          });
          if (!found) break;
        } catch (err) {
          this.deps.log.error({ err, paymentId: current }, 'payment tick failed');
          if (current === null) break;
        }
        seen.push(current!);
      }
    }
    return seen.length;
  }

  /** Token (and network) named by a choice; 400 for unknown or inconsistent ones. Null when neither is given. */
  resolveCoin(mode: Mode, choice: CoinChoice): TokenConfig | null {
    const { chain, token } = choice;
    if (chain === undefined && token === undefined) return null;
    if (chain !== undefined && !this.deps.chains.network(mode, chain)) throw invalid(`Unknown network "${chain}"; GET /currencies lists them.`, 'chain');
    if (token === undefined) throw invalid('token is required when chain is given', 'token');
    const t = this.deps.chains.token(mode, token);
    if (!t) throw invalid(`Unknown token "${token}"; GET /currencies lists them.`, 'token');
    if (chain !== undefined && t.chain !== chain) throw invalid(`Token ${token} is not on network ${chain}.`, 'token');
    return t;
  }

  /** Prices a coin choice: 503 chain_paused, 503 price_unavailable, 422 amount_too_small. Network I/O; no transaction. */
  private async prepare(mode: Mode, token: TokenConfig, priceCents: number): Promise<Prepared> {
    const network = this.deps.chains.network(mode, token.chain)!;
    if (!this.deps.chains.available(mode, token.chain)) throw new ApiError('chain_paused', `The ${network.name} network is paused; choose another coin.`);
    const quote = await this.deps.prices.quoteFresh(token);
    if (!quote) throw new ApiError('price_unavailable', `No current price for ${token.symbol}; try again shortly or choose another coin.`);
    const payAmount = centsToUnits(priceCents, quote.rate, token.decimals);
    if (payAmount < token.minAmount) {
      throw new ApiError(
        'amount_too_small',
        `${formatUnits(payAmount, token.decimals)} ${token.symbol} is below the minimum of ${formatUnits(token.minAmount, token.decimals)} ${token.symbol} for this coin.`,
      );
    }
    const { tier, confirmations } = confirmationTier(network, priceCents);
    return { network, token, quote, payAmount, tier, confirmations };
  }

  /** `prepare` plus a fresh deposit address (index from the sequence, derived by the chain's adapter). */
  /** `payer` is what a wallet may show with a payment URI: the merchant's name as label, the description as message. */
  private async issue(mode: Mode, token: TokenConfig, priceCents: number, payer: { merchantId: string; description: string | null }): Promise<Issued> {
    const prepared = await this.prepare(mode, token, priceCents);
    const { rows } = await sql<{ index: bigint }>`SELECT nextval('deposit_address_index') AS index`.execute(this.deps.db);
    const index = rows[0]!.index;
    const adapter = this.deps.chains.adapter(mode, token.chain);
    const address = await adapter.deriveAddress(index);
    const merchant = await this.deps.db.selectFrom('merchants').select('name').where('id', '=', payer.merchantId).executeTakeFirst();
    return { ...prepared, index, address, uri: adapter.paymentUri(token, address, prepared.payAmount, { label: merchant?.name ?? null, message: payer.description }) };
  }

  private async insertAttempt(db: Tx, paymentId: string, mode: Mode, c: Issued, now: Date): Promise<AttemptRow> {
    await this.deps.chains.adapter(mode, c.network.id).addressIssued?.(db, { token: c.token, address: c.address, index: c.index });
    return db
      .insertInto('attempts')
      .values({
        id: newId('att'),
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
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }
}

function assertCanAddAttempt(l: Loaded): void {
  if (isFinal(l.row.status as PaymentStatus)) throw invalidState(`This payment is ${l.row.status}; no new coin can be chosen.`);
  if (l.attempts.length >= MAX_ATTEMPTS) {
    throw new ApiError('too_many_attempts', `A payment has at most ${MAX_ATTEMPTS} coin choices; this one already has ${l.attempts.length}.`);
  }
}
