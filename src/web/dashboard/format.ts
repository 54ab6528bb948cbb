/**
 * How values read on the dashboard: dollars, coin amounts, moments (shown in the browser's time zone by the script),
 * statuses, and long addresses that may wrap.
 */
import { html, type Html } from '../../core/html.ts';
import { formatCents, readableAmount } from '../../core/money.ts';

/** "$1,234.50". */
export const usd = (cents: number | bigint) => `$${formatCents(cents).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;

/** "2026-03-01 12:00 UTC"; the script shows it in the browser's time zone. */
export function when(iso: string | Date | null): Html | string {
  if (iso === null) return '—';
  const d = typeof iso === 'string' ? new Date(iso) : iso;
  const text = `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return html`<time datetime="${d.toISOString()}" data-local>${text}</time>`;
}

/**
 * A coin amount as it reads (`readableAmount`: 6 significant digits, "≈" when rounded), followed by `unit` ("ETH",
 * "ETH on Base Sepolia"). A rounded amount's exact figure is a click away (a disclosure, so it works by touch, by
 * keyboard and without the script) and in its tooltip.
 */
export function amount(exact: string, unit = ''): Html {
  const read = readableAmount(exact);
  const after = unit ? ` ${unit}` : '';
  if (read === exact) return html`${exact}${after}`;
  return html`<details class="d-amt"><summary title="Exactly ${exact}${after}">${read}${after}</summary><span class="d-exact">exactly <span class="d-mono">${exact}</span></span></details>`;
}

export function badge(status: string): Html {
  return html`<span class="d-badge d-s-${status.replace(/[^a-z_]/g, '')}">${status.replace(/_/g, ' ')}</span>`;
}

/**
 * Text without spaces that may be longer than its column (an email address, a URL): it may wrap after `@`, `.`, `/`,
 * `-` and `_`, never inside a word.
 */
export function wrapAt(text: string): Html {
  return html`${text.split(/(?<=[@./_-])/).map((part, i) => (i === 0 ? part : html`<wbr>${part}`))}`;
}
