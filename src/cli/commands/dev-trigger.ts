/**
 * `kasse trigger EVENT`: creates a test payment through the public test API and drives it with the simulator (or the
 * operation that causes the event), so the real event is published — to the webhook URL and to `kasse listen`.
 * `--override FIELD=VALUE` changes the created payment (`price_amount=5000`, `metadata.customer=42`).
 */
import type { Kasse, Payment } from '../../../sdk/src/index.ts';
import { UsageError } from '../../core/flags.ts';
import { remote } from './dev-remote.ts';

type Step = (kasse: Kasse, payment: Payment) => Promise<Payment>;

const simulate =
  (outcome: 'paid' | 'underpaid' | 'expired' | 'late' | 'wrong_asset'): Step =>
  (kasse, p) =>
    kasse.testHelpers.payments.simulate(p.id, { outcome });

/** How long a triggered refund may take to be sent (test mode settles it on the workers' next pass). */
const REFUND_WAIT_MS = 60_000;

/** Every event `kasse trigger` can fire, and how. */
export const TRIGGERS: Record<string, Step> = {
  'payment.paid': simulate('paid'),
  'payment.underpaid': simulate('underpaid'),
  'payment.expired': simulate('expired'),
  'payment.late': simulate('late'),
  'payment.wrong_asset': simulate('wrong_asset'),
  'payment.cancelled': (kasse, p) => kasse.payments.cancel(p.id),
  // Paid, then refunded to the payment's own deposit address: a valid address on any network that returns the
  // money to Kasse should a test network really send it.
  'payment.refunded': async (kasse, p) => {
    const paid = await kasse.testHelpers.payments.simulate(p.id, { outcome: 'paid' });
    const attempt = paid.attempts.find((a) => a.id === paid.paid_attempt_id)!;
    await kasse.payments.refund(p.id, { destination: attempt.address, note: 'kasse trigger payment.refunded' });
    const deadline = Date.now() + REFUND_WAIT_MS;
    for (;;) {
      const now = await kasse.payments.retrieve(p.id);
      if (now.status === 'refunded' || Date.now() > deadline) return now;
      await new Promise((r) => setTimeout(r, 500));
    }
  },
};

/** Fields `--override` may set, with how their value is read. */
const FIELDS: Record<string, (v: string) => unknown> = {
  price_amount: (v) => {
    if (!/^\d+$/.test(v))
      throw new UsageError(`--override price_amount must be whole US cents, e.g. price_amount=2500`);
    return Number(v);
  },
  order_id: String,
  description: String,
  chain: String,
  token: String,
  success_url: String,
  cancel_url: String,
  webhook_url: String,
};

/** The payment to create: defaults, then each `FIELD=VALUE` (`metadata.KEY=VALUE` sets a metadata string). */
export function paymentBody(
  event: string,
  overrides: string[],
): Record<string, unknown> & { metadata: Record<string, unknown> } {
  const body = {
    price_amount: 2500,
    price_currency: 'USD',
    order_id: `trigger-${Date.now().toString(36)}`,
    description: `kasse trigger ${event}`,
    metadata: { kasse_trigger: event } as Record<string, unknown>,
  } as Record<string, unknown> & { metadata: Record<string, unknown> };
  for (const o of overrides) {
    const eq = o.indexOf('=');
    if (eq < 1) throw new UsageError(`--override takes FIELD=VALUE, got "${o}"`);
    const field = o.slice(0, eq);
    const value = o.slice(eq + 1);
    if (field.startsWith('metadata.') && field.length > 'metadata.'.length)
      body.metadata[field.slice('metadata.'.length)] = value;
    else if (FIELDS[field]) body[field] = FIELDS[field](value);
    else
      throw new UsageError(
        `--override cannot set "${field}"; it sets ${[...Object.keys(FIELDS), 'metadata.KEY'].join(', ')}`,
      );
  }
  return body;
}

export async function trigger(f: Record<string, unknown>, positionals: string[]): Promise<number> {
  const event = positionals[0];
  if (!event || !TRIGGERS[event])
    throw new UsageError(`give the event to trigger: ${Object.keys(TRIGGERS).join(', ')}`);
  const body = paymentBody(event, (f.override as string[] | undefined) ?? []);
  const { kasse } = remote(f);
  const created = await kasse.payments.create(body as never);
  const payment = await TRIGGERS[event]!(kasse, created);
  // The event was published in the same transaction as the change (a refund: when the workers sent it).
  const recent = await kasse.events.list({ type: event, limit: 20 });
  const eventId = recent.data.find((e) => (e.data as { id?: string }).id === payment.id)?.id ?? null;
  if (f.json) {
    process.stdout.write(`${JSON.stringify({ event, event_id: eventId, payment })}\n`);
  } else if (eventId) {
    process.stdout.write(
      `Triggered ${event}: ${eventId} for ${payment.id} (${payment.status}, ${payment.price_amount} cents, order ${payment.order_id})\n`,
    );
  } else {
    process.stdout.write(
      `${payment.id} is ${payment.status}; ${event} has not been published yet (a refund is sent by Kasse's workers: is the server running them?)\n`,
    );
  }
  return eventId ? 0 : 1;
}
