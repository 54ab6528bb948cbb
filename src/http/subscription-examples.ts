/**
 * The subscription objects' examples in the API reference (src/http/examples.ts tells the whole story): the period's
 * invoice, and under automatic collection the payer's grant in force and the first period's charge under it.
 */
export const PAYMENT_ID = 'pay_01JQ3T8R6W4Z5X2K9M7N1P0B3CA7Q2M4N8VX';
export const TX_HASH = '0x6f1d4a0c2b9e8d7f3a5c1e0b9d8f7a6c5e4d3b2a1f0e9d8c7b6a5f4e3d2c1b0a';
export const SUBSCRIPTION_ID = 'sub_01JQ3X9M2P4R6T8V0X2Z4B6D8F';

const subscriptionInvoice = {
  payment_id: PAYMENT_ID,
  period: 1,
  status: 'paid',
  amount_usd_cents: 2400,
  checkout_url: `https://pay.example.com/p/${PAYMENT_ID}`,
  created_at: '2026-03-01T09:00:00.000Z',
  expires_at: '2026-03-02T09:00:00.000Z',
  paid_at: '2026-03-01T09:04:12.000Z',
};

const subscriptionGrant = {
  status: 'active',
  token: 'base:usdc',
  payer: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D',
  amount_per_period: '24000000',
  period_seconds: 2419200,
  expires_at: '2027-03-01T09:00:00.000Z',
  granted_at: '2026-03-01T09:02:40.000Z',
  charges: 1,
  next_charge_at: '2026-04-01T09:00:00.000Z',
};

const subscriptionCharge = {
  id: 'chg_01JQ3X9Q0A2C4E6G8J0L2N4Q6S',
  period: 1,
  attempt: 1,
  status: 'succeeded',
  amount: '24000000',
  token: 'base:usdc',
  payment_id: PAYMENT_ID,
  transaction: TX_HASH,
  failure_reason: null,
  failure_message: null,
  created_at: '2026-03-01T09:02:41.000Z',
  settled_at: '2026-03-01T09:03:05.000Z',
};

export const SUBSCRIPTION_SCHEMA_EXAMPLES: Record<string, unknown> = {
  SubscriptionInvoice: subscriptionInvoice,
  SubscriptionGrant: subscriptionGrant,
  SubscriptionCharge: subscriptionCharge,
  Subscription: {
    id: SUBSCRIPTION_ID,
    merchant_id: 'mer_01JQ3S0F4B7N2C9X5K8M1P6R3T',
    customer: { email: 'asha@example.com', name: 'Asha' },
    title: 'Coffee beans, monthly',
    amount_usd_cents: 2400,
    interval: 'month',
    interval_count: 1,
    grace_days: 3,
    status: 'active',
    started_at: '2026-03-01T09:00:00.000Z',
    next_due_at: '2026-04-01T09:00:00.000Z',
    periods_invoiced: 1,
    periods_paid: 1,
    last_payment_id: PAYMENT_ID,
    success_url: 'https://shop.example.com/subscriptions/thanks',
    metadata: { customer_id: 'cus_42' },
    cancelled_at: null,
    cancellation_reason: null,
    created_at: '2026-03-01T09:00:00.000Z',
    collection: 'charge_automatically',
    grant: subscriptionGrant,
    charges: [subscriptionCharge],
    invoices: [subscriptionInvoice],
  },
};
