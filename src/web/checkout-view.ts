/**
 * Rendering of the hosted checkout (`/p/<id>`) and of a POS sale (`/l/<slug>/sale/<id>`): pure functions from the
 * Payment (as the API shows it) to markup. The live-status stream renders the same `main` fragments, so a page and
 * its updates cannot disagree. The coin choice shown and its confirmations come from the payments module's rule
 * (`shownAttempt`, `confirmationProgress` in payments/payer.ts): the choice holding the money. Every merchant- or
 * payer-supplied string goes through the escaping `html` tag; every word the page says comes from the catalog of its
 * locale (src/core/i18n). Coin amounts stay as wallets take them.
 */
import { createHash } from 'node:crypto';
import type { WalletChoice } from '../chains/plugin.ts';
import type { ChainRegistry } from '../chains/registry.ts';
import type { Mode } from '../core/mode.ts';
import { centsToUnits, formatUnits, parseUnits } from '../core/money.ts';
import { confirmationProgress, MAX_ATTEMPTS, type Payment, shownAttempt } from '../modules/payments/index.ts';
import type { MerchantBrand } from './brand.ts';
import { countdownText, list, type Locale, moment, money, t } from '../core/i18n/index.ts';
import { html, qrSvg, renderPage, type Html } from './page.ts';
import { langField, switcher } from './lang.ts';

type Attempt = Payment['attempts'][number];

/** What the payer is asked to do now. */
export type Phase =
  | 'pick'
  | 'pay'
  | 'seen'
  | 'underpaid'
  | 'authorized'
  | 'paid'
  | 'expired'
  | 'late'
  | 'cancelled'
  | 'refunded';

/** Statuses after which nothing changes for the payer; the page stops listening. */
export const FINAL_STATUSES = ['paid', 'expired', 'cancelled', 'refunded'];

export function phaseOf(p: Payment): Phase {
  switch (p.status) {
    case 'waiting':
      return shownAttempt(p)?.status === 'waiting' ? 'pay' : 'pick';
    case 'detected':
    case 'confirming':
      return 'seen';
    default:
      return p.status as Phase;
  }
}

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
  /** The page's language. */
  locale: Locale;
  /** The language the payer picked on the switcher, carried through the page's forms and links. */
  picked?: Locale | null;
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
export function statusLine(l: Locale, p: Payment, view: 'checkout' | 'pos' = 'checkout'): string {
  const a = shownAttempt(p);
  const phase = phaseOf(p);
  if (view === 'pos' && (phase === 'pick' || phase === 'pay')) return t(l, 'status.pos_waiting');
  switch (phase) {
    case 'pick':
      return t(l, a ? 'status.pick_again' : 'status.pick');
    case 'pay':
      return p.authorization
        ? holdNote(l, p, a!)
        : t(l, 'status.pay', { amount: a!.pay_amount_display, symbol: symbolOf(a!) });
    case 'seen': {
      const progress = confirmationProgress(a);
      return progress ? t(l, 'status.seen_count', progress) : t(l, 'status.seen');
    }
    case 'underpaid':
      return t(l, 'status.underpaid', { amount: missingDisplay(a!), symbol: symbolOf(a!) });
    default:
      return t(l, `status.${phase}`);
  }
}

const symbolOf = (a: Attempt) => a.symbol ?? a.token;

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

/** The time left, as minutes and seconds in the page's digits (pay.js keeps it running, announcing only the end). */
const countdown = (l: Locale, expiresAt: string, now: Date) => {
  const left = Math.max(0, Math.floor((Date.parse(expiresAt) - now.getTime()) / 1000));
  const spoken = t(l, 'send.countdown', { minutes: Math.floor(left / 60), seconds: left % 60 });
  return html`<time class="k-count" datetime="PT${left}S" data-expires="${expiresAt}" data-now="${now.toISOString()}" title="${spoken}">${countdownText(l, left)}</time>`;
};

/** A copyable value: the text plus a button that copies it. */
const copyable = (l: Locale, id: string, label: string, value: string, cls = '') =>
  html`<div class="k-copy"><span class="k-label" id="${id}-l">${label}</span><code class="k-value ${cls}" id="${id}">${value}</code><button type="button" class="k-small" data-copy="${value}" aria-describedby="${id}-l">${t(l, 'send.copy')}</button></div>`;

/** The coin picker: one submit button per coin, grouped by network. Works without JavaScript. */
function picker(ctx: CheckoutContext, heading: boolean): Html {
  const l = ctx.locale;
  const p = ctx.payment;
  const left = MAX_ATTEMPTS - p.attempts.length;
  const groups = new Map<string, CoinOption[]>();
  for (const c of ctx.coins) groups.set(c.networkName, [...(groups.get(c.networkName) ?? []), c]);
  const hidden = ctx.embed
    ? html`<input type="hidden" name="embed" value="1">${ctx.parentOrigin ? html`<input type="hidden" name="origin" value="${ctx.parentOrigin}">` : ''}`
    : '';
  if (left <= 0) return html`<p class="k-note">${t(l, 'pick.used_up', { max: MAX_ATTEMPTS })}</p>`;
  return html`<form method="post" action="/p/${p.id}/attempts" class="k-pick" data-enhance>
${heading ? html`<h2>${t(l, 'pick.heading')}</h2>` : ''}${hidden}${langField(ctx.picked)}
${ctx.coins.length === 0 && (ctx.unpriced ?? []).length === 0 ? html`<p class="k-note">${t(l, 'pick.none')}</p>` : ''}${unpricedNote(l, ctx.unpriced ?? [])}
${[...groups].map(
  ([network, coins]) => html`<fieldset><legend>${network}</legend>
${coins.map(
  (c) =>
    html`<button type="submit" name="token" value="${c.token}" class="k-coin"${c.belowMin ? html` disabled` : ''}><b>${c.symbol}</b><span>${c.name}</span><span class="k-est">${c.belowMin ? t(l, 'pick.below_min') : t(l, 'pick.estimate', { amount: c.estimate, symbol: c.symbol })}</span></button>\n`,
)}</fieldset>
`,
)}<p class="k-hint">${t(l, 'pick.hold')} ${left < MAX_ATTEMPTS ? t(l, 'pick.left', { left }) : ''}</p>
<p class="k-error" role="alert">${ctx.error ?? ''}</p>
</form>`;
}

/** Says which coins are missing from the picker because no price can be fetched, instead of leaving them out silently. */
function unpricedNote(l: Locale, symbols: string[]): Html | string {
  if (symbols.length === 0) return '';
  return html`<p class="k-note" data-unpriced>${t(l, 'pick.unpriced', { coins: list(l, symbols), count: symbols.length })}</p>`;
}

/** What a held payment's payer is asked to authorize, and until when the hold lasts (docs/capture.md). */
function holdNote(l: Locale, p: Payment, a: Attempt): string {
  return t(l, 'hold.note', {
    amount: a.pay_amount_display,
    symbol: symbolOf(a),
    date: moment(l, new Date(p.authorization!.capture_before)),
  });
}

/** The wallet buttons paying `amount` of `a`'s coin (none for a network or coin no longer configured). */
function walletFor(ctx: CheckoutContext, a: Attempt, amount: bigint, hold: WalletChoice['hold']): Html | string {
  const token = ctx.chains.token(ctx.mode, a.token);
  const network = ctx.chains.network(ctx.mode, a.chain);
  if (!network || !token) return '';
  return ctx.walletButtons({
    locale: ctx.locale,
    mode: ctx.mode,
    network,
    token,
    paymentId: ctx.payment.id,
    attemptId: a.id,
    address: a.address,
    amount,
    expiresAt: new Date(a.expires_at),
    hold,
  });
}

/** A held coin choice: what the payer authorizes (no address to send to), the wallet button, the price hold. */
function holdBlock(ctx: CheckoutContext, a: Attempt): Html {
  const l = ctx.locale;
  const p = ctx.payment;
  const wallet = walletFor(ctx, a, BigInt(a.pay_amount), {
    captureBefore: new Date(p.authorization!.capture_before),
    refundBefore: new Date(p.authorization!.refund_before),
  });
  return html`<h2>${t(l, 'hold.heading')}</h2><div class="k-send">
<p class="k-note" data-hold-note>${holdNote(l, p, a)}</p>
${wallet}
<p class="k-error" role="alert" data-wallet-error></p>
<p class="k-timer">${t(l, 'send.held_for')} ${countdown(l, a.expires_at, ctx.now)}</p>
</div>`;
}

/** Address, exact amount, QR code, deep link, wallet buttons and the hold countdown for sending `units` of `a`'s coin. */
async function sendBlock(
  ctx: CheckoutContext,
  a: Attempt,
  units: bigint,
  uri: string | null,
  timerLabel: 'send.held_for' | 'send.rest_within' = 'send.held_for',
): Promise<Html> {
  const l = ctx.locale;
  const token = ctx.chains.token(ctx.mode, a.token);
  const network = ctx.chains.network(ctx.mode, a.chain);
  const amount = token
    ? formatUnits(units, token.decimals)
    : units === BigInt(a.pay_amount)
      ? a.pay_amount_display
      : units.toString();
  const symbol = a.symbol ?? a.token;
  const qr = await qrSvg(uri ?? a.address, t(l, 'send.qr', { amount, symbol, address: a.address }));
  const wallet = walletFor(ctx, a, units, null);
  const networkName = network?.name ?? a.chain;
  return html`<div class="k-send">
<div class="k-network" role="note"><span class="k-label" id="k-network-l">${t(l, 'send.network')}</span><strong class="k-netname" id="k-network" aria-describedby="k-network-l">${networkName}</strong><span class="k-netnote">${t(l, 'send.network_note', { symbol, network: networkName })}</span></div>
${copyable(l, 'k-amount', t(l, 'send.amount', { symbol }), amount, 'k-big')}
${copyable(l, 'k-address', t(l, 'send.address'), a.address, 'k-addr')}
<div class="k-qrbox">${qr}</div>
${uri ? html`<a class="k-btn" href="${uri}">${t(l, 'send.open_wallet')}</a>` : ''}
${wallet}
<p class="k-error" role="alert" data-wallet-error></p>
<p class="k-timer">${t(l, timerLabel)} ${countdown(l, a.expires_at, ctx.now)}</p>
<p class="k-note">${t(l, 'send.exactly_note')}</p>
</div>`;
}

function deposits(l: Locale, a: Attempt | undefined): Html | string {
  if (!a || a.deposits.length === 0) return '';
  const status = (s: string) => (s === 'pending' || s === 'confirmed' || s === 'orphaned' ? t(l, `deposit.${s}`) : s);
  return html`<ul class="k-deps">${a.deposits.map(
    (d) =>
      html`<li>${t(l, 'deposit.line', { amount: d.amount_display, symbol: d.token.split(':')[1]!.toUpperCase(), status: status(d.status) })}${d.explorer_url ? html` · <a href="${d.explorer_url}" target="_blank" rel="noopener noreferrer">${t(l, 'deposit.view')}</a>` : ''}</li>`,
  )}</ul>`;
}

/** How far the confirmations of a detected payment are. */
function confirmationsLine(l: Locale, a: Attempt | undefined): Html | string {
  const progress = confirmationProgress(a);
  return progress ? html`<p class="k-confirms">${t(l, 'confirmations.count', progress)}</p>` : '';
}

/** "0x1234abcd…9f8e": a transaction hash short enough for a phone, the full hash in the link's title. */
const shortHash = (h: string) => (h.length > 20 ? `${h.slice(0, 10)}…${h.slice(-6)}` : h);

/** The paid page's receipt: what was paid, in which coin on which network, the transaction(s), when, and the reference. */
function receipt(ctx: CheckoutContext): Html {
  const l = ctx.locale;
  const p = ctx.payment;
  const a = shownAttempt(p);
  const network = a ? (ctx.chains.network(ctx.mode, a.chain)?.name ?? a.chain) : null;
  const txs = (a?.deposits ?? []).filter((d) => d.status !== 'orphaned' && d.token === a!.token);
  const row = (label: string, value: Html | string) => html`<div><dt>${label}</dt><dd>${value}</dd></div>`;
  return html`<dl class="k-receipt" aria-label="${t(l, 'receipt.label')}">
${row(t(l, 'receipt.amount'), money(l, p.price_amount))}
${a ? row(t(l, 'receipt.paid_with'), t(l, 'receipt.paid_with_value', { amount: a.received_amount_display, symbol: symbolOf(a), network: network! })) : ''}
${txs.map((d) => row(t(l, 'receipt.transaction'), d.explorer_url ? html`<a href="${d.explorer_url}" target="_blank" rel="noopener noreferrer" title="${d.tx_hash}">${shortHash(d.tx_hash)}</a>` : html`<code title="${d.tx_hash}">${shortHash(d.tx_hash)}</code>`))}
${p.paid_at ? row(t(l, 'receipt.date'), moment(l, new Date(p.paid_at))) : ''}
${row(t(l, 'receipt.reference'), p.order_id)}
</dl>`;
}

/** The inside of `<main>` for the payment's current state. */
export async function checkoutMain(ctx: CheckoutContext): Promise<Html> {
  const l = ctx.locale;
  const p = ctx.payment;
  const a = shownAttempt(p);
  const state = (phase: 'expired' | 'cancelled' | 'refunded' | 'late', extra: Html | string = '') =>
    html`<div class="k-state"><h2>${t(l, `${phase}.heading`)}</h2><p>${t(l, `${phase}.text`)}</p>${extra}</div>`;
  switch (phaseOf(p)) {
    case 'pick':
      if (ctx.closed) {
        return html`<div class="k-state"><h2>${t(l, 'closed.heading')}</h2><p>${t(l, 'closed.text', { merchant: ctx.merchantName })}</p></div>`;
      }
      return html`${a ? html`<p class="k-note">${t(l, 'pick.hold_ended', { symbol: symbolOf(a) })}</p>` : ''}${picker(ctx, true)}`;
    case 'pay': {
      if (p.authorization) return holdBlock(ctx, a!);
      const block = await sendBlock(ctx, a!, BigInt(a!.pay_amount), a!.uri);
      const more =
        p.attempts.length < MAX_ATTEMPTS
          ? html`<details class="k-more"><summary>${t(l, 'pick.another')}</summary>${picker(ctx, false)}</details>`
          : '';
      return html`<h2>${t(l, 'send.heading')}</h2>${block}${more}`;
    }
    case 'seen':
      return html`<div class="k-state"><p class="k-icon" aria-hidden="true">⏳</p><h2>${t(l, 'seen.heading')}</h2><p>${t(l, 'seen.text', { amount: a?.received_amount_display ?? '', symbol: a ? symbolOf(a) : '' })}</p>${confirmationsLine(l, a)}${deposits(l, a)}</div>`;
    case 'underpaid': {
      const missing = missingUnits(a!);
      const uri =
        ctx.chains.network(ctx.mode, a!.chain) && ctx.chains.token(ctx.mode, a!.token)
          ? ctx.chains
              .adapter(ctx.mode, a!.chain)
              .paymentUri(ctx.chains.token(ctx.mode, a!.token)!, a!.address, missing)
          : null;
      const symbol = symbolOf(a!);
      return html`<h2>${t(l, 'underpaid.heading')}</h2><p class="k-warn">${t(l, 'underpaid.received', { received: a!.received_amount_display, due: a!.pay_amount_display, symbol })} <strong>${t(l, 'underpaid.missing', { missing: missingDisplay(a!), symbol })}</strong> ${t(l, 'underpaid.send_rest')}</p>${await sendBlock(ctx, a!, missing, uri, 'send.rest_within')}`;
    }
    case 'paid':
      return html`<div class="k-state k-ok"><p class="k-icon" aria-hidden="true">✓</p><h2>${t(l, 'paid.heading')}</h2><p>${t(l, 'paid.text', { amount: money(l, p.price_amount) })}</p>${receipt(ctx)}${
        p.success_url && !ctx.embed
          ? html`<a class="k-btn" href="${p.success_url}" data-success>${t(l, 'paid.continue')}</a>`
          : ''
      }</div>`;
    case 'authorized':
      return html`<div class="k-state k-ok"><p class="k-icon" aria-hidden="true">✓</p><h2>${t(l, 'authorized.heading')}</h2><p>${t(l, 'authorized.text', { date: moment(l, new Date(p.authorization!.capture_before)) })}</p></div>`;
    case 'late':
      return state('late', deposits(l, a));
    case 'expired':
    case 'cancelled':
    case 'refunded':
      return state(phaseOf(p) as 'expired');
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
  const l = ctx.locale;
  const p = ctx.payment;
  const phase = phaseOf(p);
  const back = p.cancel_url
    ? html`<a href="${p.cancel_url}" data-kasse-cancel>${t(l, 'checkout.back', { merchant: ctx.merchantName })}</a>`
    : ctx.embed
      ? html`<button type="button" class="k-link" data-kasse-cancel>${t(l, 'checkout.cancel')}</button>`
      : '';
  const query = `${ctx.embed ? '&embed=1' : ''}${ctx.picked ? `&lang=${ctx.picked}` : ''}`;
  const keep: Record<string, string> = ctx.embed
    ? { embed: '1', ...(ctx.parentOrigin ? { origin: ctx.parentOrigin } : {}) }
    : {};
  const price = money(l, p.price_amount);
  const body = html`<div class="k-card">
<header class="k-head">
<p class="k-merchant">${ctx.merchantName}</p>
<p class="k-price">${price}</p>
<h1 class="k-desc">${p.description ? p.description : t(l, 'checkout.to_merchant', { merchant: ctx.merchantName })}</h1>
</header>
<p id="k-status" class="k-status${quietStatus(p) ? ' k-sr' : ''}" role="status" aria-live="polite">${ctx.closed && phase === 'pick' ? t(l, 'status.closed') : statusLine(l, p)}</p>
<main id="k-main" data-events="/p/${p.id}/events?view=checkout${query}" data-fp="${viewKey(p)}" data-status="${p.status}" data-redirect="${p.success_url ?? ''}">
${await checkoutMain(ctx)}
</main>
<footer class="k-foot">${back}<span class="k-brand">${t(l, 'page.secured')}</span>${switcher(l, `/p/${p.id}`, keep)}</footer>
</div>`;
  return renderPage({
    locale: l,
    title: t(l, 'checkout.title', { amount: price, merchant: ctx.merchantName }),
    body,
    head: noscriptHead(p, phase, ctx.embed),
    rootAttrs: rootAttrs(ctx),
    test: ctx.mode === 'test',
    scripts: ctx.scripts,
    brand: ctx.brand,
  });
}

export interface PosSaleContext {
  locale: Locale;
  picked?: Locale | null;
  payment: Payment;
  mode: Mode;
  linkTitle: string;
  slug: string;
  now: Date;
  brand?: MerchantBrand | null;
}

/** The inside of `<main>` on the POS terminal for a sale: QR of the checkout to scan, then PAID, then next sale. */
export async function posMain(ctx: PosSaleContext): Promise<Html> {
  const l = ctx.locale;
  const p = ctx.payment;
  const amount = money(l, p.price_amount);
  const home = `/l/${ctx.slug}${ctx.picked ? `?lang=${ctx.picked}` : ''}`;
  const next = html`<a class="k-btn k-next" href="${home}" data-autofocus>${t(l, 'pos.next')}</a>`;
  switch (phaseOf(p)) {
    case 'pick':
    case 'pay':
      return html`<p class="k-scan">${t(l, 'pos.scan', { amount })}</p><div class="k-qrbox k-qr-pos">${await qrSvg(p.checkout_url, t(l, 'pos.qr', { amount }))}</div><p class="k-hint">${t(l, 'pos.scan_hint')}</p><a class="k-link" href="${home}">${t(l, 'pos.start_over')}</a>`;
    case 'seen':
      return html`<p class="k-scan">${t(l, 'seen.heading')}</p><p class="k-hint">${t(l, 'pos.seen_hint')}</p>`;
    case 'underpaid':
      return html`<p class="k-scan k-warnbig">${t(l, 'pos.underpaid')}</p><p class="k-hint">${t(l, 'pos.underpaid_hint')}</p>${next}`;
    case 'paid':
      return html`<p class="k-paid">${t(l, 'pos.paid')}</p><p class="k-hint">${t(l, 'pos.received', { amount })}</p>${next}`;
    default:
      return html`<p class="k-scan k-warnbig">${t(l, 'pos.not_paid')}</p><p class="k-hint">${statusLine(l, p)}</p>${next}`;
  }
}

export async function posSalePage(ctx: PosSaleContext): Promise<string> {
  const l = ctx.locale;
  const p = ctx.payment;
  const sale = t(l, 'pos.sale', { order: p.order_id });
  const body = html`<div class="k-card k-pos">
<header class="k-head"><h1 class="k-title">${ctx.linkTitle}</h1><p class="k-price">${money(l, p.price_amount)}</p><p class="k-order">${sale}</p></header>
<p id="k-status" class="k-status${quietStatus(p, 'pos') ? ' k-sr' : ''}" role="status" aria-live="polite">${statusLine(l, p, 'pos')}</p>
<main id="k-main" data-events="/p/${p.id}/events?view=pos&amp;slug=${ctx.slug}${ctx.picked ? `&lang=${ctx.picked}` : ''}" data-fp="${viewKey(p)}" data-status="${p.status}" data-redirect="">
${await posMain(ctx)}
</main>
<footer class="k-foot">${switcher(l)}</footer>
</div>`;
  return renderPage({
    locale: l,
    title: `${sale} · ${ctx.linkTitle}`,
    body,
    test: ctx.mode === 'test',
    brand: ctx.brand,
  });
}
