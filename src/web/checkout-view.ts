/**
 * Rendering of the hosted checkout (`/p/<id>`) and of a POS sale (`/l/<slug>/sale/<id>`): pure functions from the
 * Payment (as the API shows it) to markup. The live-status stream renders the same `main` fragments, so a page and
 * its updates cannot disagree. Every merchant- or payer-supplied string goes through the escaping `html` tag.
 */
import { createHash } from 'node:crypto';
import type { WalletChoice } from '../chains/plugin.ts';
import type { ChainRegistry } from '../chains/registry.ts';
import type { Mode } from '../core/mode.ts';
import { centsToUnits, formatUnits, parseUnits } from '../core/money.ts';
import type { Payment } from '../modules/payments/schema.ts';
import { MAX_ATTEMPTS } from '../modules/payments/model.ts';
import type { MerchantBrand } from './brand.ts';
import { html, qrSvg, renderPage, usd, type Html } from './page.ts';

type Attempt = Payment['attempts'][number];

/** What the payer is asked to do now. */
export type Phase = 'pick' | 'pay' | 'seen' | 'underpaid' | 'paid' | 'expired' | 'late' | 'cancelled' | 'refunded';

/** Statuses after which nothing changes for the payer; the page stops listening. */
export const FINAL_STATUSES = ['paid', 'expired', 'cancelled', 'refunded'];

export function phaseOf(p: Payment): Phase {
  switch (p.status) {
    case 'waiting':
      return lastAttempt(p)?.status === 'waiting' ? 'pay' : 'pick';
    case 'detected':
    case 'confirming':
      return 'seen';
    default:
      return p.status as Phase;
  }
}

const lastAttempt = (p: Payment): Attempt | undefined => p.attempts[p.attempts.length - 1];

/** A coin the payer may pick, priced for this payment. */
export interface CoinOption {
  token: string;
  symbol: string;
  name: string;
  networkName: string;
  /** Approximate amount in whole coins. */
  estimate: string;
  /** The amount is below the coin's minimum; shown disabled. */
  belowMin: boolean;
}

/** Currencies (as `payments.currencies` lists them) that can be chosen now, priced for `cents`. */
export function coinOptions(
  chains: ChainRegistry,
  mode: Mode,
  currencies: Array<{
    token: string;
    chain: string;
    symbol: string;
    name: string;
    decimals: number;
    min_amount: string;
    rate: string | null;
    paused: boolean;
  }>,
  cents: number,
): CoinOption[] {
  return currencies.flatMap((c) => {
    if (c.paused || c.rate === null) return [];
    const units = centsToUnits(cents, c.rate, c.decimals);
    return [
      {
        token: c.token,
        symbol: c.symbol,
        name: c.name,
        networkName: chains.network(mode, c.chain)?.name ?? c.chain,
        estimate: approx(units, c.decimals),
        belowMin: units < BigInt(c.min_amount),
      },
    ];
  });
}

/** Symbols of coins on open networks that have no price now (they cannot be offered), each once. */
export function unpricedSymbols(currencies: Array<{ symbol: string; rate: string | null; paused: boolean }>): string[] {
  return [...new Set(currencies.filter((c) => !c.paused && c.rate === null).map((c) => c.symbol))];
}

/**
 * An approximate amount in whole coins, formatted the same way for every coin: at least four significant digits and
 * at least two decimals (never more than the coin has), rounded half up — `12.34`, `5000.00`, `0.004113`, `0.08227`.
 */
export function approx(units: bigint, decimals: number): string {
  const digits = units.toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const firstSignificant = whole === '0' ? digits.slice(whole.length).search(/[1-9]/) : -1;
  const wanted = whole !== '0' ? 4 - whole.length : firstSignificant < 0 ? 2 : firstSignificant + 4;
  const shown = Math.min(decimals, Math.max(2, wanted));
  const scale = 10n ** BigInt(decimals - shown);
  const rounded = ((units + scale / 2n) / scale).toString().padStart(shown + 1, '0');
  return shown > 0 ? `${rounded.slice(0, -shown)}.${rounded.slice(-shown)}` : rounded;
}

export interface CheckoutContext {
  payment: Payment;
  mode: Mode;
  merchantName: string;
  /** The merchant's colour and logo. */
  brand?: MerchantBrand | null;
  chains: ChainRegistry;
  /** Server time (the injected clock): countdowns run from it, never from the browser's clock. */
  now: Date;
  coins: CoinOption[];
  /** Opened by checkout.js in its modal. */
  embed: boolean;
  /** The merchant page's origin (modal only), where status messages are posted. */
  parentOrigin: string | null;
  /** A message from a failed action, shown in the picker. */
  error?: string | null;
  /** Coins left out of the picker because no price can be fetched now (their symbols). */
  unpriced?: string[];
  /** No network of this mode can take payments (a live installation not set up yet). */
  closed?: boolean;
  /** Wallet buttons of the coin choice's chain family (hidden until its script shows them), if it offers any. */
  walletButtons: (choice: WalletChoice) => Html;
  /** The chain families' checkout scripts (asset names). */
  scripts: readonly string[];
}

/** Changes whenever what the payer sees changes (not with the time): the stream sends only then. */
export function viewKey(p: Payment): string {
  const shape = [
    phaseOf(p),
    p.status,
    p.attempts.map((a) => [a.id, a.status, a.received_amount, a.deposits.map((d) => [d.status, d.confirmations])]),
  ];
  return createHash('sha256').update(JSON.stringify(shape)).digest('base64url').slice(0, 16);
}

/**
 * Whether the status line is only announced (to screen readers) rather than shown: whenever the page's main part
 * already says the same in its own heading, so a payer never reads one message twice.
 */
export function quietStatus(p: Payment, view: 'checkout' | 'pos' = 'checkout'): boolean {
  const phase = phaseOf(p);
  return view === 'pos' ? phase !== 'pick' && phase !== 'pay' : phase !== 'pay';
}

/** The status line announced to screen readers (and shown while the payer is to send money) for the payment's state. */
export function statusLine(p: Payment, view: 'checkout' | 'pos' = 'checkout'): string {
  const a = lastAttempt(p);
  const phase = phaseOf(p);
  if (view === 'pos' && (phase === 'pick' || phase === 'pay')) return 'Waiting for the customer to scan and pay.';
  switch (phase) {
    case 'pick':
      return a ? 'The price hold ended. Choose a coin to continue.' : 'Choose a coin to pay with.';
    case 'pay':
      return `Waiting for ${a!.pay_amount_display} ${a!.symbol}.`;
    case 'seen': {
      const need = a?.confirmations_required ?? null;
      const have = Math.min(...(a?.deposits.filter((d) => d.status !== 'orphaned').map((d) => d.confirmations) ?? [0]));
      return need === null
        ? 'Payment detected. Waiting for confirmations.'
        : `Payment detected. ${Math.min(have, Number(need))} of ${need} confirmations.`;
    }
    case 'underpaid':
      return `Part of the payment arrived. ${missingDisplay(a!)} ${a!.symbol} is missing.`;
    case 'paid':
      return 'Paid. Thank you!';
    case 'expired':
      return 'This payment has expired.';
    case 'late':
      return 'Your payment arrived after the time window. The merchant will review it.';
    case 'cancelled':
      return 'This payment was cancelled.';
    case 'refunded':
      return 'This payment was refunded.';
  }
}

function missingUnits(a: Attempt): bigint {
  const missing = BigInt(a.pay_amount) - BigInt(a.received_amount);
  return missing > 0n ? missing : 0n;
}

/** The missing amount in whole coins, exact: the difference of the two exact display strings. */
function missingDisplay(a: Attempt): string {
  const d = Math.max(...[a.pay_amount_display, a.received_amount_display].map((s) => (s.split('.')[1] ?? '').length));
  const missing = parseUnits(a.pay_amount_display, d) - parseUnits(a.received_amount_display, d);
  return formatUnits(missing > 0n ? missing : 0n, d);
}

const countdown = (expiresAt: string, now: Date) => {
  const left = Math.max(0, Math.floor((Date.parse(expiresAt) - now.getTime()) / 1000));
  const text = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
  return html`<time class="k-count" datetime="PT${left}S" data-expires="${expiresAt}" data-now="${now.toISOString()}">${text}</time>`;
};

/** A copyable value: the text plus a button that copies it. */
const copyable = (id: string, label: string, value: string, cls = '') =>
  html`<div class="k-copy"><span class="k-label" id="${id}-l">${label}</span><code class="k-value ${cls}" id="${id}">${value}</code><button type="button" class="k-small" data-copy="${value}" aria-describedby="${id}-l">Copy</button></div>`;

/** The coin picker: one submit button per coin, grouped by network. Works without JavaScript. */
function picker(ctx: CheckoutContext, heading: boolean): Html {
  const p = ctx.payment;
  const left = MAX_ATTEMPTS - p.attempts.length;
  const groups = new Map<string, CoinOption[]>();
  for (const c of ctx.coins) groups.set(c.networkName, [...(groups.get(c.networkName) ?? []), c]);
  const hidden = ctx.embed
    ? html`<input type="hidden" name="embed" value="1">${ctx.parentOrigin ? html`<input type="hidden" name="origin" value="${ctx.parentOrigin}">` : ''}`
    : '';
  if (left <= 0)
    return html`<p class="k-note">This payment has used all ${MAX_ATTEMPTS} coin choices. Ask the merchant for a new payment.</p>`;
  return html`<form method="post" action="/p/${p.id}/attempts" class="k-pick" data-enhance>
${heading ? html`<h2>Choose a coin</h2>` : ''}${hidden}
${ctx.coins.length === 0 && (ctx.unpriced ?? []).length === 0 ? html`<p class="k-note">No coin is available right now. Please try again in a minute.</p>` : ''}${unpricedNote(ctx.unpriced ?? [])}
${[...groups].map(
  ([network, coins]) => html`<fieldset><legend>${network}</legend>
${coins.map(
  (c) =>
    html`<button type="submit" name="token" value="${c.token}" class="k-coin"${c.belowMin ? html` disabled` : ''}><b>${c.symbol}</b><span>${c.name}</span><span class="k-est">${c.belowMin ? 'below minimum' : `≈ ${c.estimate} ${c.symbol}`}</span></button>\n`,
)}</fieldset>
`,
)}<p class="k-hint">The amount is held for 10 minutes once you choose. ${left < MAX_ATTEMPTS ? `${left} more ${left === 1 ? 'choice' : 'choices'} left.` : ''}</p>
<p class="k-error" role="alert">${ctx.error ?? ''}</p>
</form>`;
}

/** Says which coins are missing from the picker because no price can be fetched, instead of leaving them out silently. */
function unpricedNote(symbols: string[]): Html | string {
  if (symbols.length === 0) return '';
  const list =
    symbols.length === 1 ? symbols[0]! : `${symbols.slice(0, -1).join(', ')} and ${symbols[symbols.length - 1]}`;
  return html`<p class="k-note" data-unpriced>${list} cannot be offered right now because ${symbols.length === 1 ? 'its price' : 'their prices'} cannot be fetched. Please choose another coin or try again in a few minutes.</p>`;
}

/** Address, exact amount, QR code, deep link, wallet buttons and the hold countdown for sending `units` of `a`'s coin. */
async function sendBlock(
  ctx: CheckoutContext,
  a: Attempt,
  units: bigint,
  uri: string | null,
  timerLabel = 'Price held for',
): Promise<Html> {
  const token = ctx.chains.token(ctx.mode, a.token);
  const network = ctx.chains.network(ctx.mode, a.chain);
  const amount = token
    ? formatUnits(units, token.decimals)
    : units === BigInt(a.pay_amount)
      ? a.pay_amount_display
      : units.toString();
  const symbol = a.symbol ?? a.token;
  const qr = await qrSvg(uri ?? a.address, `QR code: send ${amount} ${symbol} to ${a.address}`);
  const wallet =
    network && token
      ? ctx.walletButtons({
          mode: ctx.mode,
          network,
          token,
          paymentId: ctx.payment.id,
          attemptId: a.id,
          address: a.address,
          amount: units,
          expiresAt: new Date(a.expires_at),
        })
      : '';
  const networkName = network?.name ?? a.chain;
  return html`<div class="k-send">
<div class="k-network" role="note"><span class="k-label" id="k-network-l">Network</span><strong class="k-netname" id="k-network" aria-describedby="k-network-l">${networkName}</strong><span class="k-netnote">Send ${symbol} on ${networkName} only. Money sent on another network or in another coin can be lost.</span></div>
${copyable('k-amount', `Amount (${symbol})`, amount, 'k-big')}
${copyable('k-address', 'To address', a.address, 'k-addr')}
<div class="k-qrbox">${qr}</div>
${uri ? html`<a class="k-btn" href="${uri}">Open in wallet app</a>` : ''}
${wallet}
<p class="k-error" role="alert" data-wallet-error></p>
<p class="k-timer">${timerLabel} ${countdown(a.expires_at, ctx.now)}</p>
<p class="k-note">Send exactly this amount, in one transfer.</p>
</div>`;
}

function deposits(a: Attempt | undefined): Html | string {
  if (!a || a.deposits.length === 0) return '';
  return html`<ul class="k-deps">${a.deposits.map(
    (d) =>
      html`<li>${d.amount_display} ${d.token.split(':')[1]!.toUpperCase()} · ${d.status}${d.explorer_url ? html` · <a href="${d.explorer_url}" target="_blank" rel="noopener noreferrer">view transaction</a>` : ''}</li>`,
  )}</ul>`;
}

/** How far the confirmations of a detected payment are. */
function confirmationsLine(a: Attempt | undefined): Html | string {
  const need = a?.confirmations_required ?? null;
  const live = a?.deposits.filter((d) => d.status !== 'orphaned') ?? [];
  if (need === null || live.length === 0) return '';
  const have = Math.min(Number(need), ...live.map((d) => d.confirmations));
  return html`<p class="k-confirms">${have} of ${need} confirmations</p>`;
}

/** "2026-03-01 12:00 UTC": the same for every payer, whatever their time zone. */
const utcTime = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

/** "0x1234abcd…9f8e": a transaction hash short enough for a phone, the full hash in the link's title. */
const shortHash = (h: string) => (h.length > 20 ? `${h.slice(0, 10)}…${h.slice(-6)}` : h);

/** The paid page's receipt: what was paid, in which coin on which network, the transaction(s), when, and the reference. */
function receipt(ctx: CheckoutContext): Html {
  const p = ctx.payment;
  const a = p.attempts.find((x) => x.id === p.paid_attempt_id) ?? lastAttempt(p);
  const network = a ? (ctx.chains.network(ctx.mode, a.chain)?.name ?? a.chain) : null;
  const txs = (a?.deposits ?? []).filter((d) => d.status !== 'orphaned' && d.token === a!.token);
  const row = (label: string, value: Html | string) => html`<div><dt>${label}</dt><dd>${value}</dd></div>`;
  return html`<dl class="k-receipt" aria-label="Receipt">
${row('Amount', usd(p.price_amount))}
${a ? row('Paid with', `${a.received_amount_display} ${a.symbol ?? a.token} on ${network}`) : ''}
${txs.map((d) => row('Transaction', d.explorer_url ? html`<a href="${d.explorer_url}" target="_blank" rel="noopener noreferrer" title="${d.tx_hash}">${shortHash(d.tx_hash)}</a>` : html`<code title="${d.tx_hash}">${shortHash(d.tx_hash)}</code>`))}
${p.paid_at ? row('Date', utcTime(p.paid_at)) : ''}
${row('Reference', p.order_id)}
</dl>`;
}

/** The inside of `<main>` for the payment's current state. */
export async function checkoutMain(ctx: CheckoutContext): Promise<Html> {
  const p = ctx.payment;
  const a = lastAttempt(p);
  switch (phaseOf(p)) {
    case 'pick':
      if (ctx.closed) {
        return html`<div class="k-state"><h2>This shop cannot take crypto payments yet</h2><p>${ctx.merchantName} has not finished setting up crypto payments, so nothing can be paid here for now. Please pay another way, or come back later.</p></div>`;
      }
      return html`${a ? html`<p class="k-note">The price for ${a.symbol} was held for 10 minutes and that time has ended.</p>` : ''}${picker(ctx, true)}`;
    case 'pay': {
      const block = await sendBlock(ctx, a!, BigInt(a!.pay_amount), a!.uri);
      const more =
        p.attempts.length < MAX_ATTEMPTS
          ? html`<details class="k-more"><summary>Pay with another coin</summary>${picker(ctx, false)}</details>`
          : '';
      return html`<h2>Send exactly</h2>${block}${more}`;
    }
    case 'seen':
      return html`<div class="k-state"><p class="k-icon" aria-hidden="true">⏳</p><h2>Payment detected</h2><p>We see your payment of ${a?.received_amount_display} ${a?.symbol}. It is paid once the network confirms it; you may close this page.</p>${confirmationsLine(a)}${deposits(a)}</div>`;
    case 'underpaid': {
      const missing = missingUnits(a!);
      const uri =
        ctx.chains.network(ctx.mode, a!.chain) && ctx.chains.token(ctx.mode, a!.token)
          ? ctx.chains
              .adapter(ctx.mode, a!.chain)
              .paymentUri(ctx.chains.token(ctx.mode, a!.token)!, a!.address, missing)
          : null;
      return html`<h2>Part of the payment arrived</h2><p class="k-warn">Received ${a!.received_amount_display} of ${a!.pay_amount_display} ${a!.symbol}. <strong>${missingDisplay(a!)} ${a!.symbol} is missing.</strong> Send the rest to the same address:</p>${await sendBlock(ctx, a!, missing, uri, 'Send the rest within')}`;
    }
    case 'paid':
      return html`<div class="k-state k-ok"><p class="k-icon" aria-hidden="true">✓</p><h2>Paid</h2><p>Thank you! Your payment of ${usd(p.price_amount)} is complete.</p>${receipt(ctx)}${
        p.success_url && !ctx.embed ? html`<a class="k-btn" href="${p.success_url}" data-success>Continue</a>` : ''
      }</div>`;
    case 'expired':
      return html`<div class="k-state"><h2>This payment has expired</h2><p>Nothing was paid in time. If you already sent money, it is still found and the merchant is told.</p></div>`;
    case 'late':
      return html`<div class="k-state"><h2>Payment arrived late</h2><p>Your payment arrived after the time window closed. The merchant will review it; there is nothing more to do here.</p>${deposits(a)}</div>`;
    case 'cancelled':
      return html`<div class="k-state"><h2>This payment was cancelled</h2><p>The merchant cancelled it. Do not send money for it.</p></div>`;
    case 'refunded':
      return html`<div class="k-state"><h2>This payment was refunded</h2><p>The money was sent back.</p></div>`;
  }
}

/** Attributes of `<html>` for the modal: embed flag and the parent origin messages go to. */
function rootAttrs(ctx: { embed: boolean; parentOrigin: string | null }): Html | undefined {
  if (!ctx.embed) return undefined;
  return html` data-embed="1"${ctx.parentOrigin ? html` data-parent-origin="${ctx.parentOrigin}"` : ''}`;
}

/** A no-JS page refreshes itself while something may still change; a paid page forwards to success_url. */
function noscriptHead(p: Payment, phase: Phase, embed: boolean): Html | undefined {
  if (phase === 'paid' && p.success_url && !embed)
    return html`<noscript><meta http-equiv="refresh" content="3;url=${p.success_url}"></noscript>\n`;
  if (phase === 'pay' || phase === 'seen' || phase === 'underpaid')
    return html`<noscript><meta http-equiv="refresh" content="15"></noscript>\n`;
  return undefined;
}

/** The whole checkout page. */
export async function checkoutPage(ctx: CheckoutContext): Promise<string> {
  const p = ctx.payment;
  const phase = phaseOf(p);
  const back = p.cancel_url
    ? html`<a href="${p.cancel_url}" data-kasse-cancel>← Back to ${ctx.merchantName}</a>`
    : ctx.embed
      ? html`<button type="button" class="k-link" data-kasse-cancel>Cancel</button>`
      : '';
  const query = ctx.embed ? `&embed=1` : '';
  const body = html`<div class="k-card">
<header class="k-head">
<p class="k-merchant">${ctx.merchantName}</p>
<p class="k-price">${usd(p.price_amount)}</p>
${p.description ? html`<h1 class="k-desc">${p.description}</h1>` : html`<h1 class="k-desc">Payment to ${ctx.merchantName}</h1>`}
</header>
<p id="k-status" class="k-status${quietStatus(p) ? ' k-sr' : ''}" role="status" aria-live="polite">${ctx.closed && phase === 'pick' ? 'This shop cannot take crypto payments yet.' : statusLine(p)}</p>
<main id="k-main" data-events="/p/${p.id}/events?view=checkout${query}" data-fp="${viewKey(p)}" data-status="${p.status}" data-redirect="${p.success_url ?? ''}">
${await checkoutMain(ctx)}
</main>
<footer class="k-foot">${back}<span class="k-brand">Secured by Kasse</span></footer>
</div>`;
  return renderPage({
    title: `Pay ${usd(p.price_amount)} to ${ctx.merchantName}`,
    body,
    head: noscriptHead(p, phase, ctx.embed),
    rootAttrs: rootAttrs(ctx),
    test: ctx.mode === 'test',
    scripts: ctx.scripts,
    brand: ctx.brand,
  });
}

export interface PosSaleContext {
  payment: Payment;
  mode: Mode;
  linkTitle: string;
  slug: string;
  now: Date;
  brand?: MerchantBrand | null;
}

/** The inside of `<main>` on the POS terminal for a sale: QR of the checkout to scan, then PAID, then next sale. */
export async function posMain(ctx: PosSaleContext): Promise<Html> {
  const p = ctx.payment;
  const next = html`<a class="k-btn k-next" href="/l/${ctx.slug}" data-autofocus>Next sale</a>`;
  switch (phaseOf(p)) {
    case 'pick':
    case 'pay':
      return html`<p class="k-scan">Scan to pay ${usd(p.price_amount)}</p><div class="k-qrbox k-qr-pos">${await qrSvg(p.checkout_url, `QR code of the checkout for ${usd(p.price_amount)}`)}</div><p class="k-hint">The customer scans this with a phone camera, chooses a coin and pays.</p><a class="k-link" href="/l/${ctx.slug}">Cancel and start over</a>`;
    case 'seen':
      return html`<p class="k-scan">Payment detected</p><p class="k-hint">Waiting for the network to confirm it.</p>`;
    case 'underpaid':
      return html`<p class="k-scan k-warnbig">Underpaid</p><p class="k-hint">Only part of the amount arrived; the customer's screen shows what is missing.</p>${next}`;
    case 'paid':
      return html`<p class="k-paid">PAID</p><p class="k-hint">${usd(p.price_amount)} received.</p>${next}`;
    default:
      return html`<p class="k-scan k-warnbig">Not paid</p><p class="k-hint">${statusLine(p)}</p>${next}`;
  }
}

export async function posSalePage(ctx: PosSaleContext): Promise<string> {
  const p = ctx.payment;
  const body = html`<div class="k-card k-pos">
<header class="k-head"><h1 class="k-title">${ctx.linkTitle}</h1><p class="k-price">${usd(p.price_amount)}</p><p class="k-order">Sale ${p.order_id}</p></header>
<p id="k-status" class="k-status${quietStatus(p, 'pos') ? ' k-sr' : ''}" role="status" aria-live="polite">${statusLine(p, 'pos')}</p>
<main id="k-main" data-events="/p/${p.id}/events?view=pos&amp;slug=${ctx.slug}" data-fp="${viewKey(p)}" data-status="${p.status}" data-redirect="">
${await posMain(ctx)}
</main>
</div>`;
  return renderPage({
    title: `Sale ${p.order_id} · ${ctx.linkTitle}`,
    body,
    test: ctx.mode === 'test',
    brand: ctx.brand,
  });
}
