/**
 * Reads for the merchant dashboard: payments searched by more than the API's filters (creation date, coin), the fee
 * and net each payment credited (from the ledger), and the paid volume per day for the Home chart. Scoped by the tenant like every read; uses the same loading and
 * rendering as the API, so the dashboard shows exactly the Payment the API would.
 */
import type { Tenant } from '../../core/tenant.ts';
import { pageOf } from '../../core/cursor.ts';
import type { PaymentCreditTotals } from '../ledger/index.ts';
import type { PaymentEngine } from './engine.ts';
import type { PaymentStatus } from './model.ts';
import type { Payment } from './schema.ts';
import { loadPayments } from './store/payments.ts';
import { paidVolume, searchPaymentIds } from './store/reads.ts';

export interface PaymentSearch {
  status?: PaymentStatus;
  order_id?: string;
  /** Created at or after. */
  from?: Date;
  /** Created before. */
  to?: Date;
  /** Payments with a coin choice in this token. */
  token?: string;
  /** `x402`: only payments the x402 facilitator settled. */
  source?: 'x402';
  cursor?: string;
  limit?: number;
}

export interface DayVolume {
  /** UTC day, YYYY-MM-DD. */
  day: string;
  cents: number;
  count: number;
}

export class PaymentReports {
  constructor(private readonly engine: PaymentEngine) {}

  /** Newest first, like GET /payments; `next_cursor` null on the last page. */
  async search(tenant: Tenant, q: PaymentSearch): Promise<{ data: Payment[]; next_cursor: string | null }> {
    const { db } = this.engine.deps;
    const limit = q.limit ?? 25;
    const rows = await searchPaymentIds(db, tenant, { ...q, limit });
    const { page, next_cursor } = pageOf(rows, limit, (id) => id);
    const loaded = await loadPayments(db, tenant, page);
    return {
      data: loaded.map((l) => this.engine.json(l)),
      next_cursor,
    };
  }

  /** The fee and the net credited of each payment that was credited (the ledger's figures; absent when never credited). */
  credits(tenant: Tenant, paymentIds: string[]): Promise<Map<string, PaymentCreditTotals>> {
    return this.engine.deps.ledger.paymentCredits(tenant, paymentIds);
  }

  /** Paid price per UTC day for the `days` days ending with `now`'s day (every day present, zero when none). */
  async paidVolumeByDay(tenant: Tenant, days: number, now: Date): Promise<DayVolume[]> {
    const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) + 86_400_000;
    const start = end - days * 86_400_000;
    const rows = await paidVolume(this.engine.deps.db, tenant, new Date(start), new Date(end));
    const byDay = new Map(rows.map((r) => [r.day, r]));
    return Array.from({ length: days }, (_, i) => {
      const day = new Date(start + i * 86_400_000).toISOString().slice(0, 10);
      const r = byDay.get(day);
      return { day, cents: r ? Number(r.cents) : 0, count: r ? Number(r.count) : 0 };
    });
  }
}
