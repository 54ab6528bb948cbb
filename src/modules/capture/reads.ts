/**
 * What the dashboard reads of holds: the holds a merchant can still act on, with what can be captured and until when
 * (docs/capture.md); and what a manual payment's settled captures moved, which the service's checks share.
 */
import type { Tenant } from '../../core/tenant.ts';
import type { Loaded, PaymentEngine } from '../payments/index.ts';
import { authorizedHoldPayments, holdOperations, paymentHold } from './store.ts';
import { refundOpen } from '../refunds/index.ts';

/** A hold a merchant can still act on, as the dashboard lists it. */
export interface OpenHold {
  paymentId: string;
  orderId: string;
  /** US cents that can still be captured now (authorized − captured − captures in flight). */
  capturableCents: number;
  capturedCents: number;
  captureBefore: Date;
  /** A void is on its way: nothing can be captured any more. */
  voiding: boolean;
  /** The uncaptured rest can be voided now (no capture or void of it in flight; also after a refund). */
  voidable: boolean;
}

/** A merchant's holds that can still be acted on, nearest deadline first (at most `limit`). */
export async function openHolds(engine: PaymentEngine, tenant: Tenant, limit: number): Promise<OpenHold[]> {
  const ids = await authorizedHoldPayments(engine.deps.db, tenant, limit);
  const open = await Promise.all(ids.map((id) => openHold(engine, tenant, id)));
  return open.filter((h): h is OpenHold => h !== null);
}

/** What can still be captured of a merchant's payment, and until when; null when it has no hold to act on. */
export async function openHold(engine: PaymentEngine, tenant: Tenant, paymentId: string): Promise<OpenHold | null> {
  const l = await engine.load(tenant, paymentId);
  if (!l) return null;
  const hold = await paymentHold(engine.deps.db, paymentId);
  if (!hold || hold.status !== 'authorized') return null;
  // A refunded payment's hold is captured no more, but its rest can still go back to the payer.
  const refunded = l.row.status === 'refunded';
  if (l.row.status !== 'authorized' && l.row.status !== 'paid' && !refunded) return null;
  const ops = await holdOperations(engine.deps.db, hold.id);
  const { cents } = capturesOf(l);
  const pending = ops.filter((o) => o.kind === 'capture' && o.status === 'pending');
  const voiding = ops.some((o) => o.kind === 'void' && o.status === 'pending');
  // A capture waits for a refund on its way (the service refuses it until then).
  const refunding = !refunded && (await refundOpen(engine.deps.db, paymentId));
  return {
    paymentId,
    orderId: l.row.order_id,
    capturableCents:
      voiding || refunded || refunding
        ? 0
        : l.row.price_amount - cents - pending.reduce((s, o) => s + o.amount_cents!, 0),
    capturedCents: cents,
    captureBefore: hold.capture_before,
    voiding,
    voidable: !voiding && pending.length === 0 && BigInt(hold.amount) > BigInt(hold.captured),
  };
}

/** What a manual payment's settled captures moved: US cents and smallest units (its deposits are its captures). */
export function capturesOf(l: Loaded): { cents: number; units: bigint } {
  let cents = 0;
  let units = 0n;
  for (const d of l.deposits) {
    if (d.status === 'orphaned') continue;
    if (d.value_cents === null) throw new Error(`capture ${d.id} of payment ${l.row.id} has no value in cents`);
    cents += Number(d.value_cents);
    units += BigInt(d.amount);
  }
  return { cents, units };
}
