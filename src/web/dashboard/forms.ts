/**
 * Forms on the dashboard: the CSRF field, the once-only key of a form that moves money, one-button action forms, labelled inputs and selects that mark the field
 * that failed, the second-factor code field, and how an error is told to a person.
 *
 * Errors: a form that fails answers with the status the API would have used and a sentence written for the person
 * at the keyboard, with the API's error code beside it (`invalid_state`, …) — never the API's raw message.
 */
import { randomUUID } from 'node:crypto';
import { ApiError, type ErrorCode } from '../../core/errors.ts';
import { html, type Html } from '../../core/html.ts';
import { type Ctx, FormRefused } from './context.ts';

export function csrfField(token: string): Html {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}

/**
 * A fresh key in each rendered form whose action must happen once (a capture, a void): posted twice — a double
 * click, a resent form — it is the action's Idempotency-Key, so the second post answers the first's answer.
 */
export function onceField(): Html {
  return html`<input type="hidden" name="once" value="dash_${randomUUID()}">`;
}

/** The key `onceField` put in the posted form; undefined when it carries none. */
export const onceKey = (form: Record<string, string | undefined>): string | undefined => form.once || undefined;

/** A small form that posts one action (with the CSRF token). */
export function actionForm(
  ctx: Pick<Ctx, 'csrf'>,
  action: string,
  label: string,
  opts: { danger?: boolean; fields?: Html } = {},
): Html {
  return html`<form method="post" action="${action}" class="d-inline">${csrfField(ctx.csrf)}${opts.fields ?? ''}<button type="submit" class="d-btn${opts.danger ? ' d-danger' : ' d-secondary'}">${label}</button></form>`;
}

const GENERIC: Partial<Record<ErrorCode, string>> = {
  invalid_request: 'Something in the form is not right; check the highlighted field.',
  not_found: 'That item does not exist, or it belongs to another account or mode.',
  invalid_state: 'That cannot be done now: the item is not in a state that allows it. Reload to see its latest state.',
  rate_limited: 'Too many attempts. Wait a moment and try again.',
  price_unavailable: 'There is no current price for that coin. Try again shortly.',
  chain_paused: 'That network is paused right now.',
  amount_too_small: 'The amount is below the minimum for that coin.',
  too_many_attempts: 'This payment already has the most coin choices it can have.',
  idempotency_conflict: 'This request conflicts with an earlier one.',
  service_unavailable: 'The service is unavailable right now. Try again shortly.',
};

/** The hints of a list page's refusals (tell): its page link, and its date filters where it has them. */
export const PAGE_HINT = { cursor: 'That page link is not valid; start from the first page.' } as const;
export const DATE_HINTS = { from: 'Use a date like 2026-03-01.', to: 'Use a date like 2026-03-01.' } as const;

/** What to tell a person about an error: our sentence, the API's code, the field to mark. */
export interface Told {
  status: number;
  code: string;
  message: string;
  field: string | null;
}

/**
 * Turns an error into words for the dashboard. `hints` give the sentence for an `invalid_request` on a field (param →
 * text); messages of the dashboard's own services (sign-in, team, settings), which are written for people, pass
 * `own: true` and are shown as they are unless a hint names the field. Anything that is not an ApiError is rethrown (a 500 with a request id).
 */
export function tell(err: unknown, hints: Record<string, string> = {}, own = false): Told {
  if (!(err instanceof ApiError)) throw err;
  const field = err.param;
  const hint = field !== null ? hints[field] : undefined;
  const message =
    hint ?? (own ? err.message : (hints[err.code] ?? GENERIC[err.code] ?? 'That did not work. Try again.'));
  // A form refused for its CSRF token or origin answers 403 wherever it was sent (docs/dashboard.md).
  return { status: err instanceof FormRefused ? 403 : err.status, code: err.code, message, field };
}

/** What `load` finds, or null when the API refuses it (no such object here): the page answers 404; other errors throw. */
export async function found<T>(load: () => Promise<T>): Promise<T | null> {
  try {
    return await load();
  } catch (err) {
    tell(err);
    return null;
  }
}

export function errorBox(told: Told | null): Html | string {
  if (!told) return '';
  return html`<div class="d-error" role="alert"><p>${told.message}</p><p class="d-code">Error <code>${told.code}</code>${told.field ? html` on <code>${told.field}</code>` : ''}</p></div>`;
}

/** A labelled input; `told` marks it when its field failed. */
export function field(o: {
  name: string;
  label: string;
  value?: string | number | null;
  type?: string;
  required?: boolean;
  hint?: string;
  told?: Told | null;
  attrs?: Html;
}): Html {
  const id = `f-${o.name}`;
  const bad = o.told?.field === o.name;
  return html`<div class="d-field${bad ? ' d-bad' : ''}"><label for="${id}">${o.label}</label><input id="${id}" name="${o.name}" type="${o.type ?? 'text'}"${o.value !== undefined && o.value !== null ? html` value="${String(o.value)}"` : ''}${o.required ? html` required` : ''}${bad ? html` aria-invalid="true"` : ''}${o.hint ? html` aria-describedby="${id}-h"` : ''}${o.attrs ?? ''}>${o.hint ? html`<p class="d-hint" id="${id}-h">${o.hint}</p>` : ''}</div>`;
}

export function select(o: {
  name: string;
  label: string;
  options: Array<[string, string]>;
  value?: string | null;
  told?: Told | null;
  hint?: string;
}): Html {
  const id = `f-${o.name}`;
  return html`<div class="d-field${o.told?.field === o.name ? ' d-bad' : ''}"><label for="${id}">${o.label}</label><select id="${id}" name="${o.name}"${o.hint ? html` aria-describedby="${id}-h"` : ''}>${o.options.map(
    ([v, l]) => html`<option value="${v}"${v === (o.value ?? '') ? html` selected` : ''}>${l}</option>`,
  )}</select>${o.hint ? html`<p class="d-hint" id="${id}-h">${o.hint}</p>` : ''}</div>`;
}

/** The field for the person's current TOTP code, asked before a sensitive action (rolling a key, approving). */
export function codeField(told: Told | null, name = 'code'): Html {
  return field({
    name,
    label: 'Your current 6-digit code',
    required: true,
    told,
    attrs: html` autocomplete="one-time-code" inputmode="numeric" maxlength="7"`,
  });
}
