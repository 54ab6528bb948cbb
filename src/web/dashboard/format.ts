/** How values read on the dashboard: dollars, moments (shown in the browser's time zone by the script), statuses. */
import { html, type Html } from '../../core/html.ts';
import { formatCents } from '../../core/money.ts';

/** "$1,234.50". */
export const usd = (cents: number | bigint) => `$${formatCents(cents).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;

/** "2026-03-01 12:00 UTC"; the script shows it in the browser's time zone. */
export function when(iso: string | Date | null): Html | string {
  if (iso === null) return '—';
  const d = typeof iso === 'string' ? new Date(iso) : iso;
  const text = `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return html`<time datetime="${d.toISOString()}" data-local>${text}</time>`;
}

export function badge(status: string): Html {
  return html`<span class="d-badge d-s-${status.replace(/[^a-z_]/g, '')}">${status.replace(/_/g, ' ')}</span>`;
}
