/**
 * The chain families' additions to the hosted checkout (`CheckoutExtension`, chains/plugin.ts), served generically:
 * each family's script as `/assets/<family>.js` on every checkout page, its wallet buttons rendered (hidden, for the
 * script to reveal) in the payment block, and its endpoints as `POST /p/<payment_id>/<path>` — no key, a strict JSON
 * body, a per-client-address rate limit (429 `rate_limited`), and the Error body for every refusal.
 */
import { Type } from 'typebox';
import type { WalletChoice } from '../chains/plugin.ts';
import { ApiError } from '../core/errors.ts';
import { escapeHtml } from '../core/html.ts';
import { ID_PATTERNS } from '../core/ids.ts';
import type { Kasse } from '../kasse.ts';
import { addScript } from './assets.ts';
import { html, raw, type Html } from './page.ts';
import type { CheckoutRoute } from './routes.ts';

const DATA_NAME = /^[a-z][a-z0-9-]*$/;

/** The asset names of the families' checkout scripts, in family order. */
export function checkoutScripts(kasse: Kasse): string[] {
  return kasse.families.flatMap(({ family, loaded }) => (loaded.checkout?.script ? [`${family.name}.js`] : []));
}

/** The wallet buttons the network's family offers for a coin choice, as hidden buttons. */
export function walletButtons(kasse: Kasse, choice: WalletChoice): Html {
  const ext = kasse.families.find((f) => f.family.name === choice.network.family)?.loaded.checkout;
  const buttons = ext?.walletButtons?.(choice) ?? [];
  return html`${buttons.map((b) => {
    const attrs = Object.entries(b.data).map(([k, v]) => {
      if (!DATA_NAME.test(k)) throw new Error(`wallet button attribute data-${k} is not a valid name`);
      return ` data-${k}="${escapeHtml(v)}"`;
    });
    return html`<button type="button" class="k-btn k-alt"${raw(attrs.join(''))} hidden>${b.label}</button>`;
  })}`;
}

const extensionRoutes: CheckoutRoute = async (app, { kasse }) => {
  for (const { family, loaded } of kasse.families) {
    const ext = loaded.checkout;
    if (!ext) continue;
    if (ext.script) addScript(`${family.name}.js`, ext.script);
    for (const e of ext.endpoints ?? []) {
      app.post<{ Params: { id: string }; Body: never }>(
        `/p/:id/${e.path}`,
        { schema: { params: Type.Object({ id: Type.String({ pattern: ID_PATTERNS.pay }) }), body: e.body } },
        async (req, reply) => {
          const rate = await kasse.rateLimiter.take(`${e.path}:${req.ip}`, e.limit.perMinute);
          if (!rate.allowed)
            throw new ApiError('rate_limited', e.limit.message(rate.resetSeconds), null, {
              'Retry-After': String(rate.resetSeconds),
            });
          return reply.code(e.status).send(await e.handle(req.params.id, req.body as never));
        },
      );
    }
  }
};

export default extensionRoutes;
