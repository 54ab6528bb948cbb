/**
 * Hold and capture on the dashboard (docs/capture.md): the authorized payments with what can still be captured and
 * until when (`/dashboard/<mode>/holds`), and on a held payment's page its authorization with capture (an amount)
 * and void forms for owners and members. Both actions need the box ticked to confirm, are checked on the server
 * (`payments.write`, CSRF by the router), are written to the audit log by the capture module, and carry a fresh key
 * per rendered form as their Idempotency-Key, so a form posted twice captures or voids once.
 */
import { html, type Html } from '../../../core/html.ts';
import { ApiError, invalid } from '../../../core/errors.ts';
import { parseUnits } from '../../../core/money.ts';
import type { OpenHold } from '../../../modules/capture/index.ts';
import type { Payment } from '../../../modules/payments/index.ts';
import type { Ctx } from '../context.ts';
import { csrfField, errorBox, field, onceField, onceKey, tell, type Told } from '../forms.ts';
import { usd, when } from '../format.ts';
import { done, navigation, sendShell } from '../layout.ts';
import type { Router } from '../routing.ts';
import { paymentPage, paymentSections } from './payments.ts';

const tenant = (ctx: Ctx) => ({ mode: ctx.mode, merchantId: ctx.merchant.id });

const confirmBox = (label: string) =>
  html`<p><label><input type="checkbox" name="confirm" value="yes" required> ${label}</label></p>`;

async function holdSection(ctx: Ctx, p: Payment, told: Told | null, values: Record<string, string>) {
  if (!p.authorization) return '';
  const hold = await ctx.kasse.capture.openHold(tenant(ctx), p.id);
  const a = p.authorization;
  const facts = html`<p>${usd(a.captured_usd_cents)} of ${usd(a.amount_usd_cents)} captured${a.voided ? ' · the rest was voided (returned to the payer)' : ''}.</p>`;
  if (!hold)
    return html`<section class="d-panel" id="authorization"><h2>Authorization</h2>${facts}<p class="d-muted">Nothing can be captured now.</p></section>`;
  const base = `/dashboard/${ctx.mode}/payments/${p.id}`;
  const write = ctx.can('payments.write');
  const captureForm =
    write && hold.capturableCents > 0
      ? html`<form method="post" action="${base}/capture" class="d-form">${csrfField(ctx.csrf)}${onceField()}
${field({ name: 'amount_usd', label: `Amount to capture in USD (at most ${usd(hold.capturableCents)})`, value: values.amount_usd ?? (hold.capturableCents / 100).toFixed(2), required: true, told, attrs: html` inputmode="decimal" autocomplete="off"` })}
${confirmBox('I confirm: this moves the amount from the payer to me.')}
<button type="submit" class="d-btn">Capture</button></form>`
      : '';
  // A void waits for captures in flight (the escrow's void would release what they take).
  const voidForm =
    write && hold.voidable
      ? html`<form method="post" action="${base}/void" class="d-form">${csrfField(ctx.csrf)}${onceField()}
${confirmBox('I confirm: what is not captured goes back to the payer, and nothing more can be captured.')}
<button type="submit" class="d-btn d-danger">Void the rest</button></form>`
      : '';
  return html`<section class="d-panel" id="authorization"><h2>Authorization</h2>${facts}
<p data-capturable><strong>${usd(hold.capturableCents)}</strong> can still be captured until ${when(hold.captureBefore.toISOString())}${hold.voiding ? ' (a void is on its way)' : ''}.</p>
${errorBox(told)}${captureForm}${voidForm}</section>`;
}

paymentSections.push(holdSection);
// Right after Payments in the navigation: the payments that wait for the merchant.
navigation.splice(navigation.findIndex((n) => n.path === '/payments') + 1, 0, {
  path: '/holds',
  label: 'Holds',
  permission: 'read',
});

function holdsTable(ctx: Ctx, holds: OpenHold[]): Html {
  if (holds.length === 0) return html`<p class="d-empty">No authorized payments wait for a capture.</p>`;
  return html`<table class="d-table"><thead><tr><th>Order</th><th class="d-num">Can be captured</th><th class="d-num">Captured</th><th>Until</th></tr></thead><tbody>${holds.map(
    (h) =>
      html`<tr><td data-label="Order"><a href="/dashboard/${ctx.mode}/payments/${h.paymentId}">${h.orderId}</a></td><td data-label="Can be captured" class="d-num">${usd(h.capturableCents)}</td><td data-label="Captured" class="d-num">${usd(h.capturedCents)}</td><td data-label="Until">${when(h.captureBefore.toISOString())}</td></tr>`,
  )}</tbody></table>`;
}

/** A refused capture or void says why in the capture module's words (they name what remains, and until when). */
function stateSaid(err: unknown): Record<string, string> {
  return err instanceof ApiError && err.code === 'invalid_state'
    ? { invalid_state: err.message, amount_usd_cents: err.message }
    : {};
}

export function holdPages(r: Router): void {
  r.page('/holds', 'read', async (ctx) => {
    const holds = await ctx.kasse.capture.openHolds(tenant(ctx));
    return sendShell(ctx, null, {
      title: 'Authorized payments',
      active: '/holds',
      body: html`<section class="d-panel"><p>Payments whose payer authorized a hold: capture them (in parts if you like) before the date shown, or void them; what is not captured by then goes back to the payer.</p>${holdsTable(ctx, holds)}</section>`,
    });
  });

  r.action('/payments/:id/capture', 'payments.write', async (ctx, form, p) => {
    try {
      if (form.confirm !== 'yes') throw invalid('Tick the box to confirm the capture.', 'confirm');
      let cents: bigint;
      try {
        cents = parseUnits((form.amount_usd ?? '').trim(), 2);
      } catch {
        throw invalid('Enter the amount in US dollars, e.g. 12.50.', 'amount_usd');
      }
      if (cents <= 0n) throw invalid('Enter an amount above zero.', 'amount_usd');
      await ctx.kasse.capture.capture(
        tenant(ctx),
        p.id!,
        { amount_usd_cents: Number(cents) },
        onceKey(form),
        ctx.actor,
      );
      return done(ctx.reply, `/dashboard/${ctx.mode}/payments/${p.id}`, 'captured');
    } catch (err) {
      const told = tell(err, stateSaid(err));
      return paymentPage(ctx, p.id!, told, form, told.status);
    }
  });

  r.action('/payments/:id/void', 'payments.write', async (ctx, form, p) => {
    try {
      if (form.confirm !== 'yes') throw invalid('Tick the box to confirm the void.', 'confirm');
      await ctx.kasse.capture.void(tenant(ctx), p.id!, onceKey(form), ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/payments/${p.id}`, 'voided');
    } catch (err) {
      const told = tell(err, stateSaid(err));
      return paymentPage(ctx, p.id!, told, form, told.status);
    }
  });
}
