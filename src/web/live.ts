/**
 * Live status for payers: the public read of a payment (no merchant key; the unguessable payment id is the
 * capability) and the change feed behind `GET /p/<id>/events`.
 *
 * The feed is driven by PostgreSQL alone: one timer per process polls a fingerprint of every watched payment (status,
 * attempt statuses, deposit statuses and confirmations) in a single query each second, and wakes the streams of the
 * payments whose fingerprint moved. Nothing but the list of open connections lives in memory, so a restart loses
 * nothing: browsers reconnect and are sent the current state.
 */
import { sql } from 'kysely';
import type { Mode } from '../core/mode.ts';
import { ID_PATTERNS } from '../core/ids.ts';
import type { Kasse } from '../kasse.ts';
import type { PaymentJson } from '../modules/payments/store.ts';

/** How often watched payments are read from PostgreSQL. */
export const POLL_INTERVAL_MS = 1000;

export interface PublicPayment {
  mode: Mode;
  merchantName: string;
  payment: PaymentJson;
}

const PAY_ID = new RegExp(ID_PATTERNS.pay);

/** A payment by id alone, with its mode and the merchant's display name; null when there is none. */
export async function findPublicPayment(kasse: Kasse, id: string): Promise<PublicPayment | null> {
  if (!PAY_ID.test(id)) return null;
  const row = await kasse.db
    .selectFrom('payments')
    .innerJoin('merchants', 'merchants.id', 'payments.merchant_id')
    .select(['payments.mode', 'merchants.name'])
    .where('payments.id', '=', id)
    .executeTakeFirst();
  if (!row) return null;
  return { mode: row.mode, merchantName: row.name, payment: await kasse.payments.get({ mode: row.mode, merchantId: null }, id) };
}

type Listener = () => void;

/** One poller per process over every payment someone is watching. */
export class PaymentWatch {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly last = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;

  constructor(
    private readonly kasse: Kasse,
    private readonly intervalMs = POLL_INTERVAL_MS,
  ) {}

  /**
   * Calls `listener` whenever the payment's stored state may have changed (and once after the first poll); returns
   * the unsubscribe function. Subscribe before reading the state to show, so no change falls between the two.
   */
  subscribe(id: string, listener: Listener): () => void {
    let set = this.listeners.get(id);
    if (!set) this.listeners.set(id, (set = new Set()));
    set.add(listener);
    if (!this.timer) {
      this.timer = setInterval(() => void this.poll(), this.intervalMs);
      this.timer.unref();
    }
    return () => {
      set.delete(listener);
      if (set.size === 0) {
        this.listeners.delete(id);
        this.last.delete(id);
      }
      if (this.listeners.size === 0) this.stop();
    };
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async poll(): Promise<void> {
    if (this.polling || this.listeners.size === 0) return;
    this.polling = true;
    try {
      const ids = [...this.listeners.keys()];
      const { rows } = await sql<{ id: string; fp: string }>`
        SELECT p.id, p.status || '|' ||
          coalesce((SELECT string_agg(a.id || ':' || a.status, ',' ORDER BY a.id) FROM attempts a WHERE a.payment_id = p.id), '') || '|' ||
          coalesce((SELECT string_agg(d.id || ':' || d.status || ':' || d.confirmations, ',' ORDER BY d.id) FROM deposits d WHERE d.payment_id = p.id), '') AS fp
        FROM payments p WHERE p.id = ANY(${ids}::text[])`.execute(this.kasse.db);
      for (const { id, fp } of rows) {
        const before = this.last.get(id);
        this.last.set(id, fp);
        // The first reading notifies too: a change between a stream's own first read and this poll is not missed.
        if (before !== fp) for (const l of this.listeners.get(id) ?? []) l();
      }
    } catch (err) {
      this.kasse.log.warn({ err }, 'checkout status poll failed');
    } finally {
      this.polling = false;
    }
  }
}
