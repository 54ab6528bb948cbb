/**
 * The layout every Kasse email shares, as a plain-text part and an HTML part built from the same blocks. Callers
 * pass plain strings; every one is escaped in the HTML part (a merchant's name or a customer's text can only become
 * text), and the HTML uses inline styles only (mail clients drop style sheets) and loads nothing from anywhere but
 * the merchant's logo from the checkout host (brand.ts).
 */
import { html, type Html } from '../../core/html.ts';
import { dirOf } from '../../core/i18n/index.ts';
import { accentOf, logoBlock, type MailBrand } from './brand.ts';

export interface EmailContent {
  /** The language the mail is written in (`<html lang>`); English when absent. */
  lang?: string;
  /** First line of the body, also the HTML heading. */
  heading: string;
  /** Paragraphs of plain text. */
  paragraphs: string[];
  /** A call to action: the button in HTML, the bare URL in text. */
  action?: { label: string; url: string };
  /** Label/value rows (amounts, dates, references). */
  details?: Array<[string, string]>;
  /** Paragraphs after the action, in smaller type (why the mail was sent, what to do if unexpected). */
  footer?: string[];
  /** Further links after the footer (e.g. "Manage your subscription"): a plain link in HTML, `label: url` in text. */
  links?: Array<{ label: string; url: string }>;
  /** The merchant's logo and colour in mails to payers and customers. */
  brand?: MailBrand;
}

export interface RenderedEmail {
  text: string;
  html: string;
}

const FONT = "font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif";

export function renderEmail(c: EmailContent): RenderedEmail {
  const text = [
    c.heading,
    '',
    ...c.paragraphs.flatMap((p) => [p, '']),
    ...(c.details && c.details.length > 0 ? [...c.details.map(([k, v]) => `${k}: ${v}`), ''] : []),
    ...(c.action ? [`${c.action.label}: ${c.action.url}`, ''] : []),
    ...(c.footer ?? []).flatMap((p) => [p, '']),
    ...(c.links ?? []).flatMap((l) => [`${l.label}: ${l.url}`, '']),
    '— Kasse',
  ].join('\n');
  const details: Html | string =
    c.details && c.details.length > 0
      ? html`<table role="presentation" style="border-collapse:collapse;margin:0 0 16px">${c.details.map(
          ([k, v]) =>
            html`<tr><td style="padding:4px 16px 4px 0;color:#5b6474">${k}</td><td style="padding:4px 0;font-weight:600">${v}</td></tr>`,
        )}</table>`
      : '';
  const body = html`<!doctype html>
<html lang="${c.lang ?? 'en'}" dir="${dirOf(c.lang ?? 'en')}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${c.heading}</title></head>
<body style="margin:0;padding:24px;background:#f4f5f7;${FONT};color:#1d2330">
<div style="max-width:560px;margin:0 auto;background:#ffffff;border-radius:8px;padding:32px">
${logoBlock(c.brand)}<h1 style="font-size:20px;margin:0 0 16px">${c.heading}</h1>
${c.paragraphs.map((p) => html`<p style="font-size:15px;line-height:1.5;margin:0 0 16px">${p}</p>`)}
${details}${
  c.action
    ? html`<p style="margin:24px 0"><a href="${c.action.url}" style="display:inline-block;background:${accentOf(c.brand)};color:#ffffff;text-decoration:none;padding:12px 20px;border-radius:6px;font-weight:600">${c.action.label}</a></p>
<p style="font-size:13px;color:#5b6474;word-break:break-all;margin:0 0 16px">${c.action.url}</p>`
    : ''
}
${(c.footer ?? []).map((p) => html`<p style="font-size:13px;color:#5b6474;line-height:1.5;margin:0 0 8px">${p}</p>`)}
${(c.links ?? []).map((l) => html`<p style="font-size:13px;margin:0 0 8px"><a href="${l.url}" style="color:${accentOf(c.brand)}">${l.label}</a></p>`)}
</div>
</body></html>
`;
  return { text, html: body.value };
}
