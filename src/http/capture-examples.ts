/**
 * Examples of a held payment's objects (docs/capture.md) for the API reference: order 1001's 25.00 USD authorized in
 * USDC on Base, 15.00 captured when the first parcel shipped.
 */
const capture = {
  amount_usd_cents: 1500,
  amount: '15000000',
  amount_display: '15',
  tx_hash: '0x2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c0b2d4f6e8a0c1b3d5f7e9a2c4b6d8f0e1a',
  captured_at: '2026-03-04T10:20:00.000Z',
};

export const CAPTURE_SCHEMA_EXAMPLES: Record<string, unknown> = {
  Capture: capture,
  Authorization: {
    amount_usd_cents: 2500,
    captured_usd_cents: 1500,
    pending_usd_cents: 0,
    capture_before: '2026-03-08T12:00:00.000Z',
    refund_before: '2026-03-31T12:00:00.000Z',
    voided: false,
    captures: [capture],
  },
};

export const CAPTURE_REQUEST_EXAMPLES: Record<string, unknown> = {
  capturePayment: { amount_usd_cents: 1500 },
};
