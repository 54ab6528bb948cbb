/**
 * Monthly statements (UTC months), computed from the ledger: one pass over the month's postings of the merchant,
 * grouped by kind, coin, account and currency, the balance at the month's start (from a checkpoint), and what is held
 * in suspense at the end. `reconciliation_gap_usd_cents` recomputes the month from the operational records (the payment
 * event log, sent refunds, payouts) and compares it with the ledger's movement of the balance. How each figure is
 * computed, with a worked example: docs/statements.md.
 */
import type { Tenant } from '../../core/tenant.ts';
import { sql } from 'kysely';
import type { ChainRegistry } from '../../chains/registry.ts';
import type { Mode } from '../../core/mode.ts';
import type { Clock } from '../../core/clock.ts';
import { invalid } from '../../core/errors.ts';
import { formatUnits } from '../../core/money.ts';
import type { Db } from '../../db/index.ts';
import {
  accounts,
  balanceBefore,
  CREDIT_KINDS,
  firstPosting,
  heldAt,
  PAYOUT_KINDS,
  type PostingGroup,
  postingGroups,
  REVERSAL_KINDS,
  USD,
} from '../ledger/index.ts';
import { NO_CAPTURES, NO_PAYOUTS, type CaptureRecords, type PayoutRecords } from './payouts.ts';

export interface Statement {
  month: string;
  from: string;
  to: string;
  opening_balance_usd_cents: number;
  closing_balance_usd_cents: number;
  clawback_change_usd_cents: number;
  reconciliation_gap_usd_cents: number;
  payments: { count: number; gross_usd_cents: number };
  credits: { count: number; value_usd_cents: number; fee_usd_cents: number; net_usd_cents: number };
  held: { count: number; value_usd_cents: number };
  conversions: {
    count: number;
    value_usd_cents: number;
    swap_fee_usd_cents: number;
    fee_usd_cents: number;
    net_usd_cents: number;
  };
  reversals: { count: number; net_usd_cents: number };
  payouts: {
    count: number;
    usd_cents: number;
    requested_count: number;
    requested_usd_cents: number;
    items: Array<{
      id: string;
      sent_at: string;
      usd_cents: number;
      token: string;
      symbol: string;
      amount_display: string;
      destination: string;
      tx_hash: string | null;
    }>;
  };
  by_coin: Array<{
    token: string;
    symbol: string;
    chain: string;
    payments: number;
    received_display: string;
    value_usd_cents: number;
  }>;
}

export interface StatementDeps {
  db: Db;
  clock: Clock;
  chains: ChainRegistry;
}

/** First instants of a `YYYY-MM` month and of the next; 400 on `month` when malformed. */
export function monthRange(month: string): { from: Date; end: Date } {
  const m = /^(\d{4})-(\d{2})$/.exec(month);
  const year = m ? Number(m[1]) : 0;
  const mon = m ? Number(m[2]) : 0;
  if (!m || mon < 1 || mon > 12 || year < 1970)
    throw invalid('month must be a month as YYYY-MM (UTC), e.g. 2026-03', 'month');
  return { from: new Date(Date.UTC(year, mon - 1, 1)), end: new Date(Date.UTC(year, mon, 1)) };
}

const n = (v: bigint) => Number(v);

export class StatementService {
  private payoutRecords: PayoutRecords = NO_PAYOUTS;
  private captureRecords: CaptureRecords = NO_CAPTURES;

  constructor(private readonly deps: StatementDeps) {}

  /** Where statements read payouts' operational records (the disbursements module plugs its own in). */
  usePayouts(records: PayoutRecords): void {
    this.payoutRecords = records;
  }

  /** Where statements read held payments' captures (the capture module plugs its own in). */
  useCaptures(records: CaptureRecords): void {
    this.captureRecords = records;
  }

  /** When the merchant's first posting in the mode was made (the first month with a statement to show), or null. */
  firstPosting(tenant: Tenant): Promise<Date | null> {
    return firstPosting(this.deps.db, tenant);
  }

  /** The statement of `month` for a merchant; the month in progress runs to now, a month in the future is 400. */
  async get(tenant: Tenant, month: string): Promise<Statement> {
    const { mode, merchantId } = tenant;
    const { from, end } = monthRange(month);
    const now = this.deps.clock.now();
    if (from > now) throw invalid(`month ${month} has not begun`, 'month');
    // biome-ignore lint/complexity/useMathMinMax: Dates, which Math.min/max would turn into numbers
    const to = end <= now ? end : now;
    // Postings are stamped with the clock: the month in progress includes those made at this very millisecond.
    const until = end <= now ? end : new Date(now.getTime() + 1);
    const merchant = accounts.merchant(mode, merchantId);

    const [groups, openingDebit, held, operational, payoutItems] = await Promise.all([
      postingGroups(this.deps.db, tenant, from, until),
      balanceBefore(this.deps.db, merchant, USD, from, now),
      heldAt(this.deps.db, tenant, until),
      this.operational(tenant, from, until),
      this.payoutRecords.sent(tenant, from, until),
    ]);

    const pick = (kinds: readonly string[], account: string, currency = USD) =>
      groups.filter((g) => kinds.includes(g.kind) && g.account === account && g.currency === currency);
    const total = (gs: PostingGroup[]) => gs.reduce((s, g) => s + g.sum, 0n);
    const count = (gs: PostingGroup[]) => gs.reduce((s, g) => s + g.n, 0);
    const settlement = accounts.settlement(mode);
    const fees = accounts.fees(mode);
    const conversion = accounts.conversion(mode);
    const payouts = accounts.payouts(mode);

    const custody = accounts.custody(mode, merchantId);
    // A credit is counted by its coins taken into custody: one worth less than a cent (an x402 payment of $0.001,
    // docs/x402.md) posts coins but no cents.
    const coinsIn = (g: PostingGroup) => g.account === custody && g.currency === g.token;
    const credit = (kind: string) => ({
      count: count(groups.filter((g) => g.kind === kind && coinsIn(g))),
      value: total(pick([kind], settlement)),
      fee: -total(pick([kind], fees)),
      swap: -total(pick([kind], conversion)),
      net: -total(pick([kind], merchant)),
    });
    const credits = credit('payment_credit');
    const conversions = credit('payment_conversion');
    const reversals = pick(REVERSAL_KINDS, merchant);
    const released = pick([PAYOUT_KINDS.release], merchant);
    const sent = pick([PAYOUT_KINDS.sent], payouts);

    // Fees and spreads the ledger charged (less those given back with reversals) on this merchant's postings.
    const charged = -total(
      groups.filter((g) => (g.account === fees || g.account === conversion) && g.currency === USD),
    );
    // Every line on a merchant's balance is in one of its postings (LedgerService.post refuses others).
    const movement = -total(groups.filter((g) => g.account === merchant && g.currency === USD));
    const balances = { opening: -openingDebit, closing: -openingDebit + movement };
    const expected = operational.credited - operational.reversed - operational.payoutsTaken - charged;

    const coins = new Map<string, { payments: number; received: bigint; value: bigint }>();
    for (const g of groups) {
      if (!(CREDIT_KINDS as readonly string[]).includes(g.kind) || g.token === null) continue;
      const c = coins.get(g.token) ?? { payments: 0, received: 0n, value: 0n };
      if (g.account === settlement && g.currency === USD) c.value += g.sum;
      else if (coinsIn(g)) {
        c.payments += g.n;
        c.received += g.sum;
      }
      coins.set(g.token, c);
    }

    return {
      month,
      from: from.toISOString(),
      to: to.toISOString(),
      opening_balance_usd_cents: n(balances.opening),
      closing_balance_usd_cents: n(balances.closing),
      clawback_change_usd_cents: n(below(balances.closing) - below(balances.opening)),
      reconciliation_gap_usd_cents: n(movement - expected),
      payments: { count: credits.count + conversions.count, gross_usd_cents: n(credits.value + conversions.value) },
      credits: {
        count: credits.count,
        value_usd_cents: n(credits.value),
        fee_usd_cents: n(credits.fee),
        net_usd_cents: n(credits.net),
      },
      held: { count: held.count, value_usd_cents: n(held.value) },
      conversions: {
        count: conversions.count,
        value_usd_cents: n(conversions.value),
        swap_fee_usd_cents: n(conversions.swap),
        fee_usd_cents: n(conversions.fee),
        net_usd_cents: n(conversions.net),
      },
      reversals: { count: count(reversals), net_usd_cents: n(total(reversals)) },
      payouts: {
        count: count(sent),
        usd_cents: n(total(sent)),
        requested_count: count(released),
        requested_usd_cents: n(total(released)),
        items: payoutItems.map((p) => {
          const meta = this.coin(mode, p.token);
          return {
            id: p.id,
            sent_at: p.sentAt.toISOString(),
            usd_cents: n(BigInt(p.usdCents)),
            token: p.token,
            symbol: meta.symbol,
            amount_display: formatUnits(p.amount, meta.decimals),
            destination: p.destination,
            tx_hash: p.txHash,
          };
        }),
      },
      by_coin: [...coins]
        .filter(([, c]) => c.payments > 0)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([token, c]) => {
          const meta = this.coin(mode, token);
          return {
            token,
            symbol: meta.symbol,
            chain: meta.chain,
            payments: c.payments,
            received_display: formatUnits(c.received, meta.decimals),
            value_usd_cents: n(c.value),
          };
        }),
    };
  }

  /** Symbol, network and decimals of a token id; ids no longer configured fall back to the id's parts. */
  private coin(mode: Mode, token: string): { symbol: string; chain: string; decimals: number } {
    const t = this.deps.chains.token(mode, token);
    const [chain = token, symbol = token] = token.split(':');
    return t
      ? { symbol: t.symbol, chain: t.chain, decimals: t.decimals }
      : { symbol: symbol.toUpperCase(), chain, decimals: 0 };
  }

  /**
   * The month from the operational records alone, in US cents at the value credited (the price, or what a payment
   * paid short within the tolerance was credited at): payments that became paid (event
   * `payment.paid`; a held payment by each capture that settled), credits undone by a reorg (`payment.reorged`) or by a sent refund of a payment that had been
   * paid, and what payouts took from the balance.
   */
  private async operational(
    tenant: Tenant,
    from: Date,
    to: Date,
  ): Promise<{ credited: bigint; reversed: bigint; payoutsTaken: bigint }> {
    const { mode, merchantId } = tenant;
    const [events, refunds, payouts, captured] = await Promise.all([
      // A held payment (capture_method manual) is credited by its captures, counted below, not by its payment.paid.
      sql<{ type: string; sum: string }>`
        SELECT e.type, coalesce(sum(coalesce(p.credited_cents, p.price_amount)), 0)::text AS sum
        FROM events e JOIN payments p ON p.id = e.ordering_key
        WHERE e.merchant_id = ${merchantId} AND e.mode = ${mode} AND e.type IN ('payment.paid', 'payment.reorged')
          AND e.created_at >= ${from} AND e.created_at < ${to} AND p.capture_method = 'automatic'
        GROUP BY 1`.execute(this.deps.db),
      sql<{ sum: string }>`
        SELECT coalesce(sum(coalesce(p.credited_cents, p.price_amount)), 0)::text AS sum
        FROM refunds r JOIN payments p ON p.id = r.payment_id
        WHERE r.merchant_id = ${merchantId} AND r.mode = ${mode} AND r.status = 'sent' AND p.paid_at IS NOT NULL
          AND r.settled_at >= ${from} AND r.settled_at < ${to}`.execute(this.deps.db),
      this.payoutRecords.totals(tenant, from, to),
      this.captureRecords.capturedCents(tenant, from, to),
    ]);
    const of = (type: string) => BigInt(events.rows.find((r) => r.type === type)?.sum ?? 0);
    return {
      credited: of('payment.paid') + captured,
      reversed: of('payment.reorged') + BigInt(refunds.rows[0]!.sum),
      payoutsTaken: payouts.releasedUsdCents - payouts.failedUsdCents,
    };
  }
}

/** The part of a balance below zero, as a positive amount. */
function below(balance: bigint): bigint {
  return balance < 0n ? -balance : 0n;
}
