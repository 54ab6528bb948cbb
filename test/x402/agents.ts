/**
 * x402 on both sides with the official packages, unchanged: a merchant's API protected by the official middleware
 * (`@x402/express` or `@x402/hono`, `x402ResourceServer`, `ExactEvmScheme` of `@x402/evm/exact/server`) that uses
 * Kasse as its facilitator through `HTTPFacilitatorClient` (the API key as Bearer via `createAuthHeaders`), and
 * agents paying with `wrapFetchWithPayment` (`@x402/fetch`) and a viem account, or one `PAYMENT-SIGNATURE` the
 * official client made, sent as often as a test needs.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { RouteConfig } from '@x402/core/server';
import type { Price } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmClient } from '@x402/evm/exact/client';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { bazaarResourceServerExtension } from '@x402/extensions/bazaar';
import { appendPaymentIdentifierToExtensions, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import { wrapFetchWithPayment } from '@x402/fetch';
import { paymentMiddleware as honoPaymentMiddleware, x402ResourceServer as HonoResourceServer } from '@x402/hono';
import express from 'express';
import { Hono } from 'hono';
import type { LocalAccount } from 'viem';
import { Kasse } from '../../sdk/src/index.ts';

export interface Shop {
  url: string;
  close(): Promise<void>;
}

export interface ShopOptions {
  apiBase: string;
  key: string;
  network: `${string}:${string}`;
  payTo: string;
  price: Price;
  /** Extensions the route declares (`payment-identifier`, `bazaar`, …), as the extensions' helpers make them. */
  extensions?: Record<string, unknown>;
}

/** The route `GET /weather` costs `price` on `network`, paid to `payTo`. */
function weatherRoute(o: ShopOptions): RouteConfig {
  return {
    accepts: { scheme: 'exact', price: o.price, network: o.network, payTo: o.payTo },
    description: 'Weather in Kochi',
    mimeType: 'application/json',
    ...(o.extensions ? { extensions: o.extensions } : {}),
  };
}

/** The SDK's helper gives the facilitator config (docs/x402.md). */
const facilitatorOf = (o: ShopOptions) =>
  new HTTPFacilitatorClient(new Kasse(o.key, { baseUrl: o.apiBase }).x402.facilitator());

/** An Express API whose `GET /weather` costs `price` on `network`, paid to `payTo`, with Kasse as facilitator. */
export async function startShop(opts: ShopOptions): Promise<Shop> {
  const server = new x402ResourceServer(facilitatorOf(opts)).register(opts.network, new ExactEvmScheme());
  const app = express();
  app.use(paymentMiddleware({ 'GET /weather': weatherRoute(opts) }, server));
  app.get('/weather', (_req, res) => {
    res.json({ city: 'Kochi', sky: 'rain' });
  });
  const http: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => http.close(() => resolve())),
  };
}

/**
 * The same API on Hono with `@x402/hono`; with `bazaar` the resource server registers the bazaar extension (the
 * route's discovery declaration is then enriched as the official middleware does it).
 */
export async function startHonoShop(opts: ShopOptions & { bazaar?: boolean }): Promise<Shop> {
  const server = new HonoResourceServer(facilitatorOf(opts)).register(opts.network, new ExactEvmScheme());
  if (opts.bazaar) server.registerExtension(bazaarResourceServerExtension);
  const app = new Hono();
  app.use(honoPaymentMiddleware({ 'GET /weather': weatherRoute(opts) }, server));
  app.get('/weather', (c) => c.json({ city: 'Kochi', sky: 'rain' }));
  const http = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => http.close(() => resolve())),
  };
}

/** How an agent spends: which non-default tokens it accepts, up to `maxUsd` a payment ($1 unless told). */
export interface AgentOptions {
  /** Any token (`allowedAssets: true`), or the listed ones (the spend controls' own list). */
  anyAsset?: boolean;
  allowedAssets?: Array<{ network: `${string}:${string}`; asset: string; maxAmountPerPayment?: string }>;
  maxUsd?: string;
  /** The fetch its requests go through. */
  base?: typeof fetch;
  /** A payment identifier for every payment it makes (the `payment-identifier` extension's client helper). */
  paymentId?: () => string;
}

/** The official client for `account`, with the agent's spend controls and extensions. */
export function agentClient(account: LocalAccount, o: AgentOptions = {}): x402Client {
  const client = new x402Client().register('eip155:*', new ExactEvmClient(account));
  client.setSpendControls({
    ...(o.anyAsset ? { allowedAssets: true as const } : o.allowedAssets ? { allowedAssets: o.allowedAssets } : {}),
    ...(o.maxUsd ? { maxAmountPerPayment: o.maxUsd } : {}),
  });
  if (o.paymentId) {
    const next = o.paymentId;
    client.registerExtension({
      key: PAYMENT_IDENTIFIER,
      enrichPaymentPayload: async (payload) => ({
        ...payload,
        extensions: appendPaymentIdentifierToExtensions(structuredClone(payload.extensions ?? {}), next()),
      }),
    });
  }
  return client;
}

/** An agent's fetch that pays x402 challenges with `account`. */
export function agentFetch(account: LocalAccount, o: AgentOptions = {}): typeof fetch {
  return wrapFetchWithPayment(o.base ?? fetch, agentClient(account, o)) as typeof fetch;
}

/** One `PAYMENT-SIGNATURE` the official client makes for `url`'s 402 answer, to send as often as the test needs. */
export async function paymentSignature(account: LocalAccount, url: string, o: AgentOptions = {}): Promise<string> {
  const unpaid = await fetch(url);
  if (unpaid.status !== 402) throw new Error(`${url} answered ${unpaid.status}, not 402`);
  const required = decodePaymentRequiredHeader(unpaid.headers.get('payment-required')!);
  return encodePaymentSignatureHeader(await agentClient(account, o).createPaymentPayload(required));
}
