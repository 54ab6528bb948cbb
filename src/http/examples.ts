/**
 * Examples shown in the API reference and carried by the OpenAPI document: one per component schema (by its name),
 * one per request body (by operation id), one per query parameter (by name) and one per error code. They tell one
 * story — order 1001, two mugs for 25.00 USD paid in USDC on Base — so a reader can follow an object from request to
 * webhook.
 *
 * They live apart from the schemas so that a schema can move or change without touching them; the OpenAPI test
 * validates every example against its schema and fails when a component, request body or success response has none.
 */
import type { ErrorCode } from '../core/errors.ts';
import { LINK_DECLARATION } from '../modules/x402/index.ts';
import { CAPTURE_REQUEST_EXAMPLES, CAPTURE_SCHEMA_EXAMPLES } from './capture-examples.ts';
import { PAYMENT_ID, SUBSCRIPTION_ID, SUBSCRIPTION_SCHEMA_EXAMPLES, TX_HASH } from './subscription-examples.ts';

const ATTEMPT_ID = 'att_01JQ3T9A2B3C4D5E6F7G8H9J0K';
const EVENT_ID = 'evt_01JQ3TB6Y2M0R8WQ4C1ZK5N7HD';
const ADDRESS = '0x39065a69608C0DA67c7D106301c1195C221a1802';

const deposit = {
  tx_hash: TX_HASH,
  token: 'base:usdc',
  amount: '25000000',
  amount_display: '25',
  from: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D',
  block_number: '23145678',
  status: 'final',
  confirmations: 12,
  explorer_url: `https://basescan.org/tx/${TX_HASH}`,
};

const attempt = {
  id: ATTEMPT_ID,
  chain: 'base',
  token: 'base:usdc',
  symbol: 'USDC',
  address: ADDRESS,
  pay_amount: '25000000',
  pay_amount_display: '25',
  received_amount: '25000000',
  received_amount_display: '25',
  rate: '1',
  rate_source: 'peg',
  status: 'paid',
  overpaid: false,
  wrong_asset: false,
  confirmation_tier: 1,
  confirmations_required: 5,
  expires_at: '2026-03-01T12:10:00.000Z',
  uri: `ethereum:0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913@8453/transfer?address=${ADDRESS}&uint256=25000000`,
  deposits: [deposit],
};

const payment = {
  id: PAYMENT_ID,
  status: 'paid',
  price_amount: 2500,
  price_currency: 'USD',
  order_id: '1001',
  description: 'Two mugs',
  checkout_url: `https://checkout.example.com/p/${PAYMENT_ID}`,
  expires_at: '2026-03-02T12:00:00.000Z',
  paid_at: '2026-03-01T12:04:12.000Z',
  paid_attempt_id: ATTEMPT_ID,
  success_url: 'https://shop.example.com/orders/1001/thanks',
  cancel_url: 'https://shop.example.com/cart',
  metadata: { customer_id: 'cus_42' },
  created_at: '2026-03-01T12:00:00.000Z',
  attempts: [attempt],
};

const webhookAttempt = {
  attempt: 1,
  started_at: '2026-03-01T12:04:12.000Z',
  duration_ms: 84,
  outcome: 'delivered',
  http_status: 200,
  error: null,
  response_body: '{"received":true}',
};

const delivery = {
  id: 'dlv_01JQ3TB6Y2M0R8WQ4C1ZK5N7HE',
  url: 'https://shop.example.com/hooks/kasse',
  status: 'delivered',
  attempt_count: 1,
  next_attempt_at: null,
  delivered_at: '2026-03-01T12:04:12.084Z',
  created_at: '2026-03-01T12:04:12.000Z',
  attempts: [webhookAttempt],
};

const taxProfile = {
  seller_name: 'Corner Café',
  legal_name: 'Corner Cafe Private Limited',
  tax_id: '27AAPFU0939F1ZV',
  address: '12 Hill Road, Bandra West, Mumbai 400050',
  state_code: '27',
  invoice_prefix: 'KS',
  sac: '997158',
  tax_rate_bps: 1800,
  tax_inclusive: true,
};

const event = { id: EVENT_ID, type: 'payment.paid', created_at: '2026-03-01T12:04:12.000Z', data: payment };

/** Examples of the component schemas, by schema name. */
export const SCHEMA_EXAMPLES: Record<string, unknown> = {
  ...CAPTURE_SCHEMA_EXAMPLES,
  X402Details: {
    resource: 'https://api.example.com/weather',
    description: 'Weather report',
    payer: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    network: 'eip155:8453',
    transaction: `0x${'c4'.repeat(32)}`,
    simulated: false,
    amount_usd: '0.001',
  },
  X402VerifyResponse: { isValid: true, payer: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' },
  X402SettleResponse: {
    success: true,
    payer: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    transaction: `0x${'c4'.repeat(32)}`,
    network: 'eip155:8453',
    amount: '1000',
    extra: { payment_id: 'pay_01JQ3S0F4B7N2C9X5K8M1P6R3T', simulated: false },
  },
  X402SupportedResponse: {
    kinds: [
      {
        x402Version: 2,
        scheme: 'exact',
        network: 'eip155:8453',
        extra: {
          payTo: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D',
          asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
          decimals: 6,
          name: 'USD Coin',
          version: '2',
        },
      },
    ],
    extensions: ['bazaar', 'payment-identifier'],
    signers: { 'eip155:*': ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8'] },
  },
  X402DiscoveryResources: {
    x402Version: 2,
    items: [
      {
        resource: 'https://pay.example.com/l/k3x9m2p7q8r4',
        type: 'http',
        x402Version: 2,
        accepts: [
          {
            scheme: 'exact',
            network: 'eip155:8453',
            amount: '2500000',
            asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
            payTo: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D',
            maxTimeoutSeconds: 300,
            extra: { name: 'USD Coin', version: '2', asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', decimals: 6 },
          },
        ],
        lastUpdated: '2026-03-01T12:04:12.000Z',
        description: 'Weather report',
        mimeType: 'application/json',
        extensions: { bazaar: LINK_DECLARATION },
      },
    ],
    pagination: { limit: 20, offset: 0, total: 1 },
  },
  ...SUBSCRIPTION_SCHEMA_EXAMPLES,
  Disbursement: {
    id: 'dsb_01JQ3Y2B4D6F8H0K2M4P6R8T0V',
    merchant_id: 'mer_01JQ3S0F4B7N2C9X5K8M1P6R3T',
    token: 'base:usdc',
    symbol: 'USDC',
    chain: 'base',
    title: 'March affiliate commissions',
    status: 'released',
    total_usd_cents: 17500,
    item_count: 2,
    approvals_required: 2,
    approvals: [
      { user_id: 'usr_01JQ3Y3A1B2C3D4E5F6G7H8J9K', approved_at: '2026-03-31T10:02:00.000Z' },
      { user_id: 'usr_01JQ3Y3B9K8J7H6G5F4E3D2C1B', approved_at: '2026-03-31T10:05:00.000Z' },
    ],
    approval_mac: 'c2f1a0e9d8b7c6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1',
    released_at: '2026-03-31T10:06:00.000Z',
    released_by: 'usr_01JQ3Y3A1B2C3D4E5F6G7H8J9K',
    cancelled_at: null,
    created_by: 'key_01JQ3S1A2B3C4D5E6F7G8H9J0K',
    created_at: '2026-03-31T09:58:00.000Z',
    items: [
      {
        item_no: 1,
        destination: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D',
        usd_cents: 12500,
        amount: '125000000',
        amount_display: '125',
        label: 'Partner 17',
        payout: {
          id: 'po_01JQ3Y4C6E8G0J2L4N6Q8S0U2W',
          status: 'sent',
          tx_hash: TX_HASH,
          error: null,
          sent_at: '2026-03-31T10:06:30.000Z',
        },
      },
      {
        item_no: 2,
        destination: '0x1f2E3d4C5b6A7980a1B2c3D4e5F60718293a4B5c',
        usd_cents: 5000,
        amount: '50000000',
        amount_display: '50',
        label: 'Partner 18',
        payout: {
          id: 'po_01JQ3Y4D7F9H1K3M5P7R9T1V3X',
          status: 'broadcast',
          tx_hash: TX_HASH,
          error: null,
          sent_at: null,
        },
      },
    ],
    progress: { sent: 1, failed: 0, open: 1 },
  },
  Error: { error: { code: 'invalid_request', message: 'price_amount must be >= 1', param: 'price_amount' } },
  Account: {
    id: 'mer_01JQ3S0F4B7N2C9X5K8M1P6R3T',
    name: 'Corner Café',
    mode: 'test',
    webhook_url: 'https://shop.example.com/hooks/kasse',
    rate_limit_per_minute: 60,
    created_at: '2026-02-14T09:30:00.000Z',
    tax_profile: taxProfile,
    branding: {
      color: '#0b5d3b',
      logo_url:
        'https://pay.example.com/brand/logo/3f1c9a0d5e7b2c4a6f8e1d3b5a7c9e0f2a4c6e8b0d2f4a6c8e0b2d4f6a8c0e2f.png',
    },
    underpayment_tolerance_bps: 50,
  },
  Event: event,
  PaymentEvent: event,
  WebhookAttempt: webhookAttempt,
  WebhookDelivery: delivery,
  EventWithDeliveries: { ...event, deliveries: [delivery] },
  Deposit: deposit,
  Attempt: attempt,
  Payment: payment,
  Refund: {
    id: 'rfd_01JQ3V2H8K4M6P0R2T4W6Y8A0C',
    payment_id: PAYMENT_ID,
    status: 'pending',
    destination: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D',
    token: 'base:usdc',
    amount: '25000000',
    amount_display: '25',
    tx_hash: null,
    note: 'Customer returned the mugs',
    error: null,
    created_at: '2026-03-03T08:15:00.000Z',
  },
  Currency: {
    token: 'base:eth',
    chain: 'base',
    symbol: 'ETH',
    name: 'Ether',
    decimals: 18,
    min_amount: '400000000000000',
    min_amount_display: '0.0004',
    rate: '3000',
    rate_source: 'coingecko',
    paused: false,
    gasless: false,
    holdable: false,
    network_status: 'running',
    network_status_reason: null,
  },
  Estimate: {
    token: 'base:eth',
    price_amount: 2500,
    price_currency: 'USD',
    pay_amount: '8333333333333334',
    pay_amount_display: '0.008333333333333334',
    rate: '3000',
    rate_source: 'coingecko',
    expires_at: '2026-03-01T12:10:00.000Z',
  },
  Balance: {
    available_usd_cents: 2475,
    pending_usd_cents: 0,
    custody: [{ token: 'base:usdc', chain: 'base', symbol: 'USDC', amount: '25000000', amount_display: '25' }],
  },
  Statement: {
    month: '2026-03',
    from: '2026-03-01T00:00:00.000Z',
    to: '2026-04-01T00:00:00.000Z',
    opening_balance_usd_cents: 0,
    closing_balance_usd_cents: 2475,
    clawback_change_usd_cents: 0,
    reconciliation_gap_usd_cents: 0,
    payments: { count: 1, gross_usd_cents: 2500 },
    credits: { count: 1, value_usd_cents: 2500, fee_usd_cents: 25, net_usd_cents: 2475 },
    held: { count: 0, value_usd_cents: 0 },
    conversions: { count: 0, value_usd_cents: 0, swap_fee_usd_cents: 0, fee_usd_cents: 0, net_usd_cents: 0 },
    reversals: { count: 0, net_usd_cents: 0 },
    payouts: { count: 0, usd_cents: 0, requested_count: 0, requested_usd_cents: 0, items: [] },
    by_coin: [
      { token: 'base:usdc', symbol: 'USDC', chain: 'base', payments: 1, received_display: '25', value_usd_cents: 2500 },
    ],
  },
  TaxInvoice: {
    id: 'txi_01JQ3X4N6P8R0T2V4X6Z8B0D2F',
    payment_id: PAYMENT_ID,
    number: 'KS/25-26/000123',
    issued_at: '2026-03-01T12:30:00.000Z',
    customer: { name: 'Asha Traders', tax_id: '27AAACR5055K1Z7', state_code: '27' },
    place_of_supply: 'intra',
    currency: 'INR',
    fx: { rate: '83.25', source: 'manual', date: '2026-03-01' },
    usd_cents: 2500,
    total: '2081.25',
    taxable: '1763.77',
    cgst: '158.74',
    sgst: '158.74',
    igst: '0.00',
    tax_rate_bps: 1800,
    tax_inclusive: true,
    sac: '997158',
    description: 'Two mugs',
    seller: {
      name: 'Corner Café',
      legal_name: 'Corner Cafe Private Limited',
      tax_id: '27AAPFU0939F1ZV',
      address: '12 Hill Road, Bandra West, Mumbai 400050',
      state_code: '27',
    },
    created_at: '2026-03-01T12:30:00.000Z',
  },
  PaymentLink: {
    id: 'lnk_01JQ3W0A1B2C3D4E5F6G7H8J9K',
    slug: '5k5v9cyff8ah',
    url: 'https://checkout.example.com/l/5k5v9cyff8ah',
    kind: 'fixed',
    title: 'Coffee beans, 1 kg',
    description: 'Single origin, roasted this week.',
    amount_usd_cents: 2400,
    min_usd_cents: null,
    max_usd_cents: null,
    presets_usd_cents: [],
    collect_email: true,
    success_url: null,
    max_uses: 100,
    uses: 3,
    expires_at: null,
    active: true,
    created_at: '2026-03-01T10:00:00.000Z',
  },
};

/** What an x402 resource server's facilitator client posts to verify and settle (an EIP-3009 authorization). */
const x402Body = {
  x402Version: 2,
  paymentPayload: {
    x402Version: 2,
    resource: { url: 'https://api.example.com/weather', description: 'Weather report', mimeType: 'application/json' },
    accepted: { scheme: 'exact', network: 'eip155:8453' },
    payload: {
      signature: `0x${'5a'.repeat(65)}`,
      authorization: {
        from: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
        to: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D',
        value: '1000',
        validAfter: '1772366400',
        validBefore: '1772366700',
        nonce: `0x${'ab'.repeat(32)}`,
      },
    },
  },
  paymentRequirements: {
    scheme: 'exact',
    network: 'eip155:8453',
    amount: '1000',
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    payTo: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D',
    maxTimeoutSeconds: 60,
    extra: { name: 'USD Coin', version: '2' },
  },
};

/** Examples of request bodies, by operation id. */
export const REQUEST_EXAMPLES: Record<string, unknown> = {
  ...CAPTURE_REQUEST_EXAMPLES,
  createPayment: {
    price_amount: 2500,
    price_currency: 'USD',
    order_id: '1001',
    description: 'Two mugs',
    success_url: 'https://shop.example.com/orders/1001/thanks',
    cancel_url: 'https://shop.example.com/cart',
    metadata: { customer_id: 'cus_42' },
  },
  createPaymentAttempt: { chain: 'base', token: 'base:usdc' },
  x402Verify: x402Body,
  x402Settle: x402Body,
  refundPayment: { destination: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D', note: 'Customer returned the mugs' },
  simulatePayment: { outcome: 'paid' },
  redeliverEvent: {},
  createLink: {
    kind: 'fixed',
    title: 'Coffee beans, 1 kg',
    description: 'Single origin, roasted this week.',
    amount_usd_cents: 2400,
    collect_email: true,
    max_uses: 100,
  },
  updateLink: { active: false },
  updateAccount: { tax_profile: taxProfile, branding: { color: '#0B5D3B' }, underpayment_tolerance_bps: 50 },
  createSubscription: {
    customer_email: 'asha@example.com',
    customer_name: 'Asha',
    title: 'Coffee beans, monthly',
    amount_usd_cents: 2400,
    interval: 'month',
    grace_days: 3,
    success_url: 'https://shop.example.com/subscriptions/thanks',
    metadata: { customer_id: 'cus_42' },
    collection: 'charge_automatically',
  },
  simulateSubscription: { outcome: 'grant' },
  createDisbursement: {
    title: 'March affiliate commissions',
    items: [
      { destination: '0x8B3f2a8e1D4c5b6A7e9F0d1C2b3A4e5F6a7B8c9D', usd_cents: 12500, label: 'Partner 17' },
      { destination: '0x1f2E3d4C5b6A7980a1B2c3D4e5F60718293a4B5c', usd_cents: 5000, label: 'Partner 18' },
    ],
  },
  createTaxInvoice: {
    customer_name: 'Asha Traders',
    customer_tax_id: '27AAACR5055K1Z7',
    customer_state_code: '27',
    place_of_supply: 'intra',
    fx_rate: '83.25',
  },
};

/** Example ids of path parameters, by the id's prefix. */
export const ID_EXAMPLES: Record<string, string> = {
  pay: PAYMENT_ID,
  evt: EVENT_ID,
  lnk: 'lnk_01JQ3W0A1B2C3D4E5F6G7H8J9K',
  txi: 'txi_01JQ3X4N6P8R0T2V4X6Z8B0D2F',
  sub: SUBSCRIPTION_ID,
  dsb: 'dsb_01JQ3Y2B4D6F8H0K2M4P6R8T0V',
};

/** Examples of path parameters that are not ids, by name. */
export const PATH_EXAMPLES: Record<string, string> = { month: '2026-03' };

/** Examples of query parameters, by name. */
export const PARAMETER_EXAMPLES: Record<string, unknown> = {
  order_id: '1001',
  status: 'paid',
  limit: 20,
  price_amount: 2500,
  price_currency: 'USD',
  token: 'base:eth',
  type: 'payment.paid',
  types: 'payment.paid,payment.expired',
  payment_id: PAYMENT_ID,
};

/** Example answers of each error code: a typical message and `param`. */
export const ERROR_EXAMPLES: Record<ErrorCode, { summary: string; message: string; param: string | null }> = {
  invalid_request: {
    summary: 'A field is missing or invalid',
    message: 'price_amount must be >= 1',
    param: 'price_amount',
  },
  unauthorized: {
    summary: 'Missing, unknown or revoked key',
    message: 'Missing, malformed, unknown or revoked API key. Send Authorization: Bearer <key>.',
    param: null,
  },
  wrong_mode: {
    summary: 'A key of the other mode',
    message: 'A live key cannot be used on the test API; use a kasse_test_ key.',
    param: null,
  },
  not_found: { summary: 'No such object in this mode', message: 'No such payment.', param: null },
  idempotency_conflict: {
    summary: 'Idempotency-Key reused with another body',
    message: 'This Idempotency-Key was already used with a different request.',
    param: 'Idempotency-Key',
  },
  already_invoiced: {
    summary: 'The payment already has a tax invoice',
    message: 'This payment already has a tax invoice; GET /tax_invoices?payment_id=… finds it.',
    param: null,
  },
  too_many_attempts: {
    summary: 'Already 3 coin choices',
    message: 'A payment has at most 3 coin choices; this one already has 3.',
    param: null,
  },
  amount_too_small: {
    summary: 'Below the coin’s minimum',
    message: '0.0002 ETH is below the minimum of 0.0004 ETH for this coin.',
    param: null,
  },
  insufficient_balance: {
    summary: 'The available balance does not cover the batch',
    message: 'The batch needs $1,250.00 but the available balance is $900.00.',
    param: null,
  },
  invalid_state: {
    summary: 'Not possible in the current state',
    message: 'This payment is paid; no new coin can be chosen.',
    param: null,
  },
  rate_limited: {
    summary: 'Too many requests',
    message: 'Rate limit of 60 requests per minute exceeded; retry in 12 s.',
    param: null,
  },
  internal_error: {
    summary: 'Unexpected failure',
    message: 'An unexpected error occurred. Quote request id req_01JQ3TC0000000000000000000 when reporting it.',
    param: null,
  },
  price_unavailable: {
    summary: 'No current price for the coin',
    message: 'No current price for ETH; try again shortly or choose another coin.',
    param: null,
  },
  chain_paused: {
    summary: 'The network is paused',
    message: 'The Base network is paused; choose another coin.',
    param: null,
  },
  fx_unavailable: {
    summary: 'No FX reference rate',
    message:
      'No FX reference rate is available for 2026-03-01: the provider did not answer. Try again later or send fx_rate.',
    param: null,
  },
  service_unavailable: { summary: 'Kasse cannot serve now', message: 'Database is not reachable', param: null },
};
