/**
 * The payment objects as the API shows them (schema.ts), rendered from a payment as loaded or as the engine holds it
 * after a change. Pure: token decimals, symbols and explorer links come from the chain registry's configuration.
 */
import type { ChainRegistry } from '../../chains/registry.ts';
import { SIMULATED_TX_PREFIX } from '../../chains/types.ts';
import type { Mode } from '../../core/mode.ts';
import { formatUnits } from '../../core/money.ts';
import type { Payment, RATE_SOURCES } from './schema.ts';
import type { AttemptRow, DepositRow, Loaded } from './store/payments.ts';

type RateSourceName = (typeof RATE_SOURCES)[number];

/** Decimals and display symbol of a token id; ids no longer configured fall back to 0 decimals. */
function tokenMeta(chains: ChainRegistry, mode: Mode, id: string): { decimals: number; symbol: string } {
  const t = chains.token(mode, id);
  return t
    ? { decimals: t.decimals, symbol: t.symbol }
    : { decimals: 0, symbol: (id.split(':')[1] ?? id).toUpperCase() };
}

/** Sum of the non-orphaned deposits of the attempt's own coin (what `received_amount` shows). */
export function receivedAmount(a: AttemptRow, deposits: DepositRow[]): bigint {
  let sum = 0n;
  for (const d of deposits)
    if (d.attempt_id === a.id && d.token === a.token && d.status !== 'orphaned') sum += BigInt(d.amount);
  return sum;
}

/** Confirmed (confirmed or final) amount of the attempt's own coin: what a refund returns. */
export function confirmedAmount(a: AttemptRow, deposits: DepositRow[]): bigint {
  let sum = 0n;
  for (const d of deposits)
    if (d.attempt_id === a.id && d.token === a.token && (d.status === 'confirmed' || d.status === 'final'))
      sum += BigInt(d.amount);
  return sum;
}

/** The Payment object, fields in the spec's order, every field present. */
export function paymentJson(l: Loaded, chains: ChainRegistry, checkoutBase: string): Payment {
  const p = l.row;
  const mode = p.mode;
  return {
    id: p.id,
    status: p.status,
    price_amount: p.price_amount,
    price_currency: p.price_currency as 'USD',
    order_id: p.order_id,
    description: p.description,
    checkout_url: `${checkoutBase}/p/${p.id}`,
    expires_at: p.expires_at.toISOString(),
    paid_at: p.paid_at?.toISOString() ?? null,
    paid_attempt_id: p.paid_attempt_id,
    success_url: p.success_url,
    cancel_url: p.cancel_url,
    ...(p.locale ? { locale: p.locale } : {}),
    metadata: (p.metadata ?? {}) as Record<string, unknown>,
    created_at: p.created_at.toISOString(),
    attempts: l.attempts.map((a) => {
      const meta = tokenMeta(chains, mode, a.token);
      const network = chains.network(mode, a.chain);
      const received = receivedAmount(a, l.deposits);
      return {
        id: a.id,
        chain: a.chain,
        token: a.token,
        symbol: meta.symbol,
        address: a.address,
        pay_amount: BigInt(a.pay_amount).toString(),
        pay_amount_display: formatUnits(BigInt(a.pay_amount), meta.decimals),
        received_amount: received.toString(),
        received_amount_display: formatUnits(received, meta.decimals),
        rate: a.rate,
        rate_source: a.rate_source as RateSourceName,
        status: a.status,
        overpaid: a.overpaid,
        wrong_asset: a.wrong_asset,
        confirmation_tier: a.confirmation_tier,
        confirmations_required: a.confirmations_required,
        expires_at: a.expires_at.toISOString(),
        uri: a.uri,
        deposits: l.deposits
          .filter((d) => d.attempt_id === a.id)
          .map((d) => {
            const amount = BigInt(d.amount);
            return {
              tx_hash: d.tx_hash,
              token: d.token,
              amount: amount.toString(),
              amount_display: formatUnits(amount, tokenMeta(chains, mode, d.token).decimals),
              from: d.from_address,
              block_number: d.block_number === null ? null : d.block_number.toString(),
              status: d.status,
              confirmations: d.confirmations,
              explorer_url:
                network && !d.tx_hash.startsWith(SIMULATED_TX_PREFIX)
                  ? chains.adapter(mode, a.chain).explorerUrl(d.tx_hash)
                  : null,
            };
          }),
      };
    }),
    // Present only on a payment paid within the merchant's tolerance: every other Payment is the spec's object.
    ...(p.paid_within_tolerance
      ? { underpaid_within_tolerance: true, tolerance_shortfall: toleranceShortfall(l) }
      : {}),
    ...(p.source === 'x402' ? { source: 'x402' as const, x402: p.x402 as Payment['x402'] } : {}),
    // Present only on manual payments: every other Payment is the spec's object.
    ...(p.capture_method === 'manual'
      ? { capture_method: 'manual' as const, authorization: authorizationJson(l, chains) }
      : {}),
  };
}

/** A manual payment's hold; its captures are the deposits of its held coin choice (docs/capture.md). */
function authorizationJson(l: Loaded, chains: ChainRegistry): NonNullable<Payment['authorization']> {
  const p = l.row;
  if (!p.capture_before || !p.refund_before) throw new Error(`manual payment ${p.id} has no hold terms`);
  const captures = l.deposits
    .filter((d) => d.status !== 'orphaned')
    .map((d) => {
      if (d.value_cents === null) throw new Error(`capture ${d.id} of payment ${p.id} has no value in cents`);
      const amount = BigInt(d.amount);
      return {
        amount_usd_cents: Number(d.value_cents),
        amount: amount.toString(),
        amount_display: formatUnits(amount, tokenMeta(chains, p.mode, d.token).decimals),
        tx_hash: d.tx_hash,
        captured_at: d.seen_at.toISOString(),
      };
    });
  return {
    amount_usd_cents: p.price_amount,
    captured_usd_cents: captures.reduce((s, c) => s + c.amount_usd_cents, 0),
    pending_usd_cents: p.capture_pending_cents,
    capture_before: p.capture_before.toISOString(),
    refund_before: p.refund_before.toISOString(),
    voided: p.hold_released,
    captures,
  };
}

/** The paid attempt's pay amount less the confirmed amount it was paid with (a payment paid within tolerance). */
function toleranceShortfall(l: Loaded): string | null {
  const a = l.attempts.find((x) => x.id === l.row.paid_attempt_id);
  if (!a || l.row.paid_amount === null) return null;
  return (BigInt(a.pay_amount) - BigInt(l.row.paid_amount)).toString();
}
